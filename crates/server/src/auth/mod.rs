//! Who may call what. Every route module declares, beside its `configure`, an `ACCESS` list
//! of [`Rule`]s (the path patterns it registers and what each needs); app.rs registers each
//! module's routes and rules together, and a test checks that every operation of the OpenAPI
//! document is covered by a rule. The bearer-token guard ([`guard`], `API_AUTH=tokens`; off by
//! default) enforces them. Deny by default: a path no rule covers needs a bearer token.
//!
//! - Reads (GET, HEAD, OPTIONS) need any active token; writes need scope `write` or `admin`.
//! - The operator credential (a key of `API_KEYS` in `API_KEY_HEADER`, [`Credentials`]) passes
//!   on every route: the operator may read and change everything, including the rows that
//!   belong to no user.
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
use ownership::Actor;
use problem_details::{Problem, Slug};

use http_edge::access_rules::{self, AccessKind};
use http_edge::db::Db;
use http_edge::error::ApiError;

pub use http_edge::credentials::{ApiKeyAuth, BearerClaims, Credentials};

pub use crate::settings::ApiAuth;

/// What a route needs in tokens mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Nothing: its own credential, if any, is checked by its handler.
    Public,
    /// A bearer token; for a write, of scope `write` or `admin`.
    Bearer,
    /// Creating a user: the operator credential.
    CreateUser,
    /// Operator data (received webhooks, V1 usage, the audit trail): the operator credential.
    OperatorOnly,
    /// A user's tokens: the operator credential, or an `admin` token of the user the path's
    /// first parameter names.
    ManageTokens,
}

impl AccessKind for Access {
    fn is_public(self) -> bool {
        self == Access::Public
    }
}

/// A route's rule (declared in its module's `ACCESS`; the matching is the edge's).
pub type Rule = access_rules::Rule<Access>;
/// Every route module's rules, in app.rs's order.
pub type Rules = access_rules::Rules<Access>;

/// What a request needs, decided by [`needs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    pub access: Access,
    /// The user a `ManageTokens` path names (0 when the segment is not an id).
    pub user_id: i64,
}

/// What `method` on `path` needs in tokens mode; what no rule covers needs a bearer token.
pub fn needs(rules: &Rules, method: &Method, path: &str) -> Needs {
    match rules.declared(method, path) {
        Some((Access::ManageTokens, values)) => Needs {
            access: Access::ManageTokens,
            user_id: values.first().map_or(0, |v| tokens::parse_path_id(v)),
        },
        Some((access, _)) => Needs { access, user_id: 0 },
        None => Needs {
            access: Access::Bearer,
            user_id: 0,
        },
    }
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

/// What the guard needs: the mode and the rules (the operator credential is the edge's).
#[derive(Debug, Clone)]
pub struct Guard {
    pub mode: ApiAuth,
    pub rules: Rules,
}

pub async fn guard(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let guard = http_edge::registered::<Guard>(req.request())?.clone();
    let needs = match needs(&guard.rules, req.method(), req.path()) {
        n if n.access == Access::Bearer && guard.rules.opened_for_another_method(&req) => Needs {
            access: Access::Public,
            ..n
        },
        needs => needs,
    };
    if guard.mode == ApiAuth::Off || needs.access == Access::Public {
        return Ok(next.call(req).await?.map_into_boxed_body());
    }
    let credentials = &http_edge::Edge::of(req.request())?.credentials;
    if credentials.check_api_key(req.request()).is_ok() {
        req.extensions_mut().insert(Actor::Operator);
        return Ok(next.call(req).await?.map_into_boxed_body());
    }
    if needs.access == Access::CreateUser {
        let challenge = HeaderValue::from_str(credentials.api_key_challenge())
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
    let db = http_edge::Edge::of(req.request())?.db.clone();
    let Some(token) = db
        .read_primary(move |c| tokens::service::authenticate(c, &raw))
        .await?
    else {
        return Ok(refuse(
            req,
            unauthorized("The bearer token is unknown, revoked or expired."),
        ));
    };
    let refusal = match needs.access {
        Access::ManageTokens if token.scope != tokens::Scope::Admin => Some(format!(
            "Managing tokens needs a token with scope admin (or the operator key); this one has \
             scope {}.",
            token.scope
        )),
        Access::ManageTokens if needs.user_id != token.user_id => {
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
    record_use(&db, token).await;
    Ok(next.call(req).await?.map_into_boxed_body())
}

/// Records a valid token's use (`last_used_at`), at most once a minute per token
/// ([`tokens::Token::needs_touch_now`]). A failure is logged and does not fail the request it
/// serves.
pub async fn record_use(db: &Db, token: tokens::Token) {
    if !token.needs_touch_now() {
        return;
    }
    let id = token.id;
    if let Err(err) = db.write(move |c| tokens::service::touch(c, &token)).await {
        log::warn!("cannot record the use of token {id}: {err}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(method: &Method, path: &str) -> Access {
        needs(method, path).access
    }

    fn needs(method: &Method, path: &str) -> Needs {
        super::needs(&crate::routes::rules(), method, path)
    }

    #[test]
    fn deny_by_default_with_a_public_allow_list() {
        let public = [
            (Method::GET, "/"),
            (Method::GET, "/health"),
            (Method::GET, "/problems/not-found"),
            (Method::GET, "/openapi.json"),
            (Method::GET, "/docs"),
            (Method::GET, "/docs/index.html"),
            (Method::GET, "/favicon.ico"),
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
        let manage = |user_id| Needs {
            access: Access::ManageTokens,
            user_id,
        };
        assert_eq!(needs(&Method::POST, "/users/7/tokens"), manage(7));
        assert_eq!(needs(&Method::DELETE, "/users/7/tokens/3"), manage(7));
        assert_eq!(needs(&Method::POST, "/users/x/tokens/3/rotate"), manage(0));
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

    #[actix_web::test]
    async fn every_documented_operation_has_a_declared_rule() {
        let doc = crate::openapi::generate().await;
        let rules = crate::routes::rules();
        let mut operations = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                let Ok(method) = Method::from_bytes(method.to_uppercase().as_bytes()) else {
                    continue;
                };
                operations += 1;
                assert!(
                    rules.declared(&method, path).is_some(),
                    "{method} {path}: no access rule beside its route"
                );
            }
        }
        assert!(operations > 40, "{operations} operations read");
        for path in ["/openapi.json", "/docs", "/docs/index.html"] {
            assert_eq!(
                rules.declared(&Method::GET, path).map(|(access, _)| access),
                Some(Access::Public)
            );
        }
    }

    #[test]
    fn the_rate_limit_skips_the_probes_and_the_token_routes() {
        let rules = crate::routes::rules();
        for path in [
            "/health",
            "/health/live",
            "/health/ready",
            "/users",
            "/users/1/tokens",
            "/users/1/tokens/2/rotate",
            "/tokens/verify",
        ] {
            assert!(!rules.metered(path), "{path}");
        }
        for path in [
            "/notes",
            "/health/",
            "/healthz",
            "/v1/notes",
            "/accounts/a/events",
        ] {
            assert!(rules.metered(path), "{path}");
        }
    }
}
