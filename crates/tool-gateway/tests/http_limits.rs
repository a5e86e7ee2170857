//! The HTTP transport's bounds: `Origin` is validated (loopback only by default), and live
//! sessions are capped with a 503 and `Retry-After` beyond the cap.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::stub::Stub;
use serde_json::{Value, json};
use tool_catalog::{BaseUrl, Catalog};
use tool_gateway::{
    BearerToken, ClientTokens, Gateway, GatewayConfig, HttpLimits, Selection, router,
};

const CATALOG: &str = r#"{"tools": [
  {"name": "list_notes", "title": "List", "description": "", "safety": "read",
   "source": {"type": "openapi", "operationId": "list_notes", "method": "GET", "path": "/notes"},
   "inputSchema": {"type": "object"}}
]}"#;

/// Serves the gateway's router on a free port; returns its `/mcp` URL.
async fn serve(limits: HttpLimits) -> String {
    let gateway = Gateway::new(GatewayConfig {
        catalog: Catalog::from_json_str(CATALOG),
        base_url: BaseUrl::parse("http://127.0.0.1:9").unwrap(),
        bearer: BearerToken::new(None),
        selection: Selection::default(),
        openapi: None,
    })
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router(gateway, &limits)).await });
    url
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "http-limits", "version": "0"}
    }})
}

async fn post(url: &str, origin: Option<&str>) -> reqwest::Response {
    post_with(url, origin, None).await
}

async fn post_with(url: &str, origin: Option<&str>, bearer: Option<&str>) -> reqwest::Response {
    let mut req = reqwest::Client::new()
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .json(&initialize());
    if let Some(origin) = origin {
        req = req.header("Origin", origin);
    }
    if let Some(bearer) = bearer {
        req = req.header("Authorization", format!("Bearer {bearer}"));
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn only_loopback_origins_are_accepted_by_default() {
    let url = serve(HttpLimits::default()).await;
    for origin in [
        "https://evil.example",
        "http://localhost.evil.example",
        "null",
    ] {
        let status = post(&url, Some(origin)).await.status();
        assert_eq!(status, 403, "{origin}");
    }
    for origin in [
        Some("http://localhost:5173"),
        Some("http://127.0.0.1:8080"),
        None,
    ] {
        let status = post(&url, origin).await.status();
        assert_eq!(status, 200, "{origin:?}");
    }
}

#[tokio::test]
async fn configured_origins_replace_the_default() {
    let url = serve(HttpLimits {
        allowed_origins: vec!["https://app.example:443".to_owned()],
        ..HttpLimits::default()
    })
    .await;
    assert_eq!(post(&url, Some("https://app.example")).await.status(), 200);
    assert_eq!(
        post(&url, Some("http://localhost:5173")).await.status(),
        403
    );
}

#[tokio::test]
async fn sessions_beyond_the_cap_are_refused_until_one_ends() {
    let url = serve(HttpLimits {
        max_sessions: 2,
        ..HttpLimits::default()
    })
    .await;
    let mut sessions = Vec::new();
    for _ in 0..2 {
        let res = post(&url, None).await;
        assert_eq!(res.status(), 200);
        sessions.push(res.headers()["mcp-session-id"].to_str().unwrap().to_owned());
    }
    let refused = post(&url, None).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "5");
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32000, "{body}");
    // Ending a session (DELETE with its id) makes room for a new one.
    let ended = reqwest::Client::new()
        .delete(&url)
        .header("Mcp-Session-Id", &sessions[0])
        .header("MCP-Protocol-Version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert!(ended.status().is_success(), "{}", ended.status());
    assert_eq!(post(&url, None).await.status(), 200);
}

/// With client authentication on, each request's bearer token goes to the service's
/// `POST /tokens/verify` (a stub here) before anything else: valid passes, invalid or missing
/// is 401 with a challenge, an unreachable token service is 503.
#[tokio::test]
async fn client_tokens_are_verified_by_the_service() {
    for (answer, token, want) in [
        (
            r#"{"valid":true,"user_id":1,"scope":"read"}"#,
            Some("good"),
            200,
        ),
        (
            r#"{"valid":false,"user_id":1,"scope":"read"}"#,
            Some("revoked"),
            401,
        ),
        (r#"{"valid":true,"user_id":1,"scope":"read"}"#, None, 401),
    ] {
        let service = Stub::start("200 OK", "application/json", answer, "").await;
        let url = serve(HttpLimits {
            client_tokens: Some(ClientTokens::new(&service.base_url).unwrap()),
            ..HttpLimits::default()
        })
        .await;
        let res = post_with(&url, None, token).await;
        assert_eq!(res.status(), want, "{answer} {token:?}");
        if want == 401 {
            assert_eq!(res.headers()["www-authenticate"], "Bearer");
        }
        let sent = service.taken();
        match token {
            Some(token) => {
                assert_eq!(sent.len(), 1);
                assert_eq!(sent[0].target, "/tokens/verify");
                let body: Value = serde_json::from_slice(&sent[0].body).unwrap();
                assert_eq!(body, json!({"token": token}));
            }
            None => assert!(sent.is_empty(), "nothing to verify"),
        }
    }
    let unreachable = serve(HttpLimits {
        client_tokens: Some(ClientTokens::new("http://127.0.0.1:9").unwrap()),
        ..HttpLimits::default()
    })
    .await;
    assert_eq!(post_with(&unreachable, None, Some("t")).await.status(), 503);
}

/// Without client authentication the gateway listens on loopback only: asked for any other
/// address it stops at start-up with one line saying what to add.
#[test]
fn a_non_loopback_address_needs_client_authentication() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog.json");
    std::fs::write(&catalog, CATALOG).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tool-gateway"))
        .args([
            "--catalog",
            catalog.to_str().unwrap(),
            "--http",
            "0.0.0.0:0",
        ])
        .env_remove("MCP_CLIENT_AUTH")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--client-auth tokens"), "{stderr}");
    assert!(out.stdout.is_empty(), "it never listened");
}
