//! `--client-auth tokens` against the real service: a client's own token decides what it may
//! do through the gateway. A read-scope token calls read tools only (a write tool answers
//! `isError` and nothing is sent, although the gateway's own bearer could write); two clients'
//! stateless calls with the same JSON-RPC id are two writes; a client's retry of one call is
//! one; and a session belongs to the user who opened it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::mcp::{HttpGateway, ServerProcess, repo_file};
use serde_json::{Value, json};

/// A user of the service and one token of `scope`, made through its API (API_AUTH=off: the
/// token routes know the user by X-User-Id).
async fn token(server: &ServerProcess, name: &str, scope: &str) -> String {
    let http = reqwest::Client::new();
    let user: Value = http
        .post(format!("{}/users", server.base_url))
        .json(&json!({"name": name}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = user["id"].as_i64().unwrap();
    let issued: Value = http
        .post(format!("{}/users/{id}/tokens", server.base_url))
        .header("X-User-Id", id.to_string())
        .json(&json!({"scope": scope}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    issued["token"].as_str().unwrap().to_owned()
}

fn gateway(server: &ServerProcess) -> HttpGateway {
    HttpGateway::start_with(
        &repo_file("catalog/tools.json"),
        &server.base_url,
        Some("the-gateways-own-bearer"),
        &["--client-auth", "tokens"],
    )
}

/// One stateless (protocol 2026-07-28) `tools/call` as `bearer`, under JSON-RPC `id`.
async fn stateless_call(url: &str, bearer: &str, id: Value, tool: &str, arguments: Value) -> Value {
    let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": tool,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        }
    }});
    let text = reqwest::Client::new()
        .post(url)
        .bearer_auth(bearer)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", tool)
        .json(&message)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .chain(std::iter::once(text.as_str()))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|v| v["id"] == message["id"])
        .unwrap_or_else(|| panic!("no answer: {text}"))
}

async fn balance(server: &ServerProcess, account: &str) -> i64 {
    let account = server.get_json(&format!("/accounts/{account}")).await;
    account["balance_cents"].as_i64().unwrap()
}

async fn note_total(server: &ServerProcess) -> i64 {
    server.get_json("/notes").await["total"].as_i64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_token_calls_read_tools_only() {
    let server = ServerProcess::start().await;
    let read = token(&server, "reader", "read").await;
    let write = token(&server, "writer", "write").await;
    let gw = gateway(&server);
    let note = json!({"title": "t", "body": "b"});
    let refused = stateless_call(&gw.url, &read, json!(1), "create_note", note.clone()).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let text = refused["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("scope") && text.contains("No request was sent"),
        "{text}"
    );
    assert_eq!(note_total(&server).await, 0, "nothing was written");
    let listed = stateless_call(&gw.url, &read, json!(2), "list_notes", json!({})).await;
    assert_eq!(
        listed["result"]["structuredContent"]["statusCode"], 200,
        "{listed}"
    );
    let made = stateless_call(&gw.url, &write, json!(1), "create_note", note).await;
    assert_eq!(
        made["result"]["structuredContent"]["statusCode"], 201,
        "{made}"
    );
    assert_eq!(note_total(&server).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_never_share_a_retry_key() {
    let server = ServerProcess::start().await;
    let ann = token(&server, "ann", "write").await;
    let bob = token(&server, "bob", "write").await;
    let gw = gateway(&server);
    let open = stateless_call(
        &gw.url,
        &ann,
        json!(1),
        "open_account",
        json!({"account_id": "shared", "owner": "both"}),
    )
    .await;
    assert_eq!(
        open["result"]["structuredContent"]["statusCode"], 201,
        "{open}"
    );
    let deposit =
        json!({"id": "shared", "event_type": "MoneyDeposited", "payload": {"amount_cents": 100}});
    // Both clients send JSON-RPC id 7 with the same arguments: two deposits.
    let mut sequences = Vec::new();
    for bearer in [&ann, &bob] {
        let answer =
            stateless_call(&gw.url, bearer, json!(7), "append_event", deposit.clone()).await;
        let structured = &answer["result"]["structuredContent"];
        assert_eq!(structured["statusCode"], 201, "{answer}");
        sequences.push(structured["body"]["sequence"].clone());
    }
    assert_ne!(sequences[0], sequences[1]);
    assert_eq!(balance(&server, "shared").await, 200);
    // One client's retry of its own call (same id, same arguments): the first answer again.
    let retry = stateless_call(&gw.url, &ann, json!(7), "append_event", deposit).await;
    assert_eq!(
        retry["result"]["structuredContent"]["body"]["sequence"],
        sequences[0]
    );
    assert_eq!(balance(&server, "shared").await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_belongs_to_the_user_who_opened_it() {
    let server = ServerProcess::start().await;
    let ann = token(&server, "ann", "read").await;
    let bob = token(&server, "bob", "admin").await;
    let mut gw = gateway(&server);
    gw.bearer = ann.clone();
    gw.initialize().await;
    let session = gw.session.clone().unwrap();
    let listed = gw.request("tools/list", json!({})).await;
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    // Bob's token on Ann's session: as if the session did not exist.
    let res = reqwest::Client::new()
        .post(&gw.url)
        .bearer_auth(&bob)
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", &session)
        .header("MCP-Protocol-Version", "2025-11-25")
        .json(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    // Ann goes on.
    let again = gw.request("tools/list", json!({})).await;
    assert!(again["result"]["tools"].is_array(), "{again}");
}
