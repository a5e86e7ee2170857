//! The bearer-token guard (`API_AUTH=tokens`; off by default). Deny by default: every route
//! needs `Authorization: Bearer <raw token from area D>` unless [`access`] puts it on the
//! public allow-list, so a route added later is protected until someone decides otherwise.
//!
//! - Reads (GET, HEAD, OPTIONS) need any active token; writes need scope `write` or `admin`.
//! - The operator credential (a key of `API_KEYS` in `API_KEY_HEADER`) passes on every route:
//!   the operator may read and change everything, including the rows that belong to no user.
//! - Token management (creating a user; issuing, listing, revoking and rotating a user's
//!   tokens) needs the operator credential, or an `admin` token of that same user. `X-User-Id`
//!   alone grants nothing.
//! - Operator data (received webhooks, V1 usage, the audit trail) needs the operator
//!   credential: a user's token is 403 there.
//! - Missing, unknown, revoked or expired: 401 `unauthorized` with `WWW-Authenticate: Bearer`;
//!   too small a scope or another user's tokens: 403 `forbidden`, naming what was missing.
//!
//! Each request costs one SHA-256 and one indexed lookup; there is no cache, so a revoked token
//! is refused from the next request on. The guard records who passed (an [`Actor`] in the
//! request's extensions) for the layers and handlers inside it; what a user may do with what
//! another user owns is decided by the domain crates (crates/ownership).

use actix_web::HttpMessage;
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::http::header::{HeaderValue, WWW_AUTHENTICATE};
use actix_web::middleware::Next;
use actix_web::web::Data;
use ownership::Actor;
use problem_details::{Problem, Slug};

use crate::routes::examples::ExampleAuth;
use http_edge::db::Db;
use http_edge::error::ApiError;
use http_edge::middleware::problems::RouteTable;

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

/// What a route needs in tokens mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Nothing: on the allow-list (its own credential, if any, is checked by its handler).
    Public,
    /// A bearer token; for a write, of scope `write` or `admin`.
    Bearer,
    /// Creating a user: the operator credential.
    CreateUser,
    /// Operator data (received webhooks, V1 usage, the audit trail): the operator credential.
    OperatorOnly,
    /// A user's tokens: the operator credential, or an `admin` token of this user.
    ManageTokens { user_id: i64 },
}

/// The public allow-list: (method, or `None` for any; path; `true` when everything below the
/// path is public too). Each entry says why.
const PUBLIC: [(Option<Method>, &str, bool); 10] = [
    // The service's identity and its liveness and readiness.
    (None, "/", false),
    (None, "/health", false),
    // What problem `type` URIs point to, and the API's description.
    (None, "/problems", true),
    (None, "/openapi.json", false),
    (None, "/docs", true),
    (Some(Method::GET), "/examples/ping", false),
    // Its signature is the credential.
    (Some(Method::POST), "/webhook", false),
    // The raw token in the body is the credential being checked.
    (Some(Method::POST), "/tokens/verify", false),
    // An API key and a JWT, checked by their handlers.
    (None, "/machine/health", false),
    (None, "/examples/protected", false),
];

/// What `method` on `path` needs in tokens mode; anything not listed needs a bearer token.
pub fn access(method: &Method, path: &str) -> Access {
    let public = PUBLIC.iter().any(|(m, p, below)| {
        m.as_ref().is_none_or(|m| m == method)
            && path.strip_prefix(p).is_some_and(|rest| {
                rest.is_empty() || (*below && (rest.starts_with('/') || p.ends_with('/')))
            })
    });
    if public {
        return Access::Public;
    }
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    match segments.as_slice() {
        ["users"] => Access::CreateUser,
        ["webhook", "events"] | ["metrics", "v1-usage"] | ["audit"] => Access::OperatorOnly,
        ["users", user, "tokens", ..] => Access::ManageTokens {
            user_id: tokens::parse_path_id(user),
        },
        _ => Access::Bearer,
    }
}

/// A method no route serves on a path the allow-list opens for another method (`TRACE
/// /webhook`): the router's 405 with `Allow` is the honest answer, and it opens nothing.
fn unserved_method_of_a_public_path(req: &ServiceRequest) -> bool {
    let path = req.path();
    PUBLIC
        .iter()
        .any(|(method, p, _)| method.is_some() && *p == path)
        && req
            .app_data::<Data<RouteTable>>()
            .is_some_and(|table| !table.serves(path, req.method()))
}

fn is_read(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

fn refuse(req: ServiceRequest, err: ApiError) -> ServiceResponse<BoxBody> {
    ServiceResponse::from_err(err, req.request().clone())
}

fn unauthorized(detail: &str) -> ApiError {
    ApiError::unauthorized(detail, HeaderValue::from_static("Bearer"))
}

fn forbidden(detail: String) -> ApiError {
    ApiError::new(Problem::new(Slug::Forbidden, detail)).with_header(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer error=\"insufficient_scope\""),
    )
}

pub async fn guard(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let enabled = req
        .app_data::<Data<ApiAuth>>()
        .is_some_and(|a| *a.as_ref() == ApiAuth::Tokens);
    let needs = match access(req.method(), req.path()) {
        Access::Bearer if unserved_method_of_a_public_path(&req) => Access::Public,
        needs => needs,
    };
    if !enabled || needs == Access::Public {
        return Ok(next.call(req).await?.map_into_boxed_body());
    }
    let operator_auth = req.app_data::<Data<ExampleAuth>>().cloned();
    let operator = operator_auth
        .as_ref()
        .is_some_and(|auth| auth.check_api_key(req.request()).is_ok());
    if operator {
        req.extensions_mut().insert(Actor::Operator);
        return Ok(next.call(req).await?.map_into_boxed_body());
    }
    if needs == Access::CreateUser {
        let challenge = operator_auth
            .and_then(|auth| HeaderValue::from_str(auth.api_key_challenge()).ok())
            .unwrap_or(HeaderValue::from_static("ApiKey"));
        let detail =
            "Creating a user needs the operator key (a key of API_KEYS, in API_KEY_HEADER).";
        return Ok(refuse(req, ApiError::unauthorized(detail, challenge)));
    }
    let Some(raw) = http_edge::extract::bearer(req.headers()).map(str::to_owned) else {
        return Ok(refuse(
            req,
            unauthorized("This route requires a bearer token: Authorization: Bearer <token>."),
        ));
    };
    let Some(db) = req.app_data::<Data<Db>>().cloned() else {
        return Err(ApiError::internal("API_AUTH: no database handle").into());
    };
    let Some(token) = db
        .read(move |c| tokens::service::authenticate(c, &raw))
        .await?
    else {
        return Ok(refuse(
            req,
            unauthorized("The bearer token is unknown, revoked or expired."),
        ));
    };
    let refusal = match needs {
        Access::ManageTokens { .. } if token.scope != tokens::Scope::Admin => Some(format!(
            "Managing tokens needs a token with scope admin (or the operator key); this one has \
             scope {}.",
            token.scope
        )),
        Access::ManageTokens { user_id } if user_id != token.user_id => {
            Some("An admin token manages only its own user's tokens.".to_owned())
        }
        Access::OperatorOnly => Some(format!(
            "{} is operator data: it needs the operator key (a key of API_KEYS, in \
             API_KEY_HEADER), not a user's token.",
            req.path()
        )),
        _ if !is_read(req.method()) && !token.scope.allows_write() => Some(format!(
            "{} here needs a token with scope write or admin; this one has scope {}.",
            req.method(),
            token.scope
        )),
        _ => None,
    };
    if let Some(detail) = refusal {
        return Ok(refuse(req, forbidden(detail)));
    }
    req.extensions_mut().insert(Actor::User {
        user_id: token.user_id,
        token_id: token.id,
    });
    crate::routes::tokens::record_use(&db, token).await;
    Ok(next.call(req).await?.map_into_boxed_body())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deny_by_default_with_a_public_allow_list() {
        let public = [
            (Method::GET, "/"),
            (Method::GET, "/health"),
            (Method::GET, "/problems/not-found"),
            (Method::GET, "/openapi.json"),
            (Method::GET, "/docs"),
            (Method::GET, "/docs/index.html"),
            (Method::GET, "/examples/ping"),
            (Method::POST, "/webhook"),
            (Method::POST, "/tokens/verify"),
            (Method::GET, "/machine/health"),
            (Method::GET, "/examples/protected"),
        ];
        for (method, path) in public {
            assert_eq!(access(&method, path), Access::Public, "{method} {path}");
        }
        for (method, path) in [
            (Method::GET, "/notes"),
            (Method::GET, "/examples/notes"),
            (Method::POST, "/examples/tags"),
            (Method::GET, "/webhook"),
            (Method::GET, "/tokens/verify"),
            (Method::GET, "/healthz"),
            (Method::GET, "/problemsx"),
            (Method::GET, "/docsx"),
            (Method::POST, "/examples/ping"),
            (Method::GET, "/a/route/added/later"),
            (Method::GET, "/webhook/events/1"),
        ] {
            assert_eq!(access(&method, path), Access::Bearer, "{method} {path}");
        }
        for path in [
            "/webhook/events",
            "/webhook/events/",
            "/metrics/v1-usage",
            "/audit",
        ] {
            assert_eq!(access(&Method::GET, path), Access::OperatorOnly, "{path}");
        }
    }

    #[test]
    fn token_management_names_its_user() {
        assert_eq!(access(&Method::POST, "/users"), Access::CreateUser);
        assert_eq!(
            access(&Method::POST, "/users/7/tokens"),
            Access::ManageTokens { user_id: 7 }
        );
        assert_eq!(
            access(&Method::DELETE, "/users/7/tokens/3"),
            Access::ManageTokens { user_id: 7 }
        );
        assert_eq!(
            access(&Method::POST, "/users/x/tokens/3/rotate"),
            Access::ManageTokens { user_id: 0 }
        );
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
