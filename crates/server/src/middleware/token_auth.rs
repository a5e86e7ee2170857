//! Optional bearer-token guard (`API_AUTH=tokens`): the routes of areas A, B, C and E need
//! `Authorization: Bearer <raw token from area D>`. Reads (GET, HEAD, OPTIONS) need any active
//! token; writes need scope `write` or `admin`. Missing, unknown or revoked: 401 `unauthorized`
//! with `WWW-Authenticate: Bearer`; too small a scope: 403 `forbidden`. Off by default.
//!
//! The guard matches path prefixes, so routes added under them later are covered too. Each
//! request costs one SHA-256 and one indexed lookup; there is no cache, so a revoked token is
//! refused from the next request on.

use actix_web::HttpMessage;
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::http::header::{HeaderValue, WWW_AUTHENTICATE};
use actix_web::middleware::Next;
use actix_web::web::Data;
use problem_details::{Problem, Slug};

use crate::db::Db;
use crate::error::ApiError;

/// The `API_AUTH` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApiAuth {
    #[default]
    Off,
    Tokens,
}

impl ApiAuth {
    pub fn parse(value: &str) -> Option<ApiAuth> {
        match value.trim().to_ascii_lowercase().as_str() {
            "off" | "none" | "false" => Some(ApiAuth::Off),
            "tokens" => Some(ApiAuth::Tokens),
            _ => None,
        }
    }
}

/// The user whose token let the request through, in the request's extensions (inner layers
/// key on it instead of on headers the client writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Authenticated {
    pub user_id: i64,
}

/// Path prefixes of areas A (notes, tags, comments), B, C (with its usage counts, which name
/// callers) and E.
pub const PROTECTED_PREFIXES: [&str; 7] = [
    "/notes",
    "/tags",
    "/articles",
    "/v1",
    "/v2",
    "/metrics",
    "/accounts",
];

/// True for a prefix itself and anything below it (`/notes`, `/notes/1/comments`; not
/// `/notesx`).
pub fn is_protected(path: &str) -> bool {
    PROTECTED_PREFIXES.iter().any(|prefix| {
        path.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

fn is_read(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

fn refuse(
    req: ServiceRequest,
    slug: Slug,
    detail: &str,
    challenge: &'static str,
) -> ServiceResponse<BoxBody> {
    let err = ApiError::new(Problem::new(slug, detail))
        .with_header(WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
    ServiceResponse::from_err(err, req.request().clone())
}

pub async fn guard(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let enabled = req
        .app_data::<Data<ApiAuth>>()
        .is_some_and(|a| *a.as_ref() == ApiAuth::Tokens);
    // The decoded path actix routes on, so `/%6Eotes` cannot slip past the prefix check.
    if !enabled || !is_protected(req.match_info().as_str()) {
        return Ok(next.call(req).await?.map_into_boxed_body());
    }
    let Some(raw) = crate::extract::bearer(req.headers()).map(str::to_owned) else {
        return Ok(refuse(
            req,
            Slug::Unauthorized,
            "This route requires a bearer token: Authorization: Bearer <token>.",
            "Bearer",
        ));
    };
    let Some(db) = req.app_data::<Data<Db>>().cloned() else {
        return Err(ApiError::internal("API_AUTH: no database handle").into());
    };
    let token = match db
        .read(move |c| tokens::service::authenticate(c, &raw))
        .await
    {
        Ok(token) => token,
        Err(err) => return Err(err.into()),
    };
    match token {
        None => Ok(refuse(
            req,
            Slug::Unauthorized,
            "The bearer token is unknown or revoked.",
            "Bearer",
        )),
        Some(t) if !is_read(req.method()) && !t.scope.allows_write() => {
            let detail = format!(
                "A token with scope {} cannot {} here; this needs scope write or admin.",
                t.scope,
                req.method()
            );
            Ok(refuse(
                req,
                Slug::Forbidden,
                &detail,
                "Bearer error=\"insufficient_scope\"",
            ))
        }
        Some(t) => {
            req.extensions_mut()
                .insert(Authenticated { user_id: t.user_id });
            Ok(next.call(req).await?.map_into_boxed_body())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes() {
        for p in [
            "/notes",
            "/notes/1",
            "/tags",
            "/articles/offset",
            "/v1/notes",
            "/v2",
            "/accounts/a/events",
            "/notes/1/comments",
            "/metrics/v1-usage",
        ] {
            assert!(is_protected(p), "{p}");
        }
        for p in [
            "/",
            "/health",
            "/users/1/tokens",
            "/tokens/verify",
            "/notesx",
            "/v3/notes",
            "/docs",
            "/openapi.json",
            "/problems/not-found",
            "/webhook",
        ] {
            assert!(!is_protected(p), "{p}");
        }
    }

    #[test]
    fn api_auth_setting() {
        let read = |v: Option<&str>| {
            crate::settings::Settings::from_lookup(|k| {
                (k == "API_AUTH").then(|| v.map(str::to_owned)).flatten()
            })
        };
        assert_eq!(read(None).unwrap().api_auth, ApiAuth::Off);
        assert_eq!(read(Some("tokens")).unwrap().api_auth, ApiAuth::Tokens);
        assert_eq!(read(Some("off")).unwrap().api_auth, ApiAuth::Off);
        assert_eq!(read(Some("jwt")).unwrap_err().variable, "API_AUTH");
    }

    #[test]
    fn settings_values() {
        assert_eq!(ApiAuth::parse("tokens"), Some(ApiAuth::Tokens));
        assert_eq!(ApiAuth::parse("OFF"), Some(ApiAuth::Off));
        assert_eq!(ApiAuth::parse("jwt"), None);
    }
}
