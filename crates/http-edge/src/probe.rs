//! Probes (`/health`, `/health/ready`): an answer whose status says whether the instance is
//! fit (200) or not (503), with the same JSON shape either way and both documented; and the
//! bounded database check they share.

use std::collections::BTreeMap;
use std::time::Duration;

use actix_web::body::BoxBody;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, Responder};
use apistos::paths::{MediaType, Response, Responses};
use apistos::reference_or::ReferenceOr;
use apistos::{ApiComponent, ApistosSchema, OpenApiVersion, VersionSpecificSchema};
use serde::Serialize;

use crate::db::Db;

/// What a probe's answer says in OpenAPI for 200 and for 503.
pub trait ProbeDoc {
    const OK: &'static str;
    const UNAVAILABLE: &'static str;
}

/// 200 when `ok`, else 503, with the same JSON shape.
pub struct Probe<T> {
    pub ok: bool,
    pub body: T,
}

impl<T: Serialize> Responder for Probe<T> {
    type Body = BoxBody;
    fn respond_to(self, _: &HttpRequest) -> HttpResponse {
        let status = if self.ok {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        HttpResponse::build(status).json(self.body)
    }
}

impl<T: ApiComponent + ProbeDoc> ApiComponent for Probe<T> {
    fn child_schemas(v: OpenApiVersion) -> Vec<(String, ReferenceOr<ApistosSchema>)> {
        T::child_schemas(v)
    }
    fn schema(v: OpenApiVersion) -> Option<(String, ReferenceOr<ApistosSchema>)> {
        T::schema(v)
    }
    fn responses(v: OpenApiVersion, _: Option<String>, _: Option<String>) -> Option<Responses> {
        let (name, _) = T::schema(v)?;
        let response = |description: &str| {
            let schema = match v {
                OpenApiVersion::OAS3_0 => VersionSpecificSchema::OAS3_0(ReferenceOr::Reference {
                    _ref: format!("#/components/schemas/{name}"),
                }),
                OpenApiVersion::OAS3_1 => VersionSpecificSchema::OAS3_1(
                    T::schema(v)
                        .and_then(|(_, s)| match s {
                            ReferenceOr::Object(o) => Some(o),
                            ReferenceOr::Reference { .. } => None,
                        })
                        .unwrap_or_default(),
                ),
            };
            ReferenceOr::Object(Response {
                description: description.to_owned(),
                content: BTreeMap::from([(
                    "application/json".to_owned(),
                    MediaType {
                        schema: Some(schema),
                        ..Default::default()
                    },
                )]),
                ..Default::default()
            })
        };
        Some(Responses {
            responses: BTreeMap::from([
                ("200".to_owned(), response(T::OK)),
                ("503".to_owned(), response(T::UNAVAILABLE)),
            ]),
            ..Default::default()
        })
    }
}

/// Whether the database would take a write now (within `within`), logged when not.
pub async fn database_ok(db: &Db, within: Duration) -> bool {
    match db.check(within).await {
        Ok(()) => true,
        Err(e) => {
            log::warn!("health: the database would refuse writes: {e}");
            false
        }
    }
}
