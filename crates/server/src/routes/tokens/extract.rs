//! The token routes' own extractors: the acting user's header and the raw path segments, read
//! the way the specification says (the domain decides what they mean).

use std::future::{Ready, ready};
use std::marker::PhantomData;

use actix_web::dev::Payload;
use actix_web::web::Path;
use actix_web::{FromRequest, HttpRequest};
use apistos::paths::{Parameter, RequestBody};
use apistos::reference_or::ReferenceOr;
use apistos::{ApiComponent, ApistosSchema, OpenApiVersion};

use crate::error::ApiError;
use crate::extract::{HeaderDoc, RawHeader};

pub const USER_ID_HEADER: &str = "X-User-Id";

pub struct ActingUserDoc;

impl HeaderDoc for ActingUserDoc {
    const NAME: &'static str = USER_ID_HEADER;
    const REQUIRED: bool = true;
    const DESCRIPTION: &'static str = "The acting user's id; must equal the userId in the path. \
        Missing or not an integer: 401 `unauthorized`.";
    fn schema() -> serde_json::Value {
        serde_json::json!({"type": "integer", "format": "int64"})
    }
}

/// The raw `X-User-Id` header; the domain decides what an acceptable value is (401 otherwise).
pub type ActingUser = RawHeader<ActingUserDoc>;

pub fn actor_id(actor: &ActingUser) -> Result<i64, ApiError> {
    Ok(tokens::parse_actor(actor.value())?)
}

/// The raw path segments: `userId` (not numeric → 0, as the specification says) and, on
/// revoke, `tokenId` (not an integer → no such token). `T` documents them.
pub struct TokenPath<T> {
    pub user_id: i64,
    pub token_id: Option<i64>,
    _doc: PhantomData<T>,
}

impl<T: 'static> FromRequest for TokenPath<T> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let info = req.match_info();
        ready(Ok(TokenPath {
            user_id: tokens::parse_path_id(info.get("userId").unwrap_or("")),
            token_id: info.get("tokenId").and_then(|s| s.parse::<i64>().ok()),
            _doc: PhantomData,
        }))
    }
}

impl<T: ApiComponent> ApiComponent for TokenPath<T> {
    fn child_schemas(_: OpenApiVersion) -> Vec<(String, ReferenceOr<ApistosSchema>)> {
        vec![]
    }
    fn raw_schema(v: OpenApiVersion) -> Option<ReferenceOr<ApistosSchema>> {
        T::raw_schema(v)
    }
    fn schema(_: OpenApiVersion) -> Option<(String, ReferenceOr<ApistosSchema>)> {
        None
    }
    fn request_body(_: OpenApiVersion, _: Option<String>) -> Option<RequestBody> {
        None
    }
    fn parameters(v: OpenApiVersion, description: Option<String>) -> Vec<Parameter> {
        <Path<T> as ApiComponent>::parameters(v, description)
    }
}
