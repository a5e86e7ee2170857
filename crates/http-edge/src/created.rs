//! [`CreatedAt`]: a 201 whose body is what a write made, with the resource's `ETag` by
//! sequence (ready for the `If-Match` of the next write that must follow this one), a
//! `Location` when the write made an addressable resource, and `Idempotent-Replayed: true` on a
//! replayed answer.

use actix_web::body::BoxBody;
use actix_web::{HttpRequest, HttpResponse, Responder};
use apistos::actix::CreatedJson;
use apistos::paths::{RequestBody, Responses};
use apistos::reference_or::ReferenceOr;
use apistos::{ApiComponent, ApistosSchema, OpenApiVersion};
use schemars::JsonSchema;
use serde::Serialize;

use apistos::schemars;

pub struct CreatedAt<T> {
    pub body: T,
    /// The resource's sequence after the write: its `ETag` is `"N"`.
    pub sequence: i64,
    pub location: Option<String>,
    pub replayed: bool,
}

impl<T: Serialize> Responder for CreatedAt<T> {
    type Body = BoxBody;

    fn respond_to(self, _: &HttpRequest) -> HttpResponse {
        let mut res = HttpResponse::Created();
        if let Some(location) = self.location {
            res.insert_header(("Location", location));
        }
        if self.replayed {
            res.insert_header((crate::idempotent::REPLAYED, "true"));
        }
        res.insert_header((
            actix_web::http::header::ETAG,
            crate::conditional::sequence_tag(self.sequence),
        ));
        res.json(self.body)
    }
}

impl<T: Serialize + JsonSchema + ApiComponent> ApiComponent for CreatedAt<T> {
    fn child_schemas(v: OpenApiVersion) -> Vec<(String, ReferenceOr<ApistosSchema>)> {
        <CreatedJson<T> as ApiComponent>::child_schemas(v)
    }
    fn raw_schema(v: OpenApiVersion) -> Option<ReferenceOr<ApistosSchema>> {
        <CreatedJson<T> as ApiComponent>::raw_schema(v)
    }
    fn schema(v: OpenApiVersion) -> Option<(String, ReferenceOr<ApistosSchema>)> {
        <CreatedJson<T> as ApiComponent>::schema(v)
    }
    fn request_body(_: OpenApiVersion, _: Option<String>) -> Option<RequestBody> {
        None
    }
    fn responses(
        v: OpenApiVersion,
        content_type: Option<String>,
        description: Option<String>,
    ) -> Option<Responses> {
        let created = <CreatedJson<T> as ApiComponent>::responses(v, content_type, description)?;
        let tag = crate::answers::header(
            "The resource's ETag as of this write (`\"N\"`, its sequence): the If-Match of a \
             next write that must follow this one.",
            true,
            serde_json::json!({"type": "string"}),
            v,
        );
        Some(crate::answers::with_header(
            crate::idempotent::with_replayed_header(created, v),
            "ETag",
            &tag,
        ))
    }
}
