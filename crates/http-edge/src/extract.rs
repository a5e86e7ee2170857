//! Extractors that answer in problem details: a JSON object body (415/413/422 decided here) and
//! raw query values (so "not an integer" can be told from "out of range" by the domain rules).

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::error::PayloadError;
use actix_web::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use actix_web::{FromRequest, HttpRequest, web};
use apistos::paths::{Parameter, ParameterDefinition, ParameterIn, ParameterStyle, RequestBody};
use apistos::reference_or::ReferenceOr;
use apistos::{ApiComponent, ApistosSchema, OpenApiVersion};
use futures_util::StreamExt;
use problem_details::{FieldError, FieldErrorCode, Problem, Slug};
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::middleware::limits::{is_deadline, is_json};
use crate::middleware::problems::too_large;

/// Documents an extractor in OpenAPI exactly as `$like`: for extractors that read the request
/// themselves (to answer the spec's errors) but take the same parameters or body as `$like`.
#[macro_export]
macro_rules! document_as {
    ($ty:ty => $like:ty $(, for $t:ident)?) => {
        impl$(<$t: apistos::ApiComponent>)? apistos::ApiComponent for $ty {
            fn required() -> bool {
                <$like as apistos::ApiComponent>::required()
            }
            fn child_schemas(
                v: apistos::OpenApiVersion,
            ) -> Vec<(String, apistos::reference_or::ReferenceOr<apistos::ApistosSchema>)> {
                <$like as apistos::ApiComponent>::child_schemas(v)
            }
            fn raw_schema(
                v: apistos::OpenApiVersion,
            ) -> Option<apistos::reference_or::ReferenceOr<apistos::ApistosSchema>> {
                <$like as apistos::ApiComponent>::raw_schema(v)
            }
            fn schema(
                v: apistos::OpenApiVersion,
            ) -> Option<(String, apistos::reference_or::ReferenceOr<apistos::ApistosSchema>)> {
                <$like as apistos::ApiComponent>::schema(v)
            }
            fn request_body(
                v: apistos::OpenApiVersion,
                description: Option<String>,
            ) -> Option<apistos::paths::RequestBody> {
                <$like as apistos::ApiComponent>::request_body(v, description)
            }
            fn parameters(
                v: apistos::OpenApiVersion,
                description: Option<String>,
            ) -> Vec<apistos::paths::Parameter> {
                <$like as apistos::ApiComponent>::parameters(v, description)
            }
            fn responses(
                v: apistos::OpenApiVersion,
                content_type: Option<String>,
                description: Option<String>,
            ) -> Option<apistos::paths::Responses> {
                <$like as apistos::ApiComponent>::responses(v, content_type, description)
            }
        }
    };
}

/// The body as a JSON object. `T` is the documented request schema only: the domain crate
/// validates the members itself, so every invalid field is reported at once.
pub struct JsonObject<T> {
    pub object: Map<String, Value>,
    _doc: PhantomData<T>,
}

impl<T> std::ops::Deref for JsonObject<T> {
    type Target = Map<String, Value>;
    fn deref(&self) -> &Self::Target {
        &self.object
    }
}

/// Checks the media type of a body that is there. A non-empty body without a JSON type never
/// gets this far (`middleware::limits`); an empty one with another declared type is 415 here.
pub fn check_content_type(req: &HttpRequest) -> Result<(), ApiError> {
    let declared = req.headers().get(CONTENT_TYPE);
    if declared.is_none() || is_json(declared.and_then(|v| v.to_str().ok())) {
        Ok(())
    } else {
        Err(ApiError::new(Problem::new(
            Slug::UnsupportedMediaType,
            "The request body must be sent with Content-Type: application/json.",
        )))
    }
}

pub fn body_error(message: &str) -> ApiError {
    ApiError::new(Problem::validation(vec![FieldError::new(
        "body",
        FieldErrorCode::Invalid,
        message,
    )]))
}

/// Reads the body as sent, within `MAX_BODY_BYTES` ([`crate::Edge`]'s limits): 413 as soon as it grows
/// past the cap (chunked bodies too), 408 when it stops arriving before the request's
/// deadline. Never decoded: a compressed body was refused before it was read.
pub async fn read_body(req: &HttpRequest, payload: &mut Payload) -> Result<web::Bytes, ApiError> {
    let limit = crate::Edge::of(req)?.limits.max_body_bytes;
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = web::BytesMut::with_capacity(declared.min(limit));
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| unreadable(&e, limit))?;
        if body.len() + chunk.len() > limit {
            return Err(too_large(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

fn unreadable(err: &PayloadError, limit: usize) -> ApiError {
    if matches!(err, PayloadError::Overflow) {
        // The body's framing took the connection past the cap (`middleware::limits`).
        return too_large(limit);
    }
    if is_deadline(err) {
        ApiError::new(Problem::new(
            Slug::RequestTimeout,
            "The request body did not arrive within the request timeout.",
        ))
    } else {
        ApiError::new(Problem::new(
            Slug::BadRequest,
            "The request body could not be read.",
        ))
    }
}

impl<T: 'static> FromRequest for JsonObject<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let raw = RawJson::<T>::from_request(req, payload);
        Box::pin(async move {
            let value: Value = serde_json::from_slice(&raw.await?.bytes)
                .map_err(|_| body_error("The request body must be valid JSON."))?;
            match value {
                Value::Object(object) => Ok(JsonObject {
                    object,
                    _doc: PhantomData,
                }),
                _ => Err(body_error("The request body must be a JSON object.")),
            }
        })
    }
}

crate::document_as!(JsonObject<T> => RawJson<T>, for T);

/// The raw request body, within the size cap and with a JSON (or absent) content type; the
/// domain crate parses it so the token checks come before body validation. `T` documents it;
/// `REQUIRED = false` documents a body that may be left out (read as `{}`).
pub struct RawJson<T, const REQUIRED: bool = true> {
    pub bytes: web::Bytes,
    _doc: PhantomData<T>,
}

/// A [`RawJson`] body the client may leave out (read as `{}`).
pub type OptionalJson<T> = RawJson<T, false>;

impl<T: 'static, const REQUIRED: bool> FromRequest for RawJson<T, REQUIRED> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let req = req.clone();
        let mut payload = payload.take();
        Box::pin(async move {
            check_content_type(&req)?;
            let bytes = read_body(&req, &mut payload).await?;
            Ok(RawJson {
                bytes,
                _doc: PhantomData,
            })
        })
    }
}

impl<T: ApiComponent, const REQUIRED: bool> ApiComponent for RawJson<T, REQUIRED> {
    fn required() -> bool {
        REQUIRED
    }
    fn child_schemas(v: OpenApiVersion) -> Vec<(String, ReferenceOr<ApistosSchema>)> {
        T::child_schemas(v)
    }
    fn raw_schema(v: OpenApiVersion) -> Option<ReferenceOr<ApistosSchema>> {
        T::raw_schema(v)
    }
    fn schema(v: OpenApiVersion) -> Option<(String, ReferenceOr<ApistosSchema>)> {
        T::schema(v)
    }
    fn request_body(v: OpenApiVersion, description: Option<String>) -> Option<RequestBody> {
        <web::Json<T> as ApiComponent>::request_body(v, description).map(|mut body| {
            body.required = Some(REQUIRED);
            body
        })
    }
}

/// The raw query string values (first occurrence of each name wins). `T` documents the
/// parameters; the domain crate parses the values.
pub struct RawQuery<T> {
    pairs: Vec<(String, String)>,
    _doc: PhantomData<T>,
}

impl<T> RawQuery<T> {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

impl<T: 'static> FromRequest for RawQuery<T> {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let pairs = url_pairs(req.query_string());
        std::future::ready(Ok(RawQuery {
            pairs,
            _doc: PhantomData,
        }))
    }
}

/// Decodes the query leniently (invalid UTF-8 becomes U+FFFD; the domain rules then reject it).
fn url_pairs(query: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

crate::document_as!(RawQuery<T> => web::Query<T>, for T);

/// The credentials of `Authorization: Bearer <token>` (scheme name case-insensitive).
pub fn bearer(headers: &actix_web::http::header::HeaderMap) -> Option<&str> {
    let value = headers
        .get(actix_web::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .trim();
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// How a request header is documented: its name, whether it is required, and its schema.
pub trait HeaderDoc: 'static {
    const NAME: &'static str;
    const REQUIRED: bool;
    const DESCRIPTION: &'static str;
    fn schema() -> Value;
}

/// The raw value of the header `H` names (absent when missing; invalid UTF-8 is replaced), so
/// the domain decides what an acceptable value is. `H` also documents the header in OpenAPI.
pub struct RawHeader<H> {
    value: Option<String>,
    _doc: PhantomData<H>,
}

impl<H> RawHeader<H> {
    pub fn value(&self) -> Option<&str> {
        self.value.as_deref()
    }
}

impl<H: HeaderDoc> FromRequest for RawHeader<H> {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let value = req
            .headers()
            .get(H::NAME)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        std::future::ready(Ok(RawHeader {
            value,
            _doc: PhantomData,
        }))
    }
}

/// The `ApiComponent` methods of a type with no schema of its own (a header, a credential).
#[doc(hidden)]
#[macro_export]
macro_rules! no_schema {
    () => {
        fn child_schemas(
            _: apistos::OpenApiVersion,
        ) -> Vec<(
            String,
            apistos::reference_or::ReferenceOr<apistos::ApistosSchema>,
        )> {
            vec![]
        }
        fn schema(
            _: apistos::OpenApiVersion,
        ) -> Option<(
            String,
            apistos::reference_or::ReferenceOr<apistos::ApistosSchema>,
        )> {
            None
        }
    };
}

/// Documents an extractor that reads one header as that header (what `RawHeader<H>` shows):
/// `header_component!(IfMatch, IfMatchDoc)`.
#[macro_export]
macro_rules! header_component {
    ($extractor:ty, $doc:ty) => {
        impl apistos::ApiComponent for $extractor {
            $crate::no_schema!();
            fn request_body(
                _: apistos::OpenApiVersion,
                _: Option<String>,
            ) -> Option<apistos::paths::RequestBody> {
                None
            }
            fn parameters(
                v: apistos::OpenApiVersion,
                c: Option<String>,
            ) -> Vec<apistos::paths::Parameter> {
                <$crate::extract::RawHeader<$doc> as apistos::ApiComponent>::parameters(v, c)
            }
        }
    };
}

impl<H: HeaderDoc> ApiComponent for RawHeader<H> {
    fn child_schemas(_: OpenApiVersion) -> Vec<(String, ReferenceOr<ApistosSchema>)> {
        vec![]
    }
    fn schema(_: OpenApiVersion) -> Option<(String, ReferenceOr<ApistosSchema>)> {
        None
    }
    fn request_body(_: OpenApiVersion, _: Option<String>) -> Option<RequestBody> {
        None
    }
    fn parameters(v: OpenApiVersion, _: Option<String>) -> Vec<Parameter> {
        vec![Parameter {
            name: H::NAME.to_owned(),
            _in: ParameterIn::Header,
            description: Some(H::DESCRIPTION.to_owned()),
            required: Some(H::REQUIRED),
            style: Some(ParameterStyle::Simple),
            definition: Some(ParameterDefinition::Schema(ReferenceOr::Object(
                ApistosSchema::from_value(&H::schema(), v),
            ))),
            ..Default::default()
        }]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};

    #[test]
    fn bearer_values() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), None);
        let name = HeaderName::from_static("authorization");
        for (value, expected) in [
            ("Bearer abc", Some("abc")),
            ("bearer  abc ", Some("abc")),
            ("Basic abc", None),
            ("Bearer", None),
            ("Bearer   ", None),
        ] {
            h.insert(name.clone(), HeaderValue::from_static(value));
            assert_eq!(bearer(&h), expected, "{value}");
        }
    }

    #[test]
    fn decodes_query_pairs() {
        assert_eq!(
            url_pairs("a=1&b=x%20y&c&d=%zz&e=%41+b&&f=%"),
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "x y".into()),
                ("c".into(), "".into()),
                ("d".into(), "%zz".into()),
                ("e".into(), "A b".into()),
                ("f".into(), "%".into()),
            ]
        );
        assert_eq!(url_pairs("x=%FF")[0].1, "\u{FFFD}");
    }
}
