//! Streamable HTTP transport: rmcp's tower service mounted at `/mcp` in axum.
//!
//! What a browser page or a flood of clients may do to it is bounded:
//! - `Origin` is validated (the MCP transport specification requires it against DNS rebinding
//!   and cross-site requests): by default only loopback origins (`http://localhost:*`,
//!   `http://127.0.0.1:*`, `http://[::1]:*`, and their `https` forms) are accepted;
//!   `--allowed-origin` replaces the list. A request without `Origin` (not a browser) passes.
//!   Only loopback `Host` headers are accepted (rmcp's DNS-rebinding guard).
//! - Live sessions are capped ([`HttpLimits::max_sessions`], 256 by default): a new session
//!   beyond the cap is refused with 503 and `Retry-After` before rmcp creates it; 5,000
//!   `initialize` calls used to take the gateway from 9 MB to 261 MB.
//! - An idle session ends after [`HttpLimits::idle_session`] (60 s by default, rmcp's is 5 min),
//!   and a session that never finishes its `initialize` after 10 s.
//! - With [`ClientTokens`], every request needs a bearer token that the notes service verifies
//!   (`--client-auth tokens`); without it the gateway refuses to listen on a non-loopback
//!   address (`main.rs`). What the service says of the token travels with the request as a
//!   [`Client`]: write tools run only for a `write` or `admin` token, the retry keys of its
//!   calls are its own, and a session belongs to the user who opened it (another user's token
//!   on it is 404, as for a session that does not exist).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::Gateway;

/// Origins a browser page may call the gateway from when none are configured.
pub const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// The bounds of the HTTP transport.
#[derive(Debug, Clone)]
pub struct HttpLimits {
    /// Browser origins accepted in `Origin` (scheme, host and port; `:*` for any port).
    pub allowed_origins: Vec<String>,
    pub max_sessions: usize,
    pub idle_session: Duration,
    /// When set, every request must carry `Authorization: Bearer <token>` that this service's
    /// `POST /tokens/verify` finds valid, before any tool is listed or called.
    pub client_tokens: Option<ClientTokens>,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            allowed_origins: LOOPBACK_ORIGINS.iter().map(|o| (*o).to_owned()).collect(),
            max_sessions: 256,
            idle_session: Duration::from_secs(60),
            client_tokens: None,
        }
    }
}

/// The gateway's own clients authenticate with area D tokens: each request's bearer value is
/// checked by the notes service's `POST /tokens/verify` (no cache, so a revoked token is
/// refused from the next request on). The MCP client's token is only checked, never forwarded
/// to the API.
#[derive(Debug, Clone)]
pub struct ClientTokens {
    verify_url: String,
    client: reqwest::Client,
}

impl ClientTokens {
    /// Verifies through `{base_url}/tokens/verify`.
    pub fn new(base_url: &str) -> reqwest::Result<ClientTokens> {
        Ok(ClientTokens {
            verify_url: format!("{}/tokens/verify", base_url.trim_end_matches('/')),
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy()
                .timeout(crate::REQUEST_TIMEOUT)
                .build()?,
        })
    }

    /// The client the token belongs to, when the service calls it valid.
    async fn verify(&self, token: &str) -> Result<Option<Client>, reqwest::Error> {
        let answer: serde_json::Value = self
            .client
            .post(&self.verify_url)
            .json(&serde_json::json!({ "token": token }))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        if answer["valid"] != serde_json::Value::Bool(true) {
            return Ok(None);
        }
        Ok(answer["user_id"].as_i64().map(|user_id| Client {
            user_id,
            may_write: matches!(answer["scope"].as_str(), Some("write" | "admin")),
            key: client_key(token),
        }))
    }

    async fn check(&self, token: Option<String>) -> Result<Client, Response> {
        let Some(token) = token else {
            return Err(refusal(
                StatusCode::UNAUTHORIZED,
                "a bearer token is required",
            ));
        };
        match self.verify(&token).await {
            Ok(Some(client)) => Ok(client),
            Ok(None) => Err(refusal(
                StatusCode::UNAUTHORIZED,
                "the bearer token is unknown, revoked or expired",
            )),
            Err(error) => {
                log::warn!("cannot verify a client token: {error}");
                Err(refusal(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the token service is unavailable; retry later",
                ))
            }
        }
    }
}

/// A client of the HTTP transport, as the service verified its token; in the request's
/// extensions, where `tools/call` finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    pub user_id: i64,
    /// The token's scope is `write` or `admin`.
    pub may_write: bool,
    /// Who this client is in retry keys: a digest of its token, never the token.
    pub key: String,
}

/// A client's part of its calls' Idempotency-Keys: 16 bytes of its token's SHA-256.
fn client_key(token: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(token.as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// Which user opened each live session (with client authentication on).
#[derive(Debug, Default)]
struct Owners(Mutex<HashMap<String, i64>>);

impl Owners {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, i64>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The credentials of `Authorization: Bearer <token>` (scheme name case-insensitive).
fn bearer(req: &Request) -> Option<String> {
    req.headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, token)| scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty())
        .map(|(_, token)| token.trim().to_owned())
}

/// A JSON-RPC error body with an HTTP status (and the challenge of a 401).
fn refusal(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32001, "message": message}
    });
    let mut res = (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response();
    if status == StatusCode::UNAUTHORIZED {
        res.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    res
}

/// The axum router: `POST /mcp` (and the streamable HTTP `GET`/`DELETE` on the same path).
///
/// Sessions are kept for clients on protocol versions before 2026-07-28; 2026-07-28 requests
/// are served statelessly (rmcp decides per request).
pub fn router(gateway: Gateway, limits: &HttpLimits) -> axum::Router {
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(limits.idle_session);
    manager.session_config.init_timeout = Some(Duration::from_secs(10));
    let sessions = Arc::new(manager);
    let config = StreamableHttpServerConfig::default()
        .with_allowed_origins(limits.allowed_origins.iter().cloned())
        .enforce_origin_validation();
    let service = StreamableHttpService::new(move || Ok(gateway.clone()), sessions.clone(), config);
    let max = limits.max_sessions;
    let client_tokens = limits.client_tokens.clone();
    let owners = Arc::new(Owners::default());
    axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(
            move |mut req: Request, next: Next| {
                let sessions = sessions.clone();
                let client_tokens = client_tokens.clone();
                let owners = owners.clone();
                async move {
                    let client = match &client_tokens {
                        Some(tokens) => match tokens.check(bearer(&req)).await {
                            Ok(client) => Some(client),
                            Err(refused) => return refused,
                        },
                        None => None,
                    };
                    let session = req
                        .headers()
                        .get("mcp-session-id")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    if let (Some(client), Some(session)) = (&client, &session)
                        && owners
                            .lock()
                            .get(session)
                            .is_some_and(|u| *u != client.user_id)
                    {
                        return not_your_session();
                    }
                    if opens_a_session(&req) && sessions.sessions.read().await.len() >= max {
                        return too_many_sessions();
                    }
                    let user = client.as_ref().map(|c| c.user_id);
                    if let Some(client) = client {
                        req.extensions_mut().insert(client);
                    }
                    let res = next.run(req).await;
                    // A session this request opened belongs to its user.
                    if let (Some(user), None) = (user, session)
                        && let Some(opened) = res
                            .headers()
                            .get("mcp-session-id")
                            .and_then(|v| v.to_str().ok())
                    {
                        let live = sessions.sessions.read().await;
                        let mut owners = owners.lock();
                        owners.retain(|id, _| live.contains_key(id.as_str()));
                        owners.insert(opened.to_owned(), user);
                    }
                    res
                }
            },
        ))
}

/// Another user's session answers as one that does not exist.
fn not_your_session() -> Response {
    refusal(StatusCode::NOT_FOUND, "no such session")
}

/// A POST without `Mcp-Session-Id` may start a session (an `initialize` on a legacy protocol
/// version); every other request belongs to one that exists, or to none.
fn opens_a_session(req: &Request) -> bool {
    req.method() == Method::POST && !req.headers().contains_key("mcp-session-id")
}

fn too_many_sessions() -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32000, "message": "too many open sessions; retry later"}
    });
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (header::RETRY_AFTER, HeaderValue::from_static("5")),
        ],
        body.to_string(),
    )
        .into_response()
}

/// Serves [`router`] on `listener` until Ctrl-C.
pub async fn serve_http(
    gateway: Gateway,
    listener: tokio::net::TcpListener,
    limits: &HttpLimits,
) -> anyhow::Result<()> {
    use axum::serve::ListenerExt;
    // Answers are written in several small chunks (SSE priming event, then the message):
    // without TCP_NODELAY, Nagle's algorithm meets the client's delayed ACK (+40 ms a call).
    let listener = listener.tap_io(|tcp| {
        if let Err(error) = tcp.set_nodelay(true) {
            log::debug!("TCP_NODELAY: {error}");
        }
    });
    axum::serve(listener, router(gateway, limits))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
