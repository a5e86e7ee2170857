//! Renders every error response as an RFC 9457 document: problems raised by handlers and
//! extractors ([`PendingProblem`]) and the bare responses actix produces itself (unknown route,
//! wrong method). It also logs the cause of a 500, with the request id, and nothing else.

use std::collections::HashMap;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, HttpRequest, HttpResponse};
use problem_details::{Problem, Slug};

use crate::error::{ApiError, PROBLEM_CONTENT_TYPE, PendingProblem};
use crate::middleware::client::TrustedProxies;
use crate::middleware::headers::RequestId;

/// Where `type` URIs point: configured (`PROBLEM_BASE_URL`), or derived from the request. A
/// derived base uses the `Host` header only when it is a plain `host[:port]`, and forwarded
/// scheme and host only behind trusted proxies, so a client cannot make the service hand out
/// `javascript://evil.example/problems/...`; otherwise the base is the relative `/problems`.
#[derive(Debug, Clone)]
pub struct ProblemBase {
    configured: Option<String>,
    proxies: TrustedProxies,
}

impl ProblemBase {
    pub fn new(configured: Option<String>, proxies: TrustedProxies) -> Self {
        ProblemBase {
            configured,
            proxies,
        }
    }

    pub fn resolve(&self, req: &HttpRequest) -> String {
        if let Some(base) = &self.configured {
            return base.clone();
        }
        let (scheme, host) = if self.proxies.0 > 0 {
            let info = req.connection_info();
            (info.scheme().to_owned(), info.host().to_owned())
        } else {
            let host = req
                .headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or_default();
            ("http".to_owned(), host.to_owned())
        };
        if matches!(scheme.as_str(), "http" | "https") && is_plain_host(&host) {
            format!("{scheme}://{host}/problems")
        } else {
            "/problems".to_owned()
        }
    }
}

/// `name[:port]` or `[v6]:port` with nothing else: letters, digits, `.`, `-`, `:`, brackets.
fn is_plain_host(host: &str) -> bool {
    (1..=255).contains(&host.len())
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'))
}

/// Methods served per route pattern, for the `Allow` header of a 405.
#[derive(Debug, Clone, Default)]
pub struct RouteTable(pub HashMap<String, Vec<Method>>);

impl RouteTable {
    /// Whether some route at `pattern` answers `method`.
    pub fn serves(&self, pattern: &str, method: &Method) -> bool {
        self.0
            .get(pattern)
            .is_some_and(|methods| methods.contains(method))
    }

    pub fn allow(&self, pattern: &str) -> String {
        self.0
            .get(pattern)
            .map(|methods| {
                methods
                    .iter()
                    .map(Method::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    }
}

pub fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        Problem::new(
            Slug::PayloadTooLarge,
            format!("The request body exceeds the limit of {limit} bytes."),
        )
        .with_extension("max_bytes", limit),
    )
}

/// Path extraction failures (a non-integer or out-of-range id) are 404: no such resource can
/// exist.
pub fn path_error(err: actix_web::error::PathError, req: &HttpRequest) -> actix_web::Error {
    let _ = err;
    ApiError::new(Problem::new(
        Slug::NotFound,
        format!("No resource exists at {}.", req.path()),
    ))
    .into()
}

fn synthesize(req: &HttpRequest, status: StatusCode) -> Option<Problem> {
    let problem = match status {
        StatusCode::NOT_FOUND => Problem::new(
            Slug::NotFound,
            format!("No resource exists at {}.", req.path()),
        ),
        StatusCode::METHOD_NOT_ALLOWED => Problem::new(
            Slug::MethodNotAllowed,
            format!("{} is not allowed on {}.", req.method(), req.path()),
        ),
        StatusCode::PAYLOAD_TOO_LARGE => {
            let limit = crate::Edge::of(req).map_or(0, |e| e.limits.max_body_bytes);
            return Some(*too_large(limit).problem);
        }
        StatusCode::UNSUPPORTED_MEDIA_TYPE => Problem::new(
            Slug::UnsupportedMediaType,
            "The request body must be sent as application/json.",
        ),
        s if s.is_server_error() => Problem::internal(),
        s if s.is_client_error() => Problem::new(Slug::BadRequest, "The request is malformed."),
        _ => return None,
    };
    Some(problem)
}

pub async fn render(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    // Inner layers answer with responses, never `Err`; holding a clone of the request here to
    // render one would break actix's routing, which needs the request uniquely owned.
    let res = next.call(req).await?.map_into_boxed_body();
    let status = res.status();
    if status.as_u16() < 400 {
        return Ok(res);
    }
    let pending = res.response().extensions().get::<PendingProblem>().cloned();
    let has_json_body = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.contains("json"));
    let (problem, cause) = match pending {
        Some(p) => (p.problem, p.cause),
        // A handler wrote its own JSON error body (area D's `{"error": ...}`): keep it.
        None if has_json_body => return Ok(res),
        None => match synthesize(res.request(), status) {
            Some(p) => (p, None),
            None => return Ok(res),
        },
    };
    let (req, old) = res.into_parts();
    let request_id = req
        .extensions()
        .get::<RequestId>()
        .map(|r| r.0.clone())
        .unwrap_or_default();
    if problem.status >= 500 {
        log::error!(
            "request_id={request_id} {} {} failed: {}",
            req.method(),
            req.path(),
            cause.as_deref().unwrap_or("no cause recorded")
        );
    }
    let base = crate::Edge::of(&req)
        .map(|e| e.problems.resolve(&req))
        .unwrap_or_else(|_| "/problems".to_owned());
    let status = StatusCode::from_u16(problem.status).unwrap_or(status);
    let mut builder = HttpResponse::build(status);
    // Keep headers set earlier (Allow, Retry-After, WWW-Authenticate, rate-limit headers).
    for (name, value) in old.headers() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            builder.append_header((name.clone(), value.clone()));
        }
    }
    // The route table's methods (HEAD beside GET: `middleware::head`) over the router's own
    // list, which knows only the registered routes.
    if status == StatusCode::METHOD_NOT_ALLOWED {
        let allow = crate::Edge::of(&req)
            .ok()
            .map(|e| &e.routes)
            .zip(req.match_pattern())
            .map(|(table, pattern)| table.allow(&pattern))
            .filter(|allow| !allow.is_empty());
        if let Some(value) = allow.and_then(|a| HeaderValue::from_str(&a).ok()) {
            builder.insert_header((header::ALLOW, value));
        }
    }
    builder.insert_header((header::CONTENT_TYPE, PROBLEM_CONTENT_TYPE));
    let body = problem.to_json(&base).to_string();
    Ok(ServiceResponse::new(req, builder.body(body)))
}

/// The app's default service: no route matches.
pub async fn no_route(req: HttpRequest) -> ApiError {
    ApiError::new(Problem::new(
        Slug::NotFound,
        format!("No resource exists at {}.", req.path()),
    ))
}

impl actix_web::Responder for ApiError {
    type Body = BoxBody;
    fn respond_to(self, _: &HttpRequest) -> HttpResponse {
        actix_web::ResponseError::error_response(&self)
    }
}
