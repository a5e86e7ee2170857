//! What the gateway sends for each kind of tool, checked byte by byte against a recording stub,
//! and that nothing is sent when a write tool has no token.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::stub::Stub;
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::{Value, json};
use tool_catalog::{BaseUrl, Catalog};
use tool_gateway::{Attempt, BearerToken, Gateway, GatewayConfig, Selection};

const CATALOG: &str = r#"{"tools": [
  {"name": "list_notes", "title": "List", "description": "", "safety": "read",
   "source": {"type": "openapi", "operationId": "list_notes", "method": "GET", "path": "/notes"},
   "inputSchema": {"type": "object"}},
  {"name": "get_note", "title": "Get", "description": "", "safety": "read",
   "source": {"type": "openapi", "operationId": "get_note", "method": "GET", "path": "/notes/{note_id}"},
   "inputSchema": {"type": "object"}},
  {"name": "create_note", "title": "Create", "description": "", "safety": "write",
   "source": {"type": "openapi", "operationId": "create_note", "method": "POST", "path": "/notes"},
   "inputSchema": {"type": "object"}},
  {"name": "update_note", "title": "Update", "description": "", "safety": "write",
   "source": {"type": "openapi", "operationId": "update_note", "method": "PUT", "path": "/notes/{note_id}"},
   "inputSchema": {"type": "object"}},
  {"name": "patch_note", "title": "Patch", "description": "", "safety": "write",
   "source": {"type": "openapi", "operationId": "patch_note", "method": "PATCH", "path": "/notes/{note_id}"},
   "inputSchema": {"type": "object"}},
  {"name": "delete_note", "title": "Delete", "description": "", "safety": "write",
   "source": {"type": "openapi", "operationId": "delete_note", "method": "DELETE", "path": "/notes/{note_id}"},
   "inputSchema": {"type": "object"}},
  {"name": "read_via_get_only", "title": "Read", "description": "", "safety": "write",
   "source": {"type": "openapi", "operationId": "read_private", "method": "GET", "path": "/private"},
   "inputSchema": {"type": "object"}}
]}"#;

const TOKEN: &str = "tok-abc123";

fn gateway(base_url: &str, token: Option<&str>) -> Gateway {
    Gateway::new(GatewayConfig {
        catalog: Catalog::from_json_str(CATALOG),
        base_url: BaseUrl::parse(base_url).unwrap(),
        bearer: BearerToken::new(token.map(str::to_owned)),
        selection: Selection::default(),
        openapi: None,
    })
    .unwrap()
}

fn args(value: Value) -> JsonObject {
    value.as_object().unwrap().clone()
}

fn structured(result: &CallToolResult) -> Value {
    result.structured_content.clone().unwrap()
}

async fn ok_stub() -> Stub {
    Stub::start(
        "200 OK",
        "application/json",
        r#"{"id":7,"title":"t","body":"b"}"#,
        "",
    )
    .await
}

#[tokio::test]
async fn read_tool_sends_get_with_query_and_no_credentials() {
    let stub = ok_stub().await;
    let result = gateway(&stub.base_url, Some(TOKEN))
        .call("list_notes", args(json!({"limit": 5, "offset": 10})))
        .await
        .unwrap();
    let sent = stub.taken();
    assert_eq!(sent.len(), 1);
    let r = &sent[0];
    assert_eq!(r.method, "GET");
    assert_eq!(r.target, "/notes?limit=5&offset=10");
    assert_eq!(r.header("accept"), Some("application/json"));
    assert_eq!(
        r.header("authorization"),
        None,
        "read tools never send the token"
    );
    assert_eq!(r.header("content-type"), None);
    assert_eq!(r.header("cookie"), None);
    assert!(r.body.is_empty());
    assert_eq!(result.is_error, Some(false));
    assert_eq!(
        structured(&result),
        json!({"tool": "list_notes", "operationId": "list_notes", "statusCode": 200,
               "requestId": "stub-1", "body": {"id": 7, "title": "t", "body": "b"}})
    );
}

/// Each API request carries a `traceparent`: the caller's trace continued as the gateway's own
/// span, or a new trace when the caller sent none (or an invalid one).
#[tokio::test]
async fn every_api_request_continues_or_starts_a_trace() {
    let stub = ok_stub().await;
    let gw = gateway(&stub.base_url, None);
    let attempt = Attempt {
        client: "anonymous".into(),
        session: "session-1".into(),
        request_id: "1".into(),
    };
    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    gw.call_as(
        "list_notes",
        JsonObject::new(),
        &attempt,
        None,
        Some(parent),
    )
    .await
    .unwrap();
    gw.call("list_notes", JsonObject::new()).await.unwrap();
    gw.call_as(
        "list_notes",
        JsonObject::new(),
        &attempt,
        None,
        Some("junk"),
    )
    .await
    .unwrap();
    let sent: Vec<String> = stub
        .taken()
        .iter()
        .map(|r| r.header("traceparent").unwrap().to_owned())
        .collect();
    let fields = |v: &str| v.split('-').map(str::to_owned).collect::<Vec<_>>();
    let continued = fields(&sent[0]);
    assert_eq!(continued[1], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_ne!(continued[2], "00f067aa0ba902b7", "the gateway's own span");
    assert_eq!(continued[3], "01");
    for started in &sent[1..] {
        let started = fields(started);
        assert_eq!(
            (started[0].len(), started[1].len(), started[2].len()),
            (2, 32, 16)
        );
        assert_ne!(started[1], continued[1]);
    }
    assert_ne!(fields(&sent[1])[1], fields(&sent[2])[1]);
}

#[tokio::test]
async fn content_text_is_the_pretty_structured_json() {
    let stub = ok_stub().await;
    let result = gateway(&stub.base_url, None)
        .call("get_note", args(json!({"note_id": 7})))
        .await
        .unwrap();
    let content = serde_json::to_value(&result.content).unwrap();
    assert_eq!(content[0]["type"], "text");
    let text = content[0]["text"].as_str().unwrap();
    assert!(text.contains('\n'), "pretty printed");
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        structured(&result)
    );
    assert_eq!(stub.taken()[0].target, "/notes/7");
}

#[tokio::test]
async fn path_values_are_percent_encoded_and_stay_on_the_host() {
    let stub = ok_stub().await;
    gateway(&stub.base_url, None)
        .call("get_note", args(json!({"note_id": "../../admin?x=1#f"})))
        .await
        .unwrap();
    assert_eq!(stub.taken()[0].target, "/notes/..%2F..%2Fadmin%3Fx%3D1%23f");
}

#[tokio::test]
async fn write_tools_send_json_bodies_and_the_bearer_token() {
    let stub = ok_stub().await;
    let gw = gateway(&stub.base_url, Some(TOKEN));
    gw.call("create_note", args(json!({"title": "T", "body": "B"})))
        .await
        .unwrap();
    gw.call(
        "update_note",
        args(json!({"note_id": 3, "title": "T2", "body": "B2"})),
    )
    .await
    .unwrap();
    gw.call("patch_note", args(json!({"note_id": 3, "title": "T3"})))
        .await
        .unwrap();
    gw.call("delete_note", args(json!({"note_id": 3})))
        .await
        .unwrap();
    let sent = stub.taken();
    assert_eq!(sent.len(), 4);
    let expected = [
        ("POST", "/notes", Some(json!({"title": "T", "body": "B"}))),
        (
            "PUT",
            "/notes/3",
            Some(json!({"title": "T2", "body": "B2"})),
        ),
        ("PATCH", "/notes/3", Some(json!({"title": "T3"}))),
        ("DELETE", "/notes/3", None),
    ];
    for (r, (method, target, body)) in sent.iter().zip(expected) {
        assert_eq!(r.method, method);
        assert_eq!(r.target, target);
        assert_eq!(r.header("authorization"), Some("Bearer tok-abc123"));
        assert_eq!(r.header("accept"), Some("application/json"));
        assert!(
            r.header("idempotency-key")
                .is_some_and(|k| k.starts_with("mcp-"))
        );
        match body {
            Some(body) => {
                assert_eq!(r.header("content-type"), Some("application/json"));
                assert_eq!(serde_json::from_slice::<Value>(&r.body).unwrap(), body);
            }
            None => {
                assert_eq!(r.header("content-type"), None, "{method} has no body");
                assert!(r.body.is_empty());
            }
        }
    }
}

/// Each call is its own attempt with its own key; the same attempt again (a client retrying the
/// same request id) sends the same key, so the API answers it once; reads send none.
#[tokio::test]
async fn write_tools_send_one_idempotency_key_per_attempt() {
    let stub = ok_stub().await;
    let gw = gateway(&stub.base_url, Some(TOKEN));
    let note = || args(json!({"title": "T", "body": "B"}));
    gw.call("create_note", note()).await.unwrap();
    gw.call("create_note", note()).await.unwrap();
    let attempt = Attempt {
        client: "anonymous".into(),
        session: "session-1".into(),
        request_id: "42".into(),
    };
    gw.call_as("create_note", note(), &attempt, None, None)
        .await
        .unwrap();
    gw.call_as("create_note", note(), &attempt, None, None)
        .await
        .unwrap();
    gw.call("list_notes", JsonObject::new()).await.unwrap();
    let keys: Vec<Option<String>> = stub
        .taken()
        .iter()
        .map(|r| r.header("idempotency-key").map(str::to_owned))
        .collect();
    assert_ne!(keys[0], keys[1], "two calls, two keys");
    assert_eq!(keys[2], keys[3], "a retried attempt keeps its key");
    assert_ne!(keys[2], keys[0]);
    assert_eq!(keys[4], None, "a read sends none");
}

#[tokio::test]
async fn write_tools_without_token_send_nothing() {
    let stub = ok_stub().await;
    let gw = gateway(&stub.base_url, None);
    for (name, a) in [
        ("create_note", json!({"title": "T", "body": "B"})),
        (
            "update_note",
            json!({"note_id": 1, "title": "T", "body": "B"}),
        ),
        ("delete_note", json!({"note_id": 1})),
        // A write-labelled GET is refused too: the label decides, not the method.
        ("read_via_get_only", json!({})),
    ] {
        let result = gw.call(name, args(a)).await.unwrap();
        assert_eq!(result.is_error, Some(true), "{name}");
        let text = serde_json::to_string(&result.content).unwrap();
        assert!(text.contains("SERVICE_MCP_BEARER_TOKEN"), "{name}: {text}");
    }
    assert!(stub.taken().is_empty(), "no request may be sent");
}

#[tokio::test]
async fn problem_bodies_come_back_whole_as_errors() {
    let problem = r#"{"type":"http://x/problems/unauthorized","title":"Unauthorized","status":401,"detail":"A bearer token is required."}"#;
    let stub = Stub::start(
        "401 Unauthorized",
        "application/problem+json",
        problem,
        "WWW-Authenticate: Bearer\r\n",
    )
    .await;
    let result = gateway(&stub.base_url, Some(TOKEN))
        .call("get_note", args(json!({"note_id": 1})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    let s = structured(&result);
    assert_eq!(s["statusCode"], 401);
    assert_eq!(s["body"], serde_json::from_str::<Value>(problem).unwrap());
    assert_eq!(stub.taken()[0].header("authorization"), None);
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let stub = Stub::start(
        "302 Found",
        "application/json",
        "{}",
        "Location: http://127.0.0.1:9/elsewhere\r\n",
    )
    .await;
    let result = gateway(&stub.base_url, None)
        .call("list_notes", JsonObject::new())
        .await
        .unwrap();
    assert_eq!(structured(&result)["statusCode"], 302);
    assert_eq!(result.is_error, Some(true));
    assert_eq!(stub.taken().len(), 1);
}

#[tokio::test]
async fn empty_204_bodies_are_null() {
    let stub = Stub::start("204 No Content", "application/json", "", "").await;
    let result = gateway(&stub.base_url, Some(TOKEN))
        .call("delete_note", args(json!({"note_id": 9})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false));
    assert_eq!(structured(&result)["body"], Value::Null);
    assert_eq!(structured(&result)["statusCode"], 204);
}

#[tokio::test]
async fn network_errors_are_tool_errors_without_internals() {
    // Port 9 (discard) on loopback: nothing listens, the connection is refused.
    let result = gateway("http://127.0.0.1:9", None)
        .call("list_notes", JsonObject::new())
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    let text = serde_json::to_string(&result.content).unwrap();
    assert!(text.contains("could not be reached"), "{text}");
    assert!(
        !text.contains("127.0.0.1") && !text.contains("os error"),
        "{text}"
    );
}
