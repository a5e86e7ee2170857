//! End to end: the gateway binary over stdio and over streamable HTTP, in front of the real
//! service (fresh SQLite database, random port), with the shipped catalog and with invalid ones.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::mcp::{HttpGateway, ServerProcess, StdioGateway, repo_file};
use serde_json::{Value, json};

const TOKEN: &str = "gateway-test-token";

fn call(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

/// The structured content of a successful JSON-RPC tools/call answer.
fn structured(response: &Value) -> &Value {
    assert!(response.get("error").is_none(), "{response}");
    &response["result"]["structuredContent"]
}

async fn note_count(server: &ServerProcess) -> u64 {
    server.get_json("/notes").await["total"].as_u64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_lifecycle_list_and_errors() {
    let server = ServerProcess::start().await;
    let catalog = repo_file("catalog/tools.json");
    let mut gw = StdioGateway::start(&catalog, &server.base_url, None);

    let init = gw.initialize();
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    assert_eq!(init["serverInfo"]["name"], "tool-gateway");

    assert_eq!(gw.request("ping", json!({}))["result"], json!({}));
    assert_eq!(
        gw.request("no/such/method", json!({}))["error"]["code"],
        -32601
    );

    let list = gw.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    let shipped: Value = serde_json::from_str(&std::fs::read_to_string(&catalog).unwrap()).unwrap();
    let names: Vec<_> = tools.iter().map(|t| t["name"].clone()).collect();
    let expected: Vec<_> = shipped["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(names, expected, "catalog order");
    for (listed, entry) in tools.iter().zip(shipped["tools"].as_array().unwrap()) {
        assert_eq!(listed["title"], entry["title"]);
        assert_eq!(listed["description"], entry["description"]);
        assert_eq!(
            listed["inputSchema"], entry["inputSchema"],
            "schema passes through"
        );
        assert_eq!(
            listed["annotations"],
            json!({
                "readOnlyHint": entry["safety"] == "read",
                "destructiveHint": entry["source"]["method"] == "DELETE",
                "idempotentHint": entry["source"]["method"] == "PUT"
                    || entry["source"]["method"] == "DELETE",
                "openWorldHint": false,
            })
        );
    }

    // Unknown tool and bad arguments: -32602.
    let unknown = gw.request("tools/call", call("no_such_tool", json!({})));
    assert_eq!(unknown["error"]["code"], -32602);
    let bad = gw.request("tools/call", call("get_note", json!({})));
    assert_eq!(bad["error"]["code"], -32602);

    // A read tool works without the token.
    let listed = gw.request("tools/call", call("list_notes", json!({"limit": 5})));
    let s = structured(&listed);
    assert_eq!(s["statusCode"], 200);
    assert_eq!(s["operationId"], "list_notes");
    assert_eq!(s["body"]["limit"], 5);
    assert!(s["requestId"].is_string());
    assert_eq!(listed["result"]["isError"], false);

    // A write tool without the token fails closed: nothing reaches the API.
    let refused = gw.request(
        "tools/call",
        call("create_note", json!({"title": "t", "body": "b"})),
    );
    assert_eq!(refused["result"]["isError"], true);
    let text = refused["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("SERVICE_MCP_BEARER_TOKEN"), "{text}");
    assert_eq!(note_count(&server).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_write_tools_with_the_token() {
    let server = ServerProcess::start().await;
    let mut gw = catalog_gateway(&server);

    let created = gw.request(
        "tools/call",
        call("create_note", json!({"title": "Hi", "body": "There"})),
    );
    let s = structured(&created);
    assert_eq!(s["statusCode"], 201, "{created}");
    assert_eq!(created["result"]["isError"], false);
    let id = s["body"]["id"].as_i64().unwrap();

    // The text content is the same JSON, pretty-printed.
    let text = created["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(&serde_json::from_str::<Value>(text).unwrap(), s);

    let got = gw.request("tools/call", call("get_note", json!({"note_id": id})));
    assert_eq!(structured(&got)["body"]["title"], "Hi");

    let updated = gw.request(
        "tools/call",
        call(
            "update_note",
            json!({"note_id": id, "title": "Hi2", "body": "There2"}),
        ),
    );
    assert_eq!(structured(&updated)["body"]["title"], "Hi2");

    let invalid = gw.request(
        "tools/call",
        call("create_note", json!({"title": "", "body": ""})),
    );
    assert_eq!(invalid["result"]["isError"], true);
    let problem = &structured(&invalid)["body"];
    assert_eq!(problem["status"], 422);
    assert!(
        problem["type"]
            .as_str()
            .unwrap()
            .ends_with("/validation-failed")
    );
    assert!(problem["errors"].is_array());

    let deleted = gw.request("tools/call", call("delete_note", json!({"note_id": id})));
    assert_eq!(structured(&deleted)["statusCode"], 204);
    assert_eq!(structured(&deleted)["body"], Value::Null);

    let missing = gw.request("tools/call", call("get_note", json!({"note_id": id})));
    assert_eq!(missing["result"]["isError"], true);
    let problem = &structured(&missing)["body"];
    assert_eq!(problem["status"], 404);
    assert!(problem["detail"].is_string());
}

/// A client that sends the same tools/call again under the same JSON-RPC id (it lost the
/// answer) gets the first answer and one note; a new id is a new note.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_write_call_is_carried_out_once() {
    let server = ServerProcess::start().await;
    let mut gw = catalog_gateway(&server);
    let create = || call("create_note", json!({"title": "Once", "body": "only"}));
    let first = gw.request_with_id(json!("retry-1"), "tools/call", create());
    let again = gw.request_with_id(json!("retry-1"), "tools/call", create());
    assert_eq!(structured(&first)["statusCode"], 201);
    assert_eq!(structured(&again)["body"], structured(&first)["body"]);
    assert_eq!(note_count(&server).await, 1);
    let other = gw.request_with_id(json!("retry-2"), "tools/call", create());
    assert_ne!(
        structured(&other)["body"]["id"],
        structured(&first)["body"]["id"]
    );
    assert_eq!(note_count(&server).await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_transport_read_and_write_tools() {
    let server = ServerProcess::start().await;
    let catalog = repo_file("catalog/tools.json");

    let mut gw = HttpGateway::start(&catalog, &server.base_url, Some(TOKEN));
    let init = gw.initialize().await;
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    let list = gw.request("tools/list", json!({})).await;
    assert!(list["result"]["tools"].as_array().unwrap().len() >= 10);
    let created = gw
        .request("tools/call", call("create_tag", json!({"name": "rust"})))
        .await;
    assert_eq!(structured(&created)["statusCode"], 201, "{created}");
    let tags = gw.request("tools/call", call("list_tags", json!({}))).await;
    assert_eq!(structured(&tags)["body"]["total"], 1);
    assert_eq!(
        gw.request("no/such/method", json!({})).await["error"]["code"],
        -32601
    );

    // Without the token, over HTTP too: refused, nothing sent.
    let mut gw = HttpGateway::start(&catalog, &server.base_url, None);
    gw.initialize().await;
    let refused = gw
        .request(
            "tools/call",
            call("create_note", json!({"title": "t", "body": "b"})),
        )
        .await;
    assert_eq!(refused["result"]["isError"], true);
    assert_eq!(note_count(&server).await, 0);
}

/// An invalid catalog never stops the gateway: every tools/list and tools/call answers
/// -32603 `tool catalog is invalid: ...` with no path, line number or serde text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_catalogs_answer_json_rpc_errors_without_internals() {
    let entry = |name: &str, safety: &str, source_type: &str| {
        json!({"name": name, "title": "T", "description": "D", "safety": safety,
               "source": {"type": source_type, "operationId": "health", "method": "GET", "path": "/health"},
               "inputSchema": {"type": "object"}})
    };
    let cases: Vec<(&str, String, &str)> = vec![
        ("invalid JSON", "{\"tools\": [".to_owned(), "not valid JSON"),
        (
            "duplicate names",
            json!({"tools": [entry("a", "read", "openapi"), entry("a", "read", "openapi")]})
                .to_string(),
            "tools[1] (name \"a\"): field \"name\" repeats",
        ),
        (
            "missing fields",
            json!({"tools": [{"name": "a", "title": "T"}]}).to_string(),
            "field \"description\" is missing",
        ),
        (
            "bad safety",
            json!({"tools": [entry("a", "dangerous", "openapi")]}).to_string(),
            "field \"safety\"",
        ),
        (
            "bad source type",
            json!({"tools": [entry("a", "read", "graphql")]}).to_string(),
            "field \"source.type\"",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (case, text, expected) in cases {
        let path = dir.path().join("secret-dir-catalog.json");
        std::fs::write(&path, text).unwrap();
        let mut gw = StdioGateway::start(&path, "http://127.0.0.1:9", Some(TOKEN));
        gw.initialize();
        for response in [
            gw.request("tools/list", json!({})),
            gw.request("tools/call", call("a", json!({}))),
        ] {
            let error = &response["error"];
            assert_eq!(error["code"], -32603, "{case}: {response}");
            let message = error["message"].as_str().unwrap();
            assert!(
                message.starts_with("tool catalog is invalid: "),
                "{case}: {message}"
            );
            assert!(message.contains(expected), "{case}: {message}");
            let all = response.to_string();
            for leak in ["secret-dir", ".json", "line ", "column", "/tmp", "panicked"] {
                assert!(!all.contains(leak), "{case}: {all}");
            }
        }
    }
    // A catalog file that does not exist reads like invalid JSON, without its path.
    let mut gw = StdioGateway::start(&dir.path().join("nope.json"), "http://127.0.0.1:9", None);
    gw.initialize();
    let response = gw.request("tools/list", json!({}));
    assert_eq!(response["error"]["code"], -32603);
    assert!(!response.to_string().contains("nope"));
}

/// The safety label never changes what is sent: with `API_AUTH=tokens` on the service, a read
/// tool goes out without the gateway's token and the API's 401 problem comes back whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_tools_never_send_the_token_even_to_protected_routes() {
    let server = ServerProcess::start_with(&[("API_AUTH", "tokens")]).await;
    let mut gw = catalog_gateway(&server);
    let listed = gw.request("tools/call", call("list_notes", json!({})));
    assert_eq!(listed["result"]["isError"], true, "{listed}");
    let s = structured(&listed);
    assert_eq!(s["statusCode"], 401);
    assert_eq!(s["body"]["status"], 401);
    assert!(
        s["body"]["type"]
            .as_str()
            .unwrap()
            .ends_with("/unauthorized"),
        "{s}"
    );

    // A write tool does send it; this one is not a token the service issued, so 401 as well.
    let created = gw.request(
        "tools/call",
        call("create_note", json!({"title": "t", "body": "b"})),
    );
    assert_eq!(structured(&created)["statusCode"], 401);
}

/// Each listed tool's `outputSchema`, compiled, by name. Every tool whose catalog entry has a
/// `responseSchemaRef` has one (the gateway read the service's OpenAPI document at start), and
/// none other.
fn output_schemas(
    gw: &mut StdioGateway,
) -> std::collections::HashMap<String, jsonschema::Validator> {
    let list = gw.request("tools/list", json!({}));
    let shipped: Value =
        serde_json::from_str(&std::fs::read_to_string(repo_file("catalog/tools.json")).unwrap())
            .unwrap();
    let mut validators = std::collections::HashMap::new();
    for (listed, entry) in list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .zip(shipped["tools"].as_array().unwrap())
    {
        let name = listed["name"].as_str().unwrap();
        let Some(schema) = listed.get("outputSchema") else {
            assert!(
                entry["responseSchemaRef"].is_null(),
                "{name} has no outputSchema"
            );
            continue;
        };
        assert!(!entry["responseSchemaRef"].is_null(), "{name}");
        let validator = jsonschema::draft202012::new(schema)
            .unwrap_or_else(|e| panic!("{name}: the outputSchema does not compile: {e}"));
        validators.insert(name.to_owned(), validator);
    }
    assert_eq!(
        validators.len(),
        29,
        "32 tools, 3 of them deletes without a body"
    );
    validators
}

/// The tools of the other areas reach their routes (articles, versioned notes, accounts,
/// token verification), and every answer, success or problem, is valid against the tool's
/// `outputSchema`, as a client that checks `structuredContent` requires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_of_every_area_reach_their_routes() {
    let key = "gateway-e2e-webhook-signing-key-0123456789abcdef";
    let server = ServerProcess::start_with(&[
        ("WEBHOOK_SIGNING_KEY", key),
        ("WEBHOOK_ENDPOINT_ALLOW", "127.0.0.1"),
        ("WEBHOOK_RETRY_BASE_MS", "100"),
    ])
    .await;
    let own_intake = format!("{}/webhook", server.base_url);
    let mut gw = catalog_gateway(&server);
    let schemas = output_schemas(&mut gw);
    let mut status = |name: &str, args: Value| {
        let response = gw.request("tools/call", call(name, args));
        let s = structured(&response).clone();
        if let Some(schema) = schemas.get(name) {
            let errors: Vec<String> = schema.iter_errors(&s).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{name}: {errors:?}\n{s}");
        }
        (s["statusCode"].as_u64().unwrap(), s["body"].clone())
    };
    // Every tool with a body schema, once (errors included: an unknown id is a 404 problem).
    for (name, args) in [
        ("health", json!({})),
        ("list_notes", json!({"limit": 2})),
        ("get_note", json!({"note_id": 999})),
        ("list_tags", json!({})),
        ("get_tag", json!({"tag_id": 999})),
        ("list_comments", json!({"note_id": 999})),
        ("get_comment", json!({"note_id": 999, "comment_id": 1})),
        ("get_account", json!({"id": "nobody"})),
    ] {
        assert!(status(name, args).0 < 500, "{name}");
    }
    let (code, note) = status("create_note", json!({"title": "N", "body": "b"}));
    assert_eq!(code, 201);
    let note_id = note["id"].clone();
    assert_eq!(status("get_note", json!({"note_id": note_id})).0, 200);
    assert_eq!(
        status(
            "update_note",
            json!({"note_id": note_id, "title": "M", "body": "c"})
        )
        .0,
        200
    );
    let (code, comment) = status("create_comment", json!({"note_id": note_id, "body": "hi"}));
    assert_eq!(code, 201);
    let comment_id = comment["id"].clone();
    for (name, args) in [
        (
            "get_comment",
            json!({"note_id": note_id, "comment_id": comment_id}),
        ),
        (
            "update_comment",
            json!({"note_id": note_id, "comment_id": comment_id, "body": "yo"}),
        ),
        ("list_comments", json!({"note_id": note_id})),
    ] {
        assert_eq!(status(name, args).0, 200, "{name}");
    }
    let (code, tag) = status("create_tag", json!({"name": "t1"}));
    assert_eq!(code, 201);
    for (name, args) in [
        ("get_tag", json!({"tag_id": tag["id"]})),
        ("update_tag", json!({"tag_id": tag["id"], "name": "t2"})),
        ("list_tags", json!({})),
    ] {
        assert_eq!(status(name, args).0, 200, "{name}");
    }
    assert_eq!(
        status("create_note", json!({"title": "", "body": "b"})).0,
        422,
        "a 422 problem is valid too"
    );
    assert_eq!(
        status("create_article", json!({"title": "A", "author": "B"})).0,
        201
    );
    let (code, page) = status("list_articles_offset", json!({"limit": 5}));
    assert_eq!((code, page["total"].clone()), (200, json!(1)));
    assert_eq!(status("list_articles_cursor", json!({})).0, 200);

    let (code, created) = status("create_note_v2", json!({"title": "V2", "tags": ["x"]}));
    assert_eq!(code, 201);
    let id = created["data"]["id"].clone();
    assert_eq!(
        status("get_note_v2", json!({"id": id})).1["data"]["tags"],
        json!(["x"])
    );
    assert_eq!(status("list_notes_v2", json!({})).0, 200);

    // An endpoint for the account events below: the service's own intake, which refuses
    // them (no intake signature), so its log fills with failed attempts.
    let (code, endpoint) = status("create_webhook_endpoint", json!({"url": own_intake}));
    assert_eq!(code, 201, "{endpoint}");
    assert!(endpoint["secret"].as_str().unwrap().starts_with("whsec_"));
    let endpoint_id = endpoint["id"].to_string();
    assert_eq!(status("list_webhook_endpoints", json!({})).1["total"], 1);
    assert_eq!(
        status(
            "open_account",
            json!({"account_id": "acc-1", "owner": "Ann"})
        )
        .0,
        201
    );
    let deposit =
        json!({"id": "acc-1", "event_type": "MoneyDeposited", "payload": {"amount_cents": 500}});
    assert_eq!(status("append_event", deposit).0, 201);
    assert_eq!(
        status("get_account", json!({"id": "acc-1"})).1["balance_cents"],
        500
    );
    assert_eq!(status("list_events", json!({"id": "acc-1"})).1["total"], 2);
    assert_eq!(
        status(
            "open_account",
            json!({"account_id": "acc-2", "owner": "Bob"})
        )
        .0,
        201
    );
    let (code, transfer) = status(
        "create_transfer",
        json!({"from": "acc-1", "to": "acc-2", "amount_cents": 200}),
    );
    assert_eq!(code, 201, "{transfer}");
    assert_eq!(transfer["deposited"]["aggregate_id"], "acc-2");
    assert_eq!(
        status("get_account", json!({"id": "acc-2"})).1["balance_cents"],
        200
    );
    assert_eq!(
        status(
            "create_transfer",
            json!({"from": "acc-1", "to": "acc-2", "amount_cents": 1_000_000})
        )
        .0,
        422,
        "an overdraft is refused whole"
    );

    let mut attempts = Value::Null;
    for _ in 0..100 {
        let (code, log) = status("list_webhook_deliveries", json!({"id": endpoint_id}));
        assert_eq!(code, 200);
        if log["total"].as_i64().unwrap() > 0 {
            attempts = log;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let first = &attempts["items"][0];
    assert_eq!(first["response_status"], 401, "{attempts}");
    let args = json!({"id": endpoint_id, "delivery_id": first["id"]});
    let (code, again) = status("redeliver_webhook", args);
    assert_eq!(
        (code, again["manual"].clone()),
        (201, json!(true)),
        "{again}"
    );

    let (code, verified) = status("verify_token", json!({"token": "not-a-token"}));
    assert!(code < 500, "{code}");
    assert_eq!(verified["valid"], false);
}

/// The gateway over the repository's catalog, with the write token, initialized.
fn catalog_gateway(server: &ServerProcess) -> StdioGateway {
    let mut gw = StdioGateway::start(
        &repo_file("catalog/tools.json"),
        &server.base_url,
        Some(TOKEN),
    );
    gw.initialize();
    gw
}
