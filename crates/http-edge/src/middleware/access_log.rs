//! The access log: one record per request, under the log target `access`, with its fields as
//! the record's key-values (what `LOG_FORMAT=json` writes, [`json_line`]) and as a text line.
//! The request line (`METHOD /path?query HTTP/x`) has anything that may be a secret masked: the
//! values of query parameters named like credentials, JWT-shaped values (`eyJ….….…`) and any
//! run of 32 or more hexadecimal characters (a raw token is 64), wherever they appear. Headers
//! are never logged. The record also names who the request acted for: a user and its token's id
//! (never the token), the operator, or `-`.

use std::time::Instant;

use actix_web::HttpMessage;
use actix_web::body::{BodySize, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use ownership::Actor;
use serde_json::{Map, Value};

use crate::middleware::client;
use crate::middleware::headers::{RequestId, Trace};

/// How log records are written (`LOG_FORMAT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// `env_logger`'s lines: `[timestamp LEVEL target] message`.
    #[default]
    Text,
    /// One JSON object per line ([`json_line`]).
    Json,
}

impl LogFormat {
    pub fn parse(s: &str) -> Option<LogFormat> {
        match s.to_ascii_lowercase().as_str() {
            "text" => Some(LogFormat::Text),
            "json" => Some(LogFormat::Json),
            _ => None,
        }
    }
}

/// The log target of access records (`RUST_LOG=access=off` silences them).
pub const TARGET: &str = "access";

fn describe(actor: Actor) -> String {
    match actor {
        Actor::User { user_id, token_id } => format!("user:{user_id}/token:{token_id}"),
        Actor::Operator => "operator".to_owned(),
        Actor::Unidentified => "-".to_owned(),
    }
}

pub fn log_safe_request_line(req: &ServiceRequest) -> String {
    let uri = req.uri();
    let mut target = mask(uri.path());
    if let Some(query) = uri.query() {
        let masked: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, _)) if is_credential_name(name) => format!("{name}=***"),
                _ => mask(pair),
            })
            .collect();
        target.push('?');
        target.push_str(&masked.join("&"));
    }
    format!("{} {} {:?}", req.method(), target, req.version())
}

/// Parameter names that carry credentials in the wild (OAuth, sessions, signed URLs, API keys).
fn is_credential_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "token",
        "key",
        "secret",
        "password",
        "passwd",
        "pwd",
        "auth",
        "signature",
        "sig",
        "jwt",
        "session",
        "sid",
        "code",
        "credential",
        "bearer",
        "cookie",
    ]
    .iter()
    .any(|word| name.contains(word))
}

/// Masks every segment (between separators such as `/`, `=`, `&`, `,`) that looks like a
/// credential.
fn mask(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut segment = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '%' | '~' | '+') {
            segment.push(c);
        } else {
            out.push_str(&masked(&segment));
            segment.clear();
            out.push(c);
        }
    }
    out.push_str(&masked(&segment));
    out
}

fn masked(segment: &str) -> String {
    if looks_like_jwt(segment) {
        return "***".to_owned();
    }
    mask_hex_runs(segment)
}

/// `eyJ` (a base64url-encoded `{"`) followed by two more dot-separated base64url parts.
fn looks_like_jwt(segment: &str) -> bool {
    let parts: Vec<&str> = segment.split('.').collect();
    parts.len() == 3
        && parts[0].starts_with("eyJ")
        && parts.iter().take(2).all(|p| !p.is_empty())
        && parts.iter().all(|p| {
            p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
        })
}

fn mask_hex_runs(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.len() >= 32 {
            out.push_str("***");
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in s.chars() {
        if c.is_ascii_hexdigit() {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// The access log layer: when the answer's head is ready, one record with the client, the
/// request line (credentials masked), the route template, status, body size, duration,
/// request id, trace and who it acted for.
pub async fn log(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    if !log::log_enabled!(target: TARGET, log::Level::Info) {
        // Nothing to write (RUST_LOG=warn, or access=off): none of the work below.
        return next.call(req).await;
    }
    let started = Instant::now();
    let line = log_safe_request_line(&req);
    let client = client::address(&req).map_or_else(|| "-".to_owned(), |ip| ip.to_string());
    let method = req.method().as_str().to_owned();
    let res = next.call(req).await;
    let duration_ms = started.elapsed().as_secs_f64() * 1_000.0;
    let (status, size, route, request_id, trace, actor) = match &res {
        Ok(res) => {
            let request = res.request();
            let extensions = request.extensions();
            let size = match res.response().body().size() {
                BodySize::Sized(n) => n.to_string(),
                BodySize::None => "0".to_owned(),
                BodySize::Stream => "-".to_owned(),
            };
            (
                res.status(),
                size,
                request.match_pattern(),
                extensions.get::<RequestId>().map(|id| id.0.clone()),
                extensions.get::<Trace>().map(|t| t.span),
                crate::actor::actor_in(&extensions),
            )
        }
        Err(err) => (
            err.as_response_error().status_code(),
            "-".to_owned(),
            None,
            None,
            None,
            Actor::Unidentified,
        ),
    };
    let (user_id, token_id) = match actor {
        Actor::User { user_id, token_id } => (Some(user_id), Some(token_id)),
        _ => (None, None),
    };
    let request_id = request_id.unwrap_or_else(|| "-".to_owned());
    let trace_id = trace.map_or_else(|| "-".to_owned(), |t| t.trace_id());
    let span_id = trace.map(|t| t.span_id());
    log::info!(
        target: TARGET,
        client = client.as_str(),
        method = method.as_str(),
        route = route.as_deref(),
        status = status.as_u16(),
        bytes = size.as_str(),
        duration_ms = (duration_ms * 1_000.0).round() / 1_000.0,
        request_id = request_id.as_str(),
        trace_id = trace_id.as_str(),
        span_id = span_id.as_deref(),
        user_id = user_id,
        token_id = token_id,
        actor = describe(actor).as_str();
        "{client} \"{line}\" {} {size} {duration_ms:.3}ms request_id={request_id} actor={} \
         trace_id={trace_id}",
        status.as_u16(),
        describe(actor)
    );
    res
}

/// A log record as one JSON object (`LOG_FORMAT=json`): `timestamp`, `level`, `target`,
/// `message` and the record's key-values (an access record's fields; none that is unknown).
pub fn json_line(timestamp: &str, record: &log::Record<'_>) -> String {
    let mut object = Map::new();
    object.insert("timestamp".into(), timestamp.into());
    object.insert("level".into(), record.level().as_str().into());
    object.insert("target".into(), record.target().into());
    object.insert("message".into(), record.args().to_string().into());
    let _ = record.key_values().visit(&mut Fields(&mut object));
    Value::Object(object).to_string()
}

/// Collects key-values into a JSON object, leaving out the absent ones.
struct Fields<'a>(&'a mut Map<String, Value>);

impl<'kvs> log::kv::VisitSource<'kvs> for Fields<'_> {
    fn visit_pair(
        &mut self,
        key: log::kv::Key<'kvs>,
        value: log::kv::Value<'kvs>,
    ) -> Result<(), log::kv::Error> {
        let value = serde_json::to_value(&value).unwrap_or(Value::Null);
        if !value.is_null() {
            self.0.insert(key.as_str().to_owned(), value);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_actor_is_named_by_ids_only() {
        assert_eq!(
            describe(Actor::User {
                user_id: 7,
                token_id: 12
            }),
            "user:7/token:12"
        );
        assert_eq!(describe(Actor::Operator), "operator");
        assert_eq!(describe(Actor::Unidentified), "-");
    }

    fn line(uri: &str) -> String {
        log_safe_request_line(
            &actix_web::test::TestRequest::get()
                .uri(uri)
                .to_srv_request(),
        )
    }

    #[test]
    fn a_json_line_holds_the_fields_and_leaves_out_the_unknown() {
        let fields: [(&str, Option<i64>); 2] = [("user_id", Some(7)), ("token_id", None)];
        let line = json_line(
            "2026-11-26T23:00:00.000Z",
            &log::Record::builder()
                .args(format_args!("a \"quoted\" line"))
                .level(log::Level::Info)
                .target(TARGET)
                .key_values(&fields)
                .build(),
        );
        let parsed: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            parsed,
            serde_json::json!({
                "timestamp": "2026-11-26T23:00:00.000Z",
                "level": "INFO",
                "target": "access",
                "message": "a \"quoted\" line",
                "user_id": 7,
            })
        );
        assert!(!line.contains('\n'));
    }

    #[test]
    fn request_lines_hide_secrets() {
        let token = "ab".repeat(32);
        assert_eq!(
            line(&format!(
                "/notes/{token}?limit=5&access_token=xyz&q={token}"
            )),
            "GET /notes/***?limit=5&access_token=***&q=*** HTTP/1.1"
        );
        assert_eq!(mask_hex_runs("/notes/12"), "/notes/12");
    }

    #[test]
    fn jwts_and_session_parameters_are_masked() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl";
        assert_eq!(
            line(&format!("/x?jwt={jwt}&session=abc&q={jwt}&SID=1&limit=2")),
            "GET /x?jwt=***&session=***&q=***&SID=***&limit=2 HTTP/1.1"
        );
        assert_eq!(line(&format!("/a/{jwt}/b")), "GET /a/***/b HTTP/1.1");
        assert_eq!(line("/notes/eyJ.not"), "GET /notes/eyJ.not HTTP/1.1");
        assert_eq!(
            line("/v1/notes?limit=20&offset=40"),
            "GET /v1/notes?limit=20&offset=40 HTTP/1.1"
        );
    }
}
