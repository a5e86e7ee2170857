//! Request id, trace context and security headers on every response, errors included:
//! `Cache-Control: no-store` unless the answer says otherwise or its path is one the app
//! declares cacheable.

use actix_web::HttpMessage;
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::middleware::Next;
use trace_context::TraceParent;

pub const REQUEST_ID: &str = "x-request-id";

/// The id of the current request, in the request's extensions.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// The caller's id when it is 1–128 characters of `[A-Za-z0-9._-]`, else a new UUID v4.
pub fn accept_request_id(given: Option<&str>) -> String {
    match given {
        Some(id)
            if (1..=128).contains(&id.len())
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) =>
        {
            id.to_owned()
        }
        _ => uuid::Uuid::new_v4().to_string(),
    }
}

/// The trace this request belongs to (W3C Trace Context) and its own span: a child of the
/// caller's `traceparent` when it sent a valid one, else a new trace (sampled when the app
/// exports spans). The response says which in `traceresponse`.
#[derive(Debug, Clone, Copy)]
pub struct Trace {
    pub span: TraceParent,
    /// The caller's span, when it sent one.
    pub parent: Option<TraceParent>,
}

/// Stamps every request with its id ([`RequestId`], `X-Request-Id`) and trace ([`Trace`]), and
/// every answer with both and the security headers.
pub async fn stamp(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let id = accept_request_id(req.headers().get(REQUEST_ID).and_then(|v| v.to_str().ok()));
    req.extensions_mut().insert(RequestId(id.clone()));
    let incoming = req.headers().get(trace_context::HEADER);
    let parent = incoming
        .and_then(|v| v.to_str().ok())
        .and_then(TraceParent::parse);
    let exporting = crate::Edge::of(req.request()).is_ok_and(|edge| edge.spans.is_some());
    let trace = match parent {
        Some(parent) => parent.child(),
        None if exporting => TraceParent::start().sampled_now(),
        None => TraceParent::start(),
    };
    req.extensions_mut().insert(Trace {
        span: trace,
        parent,
    });
    // The app's cacheable paths keep whatever caching their answers say.
    let cacheable = crate::Edge::of(req.request()).is_ok_and(|edge| {
        edge.cacheable.iter().any(|prefix| {
            req.path()
                .strip_prefix(prefix.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
    });
    let mut res = next.call(req).await?;
    let headers = res.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&id) {
        headers.insert(HeaderName::from_static(REQUEST_ID), value);
    }
    if let Ok(value) = HeaderValue::from_str(&trace.to_string()) {
        headers.insert(
            HeaderName::from_static(trace_context::RESPONSE_HEADER),
            value,
        );
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if !cacheable && !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    Ok(res)
}

/// `CORS_ORIGINS`: comma-separated origins, each `http(s)://host[:port]` with no path.
pub fn origins(v: &str) -> Result<Vec<String>, &'static str> {
    let origins: Vec<String> = v
        .split(',')
        .map(|s| s.trim().trim_end_matches('/').to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    let valid = |o: &str| {
        let rest = o
            .strip_prefix("https://")
            .or_else(|| o.strip_prefix("http://"));
        rest.is_some_and(|host| {
            !host.is_empty()
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
        })
    };
    if origins.iter().all(|o| valid(o)) {
        Ok(origins)
    } else {
        Err("expected comma-separated origins like https://app.example.com")
    }
}

/// Cross-origin access for the configured origins only (`CORS_ORIGINS`); the request id and
/// rate-limit headers are readable by browser clients.
pub fn cors(origins: &[String]) -> actix_cors::Cors {
    origins
        .iter()
        .fold(actix_cors::Cors::default(), |cors, origin| {
            cors.allowed_origin(origin)
        })
        .allow_any_method()
        .allow_any_header()
        .expose_headers([
            "x-request-id",
            "traceresponse",
            "ratelimit-limit",
            "ratelimit-remaining",
            "ratelimit-reset",
            "retry-after",
            "deprecation",
            "sunset",
            "link",
            "consistency-token",
        ])
        .max_age(600)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids() {
        assert_eq!(accept_request_id(Some("abc-1.2_3")), "abc-1.2_3");
        assert_eq!(accept_request_id(Some(&"a".repeat(128))), "a".repeat(128));
        assert_ne!(accept_request_id(Some(&"a".repeat(129))), "a".repeat(129));
        assert_ne!(accept_request_id(Some("has space")), "has space");
        assert_ne!(accept_request_id(Some("")), "");
        assert_eq!(accept_request_id(None).len(), 36);
    }
}
