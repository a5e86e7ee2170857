//! The access log's request line (`METHOD /path?query HTTP/x`) with anything that may be a
//! secret masked: the values of query parameters named like credentials, JWT-shaped values
//! (`eyJ….….…`) and any run of 32 or more hexadecimal characters (a raw token is 64), wherever
//! they appear. Headers are never logged. The line also names who the request acted for
//! ([`actor`]): a user and its token's id (never the token), the operator, or `-`.

use actix_web::HttpMessage;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use ownership::Actor;

/// The request's actor as the token guard decided it: `user:7/token:12`, `operator`, or `-`
/// (authentication off, a public route, or refused before the guard passed it).
pub fn actor(res: &ServiceResponse) -> String {
    describe(crate::actor::actor_in(&res.request().extensions()))
}

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

/// The access log: one line per request with the client, the request line (credentials
/// masked), status, size, duration, request id and who it acted for.
pub fn logger() -> actix_web::middleware::Logger {
    actix_web::middleware::Logger::new(
        "%a \"%{request_line}xi\" %s %b %Dms request_id=%{x-request-id}o actor=%{actor}xo",
    )
    .custom_request_replace("request_line", log_safe_request_line)
    .custom_response_replace("actor", actor)
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
