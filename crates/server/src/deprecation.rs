//! V1 is deprecated: every response to a path under `/v1` carries `Deprecation`, `Sunset` and
//! `Link` (whatever produced it: a handler, an extractor's 413/415/422, a 404 for an unknown
//! path or id, a 405, a 401, a 429), and the calls that got past the rate limit and the token
//! guard are counted per caller. Two layers, for those two jobs: [`headers`] sits outside the
//! problem renderer, so it sees final responses; [`count`] sits inside the token guard, so
//! refused requests write nothing and, in tokens mode, the caller is the token's user rather
//! than a header anyone can set. Both see the path after percent-decoding (`/%761/notes` is
//! `/v1/notes`, `middleware::path`).

use actix_web::HttpMessage;
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use versioned_notes::{DeprecationForm, caller};

use http_edge::actor::actor_in;
/// What the V1 layers read: the header form and this instance's usage recorder (the
/// same recorder `GET /metrics/v1-usage` writes before it reads).
pub struct V1 {
    /// `DEPRECATION_HEADER_FORM`.
    pub form: DeprecationForm,
    pub usage: versioned_notes::UsageRecorder,
}

/// `/v1` itself or anything below it.
pub fn is_v1(path: &str) -> bool {
    path == "/v1" || path.starts_with("/v1/")
}

/// The deprecation headers on every V1 response.
pub async fn headers(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    if !is_v1(req.path()) {
        return Ok(next.call(req).await?.map_into_boxed_body());
    }
    let form = http_edge::registered::<V1>(req.request())?.form;
    let mut res = next.call(req).await?.map_into_boxed_body();
    let headers = res.headers_mut();
    for (name, value) in form.headers() {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
    Ok(res)
}

/// Counts a V1 call that passed the rate limit and the token guard, in the V1 usage recorder.
pub async fn count(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    if !is_v1(req.path()) {
        return Ok(next.call(req).await?.map_into_boxed_body());
    }
    let v1 = http_edge::registered::<V1>(req.request())?.clone();
    let authenticated = actor_in(&req.extensions()).owner_id();
    let who = match authenticated {
        Some(user_id) => caller(Some(&user_id.to_string()), None),
        None => caller(
            req.headers().get("x-user-id").and_then(|v| v.to_str().ok()),
            http_edge::middleware::client::address(&req),
        ),
    };
    let res = next.call(req).await?.map_into_boxed_body();
    v1.usage.record(&who);
    Ok(res)
}
