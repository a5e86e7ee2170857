use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::api_tests;
use crate::helpers::{Backend, TestApp, json};
use server::auth::ApiAuth;

api_tests!(
    served_document_is_the_generated_one,
    every_documented_operation_answers_documented_statuses
);

#[tokio::test]
async fn committed_document_does_not_drift() {
    let generated = server::openapi::generate().await;
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json");
    let committed: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(
        generated == committed,
        "docs/openapi.json is stale: run `just openapi` (cargo run -p server -- openapi --out docs/openapi.json)"
    );
}

#[tokio::test]
async fn every_operation_has_a_stable_id() {
    let doc = server::openapi::generate().await;
    let mut ids = Vec::new();
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            let id = op["operationId"].as_str().unwrap().to_owned();
            assert!(
                id.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "hashed or odd operationId {id}"
            );
            ids.push(id);
        }
    }
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "operationIds are unique");
}

/// A default server (API_AUTH=off) serves the document of its mode: no operation asks for a
/// credential the server does not check (only the example routes' API key and JWT), and no
/// operation documents the token guard's refusals.
async fn served_document_is_the_generated_one(app: TestApp) {
    let served = json(app.get("/openapi.json").await, StatusCode::OK).await;
    assert_eq!(served, server::openapi::generate_for(ApiAuth::Off).await);
    let mut secured = Vec::new();
    for (path, item) in served["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if op["security"] != json!([]) {
                secured.push(format!("{method} {path}"));
            }
        }
    }
    secured.sort();
    assert_eq!(
        secured,
        ["get /examples/protected", "get /machine/health"],
        "only the routes that check a credential themselves declare one"
    );
    let note = &served["paths"]["/notes"]["post"]["responses"];
    assert!(
        note.get("401").is_none() && note.get("403").is_none(),
        "{note}"
    );
}

/// A tokens-mode server serves the committed document (what `server openapi` writes).
#[tokio::test]
async fn a_tokens_mode_server_serves_the_committed_document() {
    let app = TestApp::spawn_with(Backend::Sqlite, |s| {
        s.api_auth = ApiAuth::Tokens;
        s.api_keys = vec![server::Secret::new(
            "operator-key-of-the-openapi-test-0123456",
        )];
    })
    .await
    .unwrap();
    let served = json(app.get("/openapi.json").await, StatusCode::OK).await;
    assert_eq!(served, server::openapi::generate().await);
    assert_eq!(
        served["paths"]["/notes"]["post"]["security"],
        json!([{"bearer_token": []}, {"api_key": []}])
    );
}

/// Calls every operation once (ids that do not exist, an empty body) and checks that the answer
/// is a status the document lists for that operation.
async fn every_documented_operation_answers_documented_statuses(app: TestApp) {
    let doc = server::openapi::generate().await;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let concrete = path
                .split('/')
                .map(|seg| {
                    if seg.starts_with('{') {
                        if seg == "{slug}" {
                            "not-found"
                        } else {
                            "987654"
                        }
                    } else {
                        seg
                    }
                })
                .collect::<Vec<_>>()
                .join("/");
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let mut req = app.request(method.clone(), &concrete);
            if op.get("requestBody").is_some() {
                req = req.json(&json!({}));
            }
            let res = req.send().await.unwrap();
            let status = res.status().as_u16().to_string();
            let documented: Vec<&String> = op["responses"].as_object().unwrap().keys().collect();
            assert!(
                documented.iter().any(|s| **s == status),
                "{method} {concrete} answered {status}, documented {documented:?}"
            );
            if res.status() != StatusCode::NO_CONTENT && res.status().as_u16() >= 400 {
                let ct = res.headers()["content-type"].to_str().unwrap().to_owned();
                // The documented media type of this status: a problem document everywhere
                // except the token area's `{"error": ...}` bodies (application/json).
                let media: Vec<&String> = op["responses"][&status]["content"]
                    .as_object()
                    .map(|c| c.keys().collect())
                    .unwrap_or_default();
                assert!(
                    media.iter().any(|m| **m == ct),
                    "{method} {concrete}: content type {ct}, documented {media:?}"
                );
                if ct == "application/json" {
                    let body: Value = res.json().await.unwrap();
                    assert!(body["error"].is_string(), "{method} {concrete}: {body}");
                }
            }
        }
    }
}

/// Every component schema carries an example (Swagger UI's "Try it out" sends it), and each
/// example has the schema's required members with values of the declared types.
#[tokio::test]
async fn every_schema_has_an_example_of_its_shape() {
    let doc = serde_json::to_value(server::openapi::generate().await).unwrap();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    fn fits(value: &serde_json::Value, schema: &serde_json::Value) -> bool {
        use serde_json::Value::*;
        match (schema.get("type").and_then(|t| t.as_str()), value) {
            (_, Null) => schema["nullable"] == true || schema.get("type").is_none(),
            (Some("string"), String(s)) => schema["enum"]
                .as_array()
                .is_none_or(|e| e.iter().any(|v| v == s)),
            (Some("integer"), Number(n)) => n.is_i64() || n.is_u64(),
            (Some("boolean"), Bool(_))
            | (Some("array"), Array(_))
            | (Some("object"), Object(_)) => true,
            (None, _) => true,
            _ => false,
        }
    }
    for (name, schema) in schemas {
        let example = schema
            .get("example")
            .unwrap_or_else(|| panic!("{name} has no example"));
        if let Some(required) = schema["required"].as_array() {
            for member in required {
                let member = member.as_str().unwrap();
                assert!(
                    example.get(member).is_some(),
                    "{name}'s example lacks {member}"
                );
            }
        }
        if let Some(members) = schema["properties"].as_object() {
            for (member, value) in example.as_object().into_iter().flatten() {
                if let Some(declared) = members.get(member) {
                    assert!(
                        fits(value, declared),
                        "{name}.{member}: {value} does not fit {declared}"
                    );
                }
            }
        }
    }
    let note = &schemas["NoteBody"]["example"];
    assert_eq!(
        note["title"], "Groceries",
        "a sensible note, not random text"
    );
}
