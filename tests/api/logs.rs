//! Trace context and the access record: an incoming W3C `traceparent` is continued (the answer's
//! `traceresponse` names the trace and the span that answered), one is started when absent or
//! invalid, and the access record carries the route template, method, status, duration,
//! request id, trace, and the user and token ids (never the token).

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{Backend, TestApp, log_capture};
use crate::tokens::{OPERATOR_KEY, create_user, issue, tokens_mode};
use crate::{api_tests, backend_tests};

api_tests!(a_traceparent_is_continued_and_a_trace_started_without_one);
backend_tests!(the_access_record_names_route_status_trace_and_actor);

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// The `traceresponse` of an answer: (trace id, span id, flags).
fn trace_of(res: &reqwest::Response) -> (String, String, String) {
    let value = res.headers()["traceresponse"].to_str().unwrap();
    let parts: Vec<&str> = value.split('-').collect();
    assert_eq!(parts.len(), 4, "{value}");
    assert_eq!(parts[0], "00");
    assert_eq!((parts[1].len(), parts[2].len()), (32, 16), "{value}");
    (parts[1].into(), parts[2].into(), parts[3].into())
}

async fn a_traceparent_is_continued_and_a_trace_started_without_one(app: TestApp) {
    let continued = app
        .request(Method::GET, "/notes/424242")
        .header("traceparent", PARENT)
        .send()
        .await
        .unwrap();
    assert_eq!(continued.status(), StatusCode::NOT_FOUND);
    let (trace, span, flags) = trace_of(&continued);
    assert_eq!(trace, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_ne!(span, "00f067aa0ba902b7", "the answer names its own span");
    assert_eq!(flags, "01", "the caller's sampling decision is kept");

    let started = trace_of(&app.get("/health").await);
    let again = trace_of(&app.get("/health").await);
    assert_ne!(
        started.0, again.0,
        "each request without a parent starts a trace"
    );
    assert_eq!(started.2, "00");
    for invalid in [
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "garbage",
    ] {
        let res = app
            .request(Method::GET, "/health")
            .header("traceparent", invalid)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "an invalid parent is ignored");
        assert_ne!(trace_of(&res).0, "4bf92f3577b34da6a3ce929d0e0e4736");
    }
}

/// The access records of this test's requests, found by their request id.
async fn access_record(request_id: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let found = log_capture().snapshot().into_iter().find_map(|line| {
            let record: Value = serde_json::from_str(&line).ok()?;
            (record["target"] == "access" && record["request_id"] == request_id).then_some(record)
        });
        if let Some(record) = found {
            return record;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no access record for {request_id}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn the_access_record_names_route_status_trace_and_actor(backend: Backend) {
    log_capture();
    let app = tokens_mode(backend).await;
    let ann = create_user(&app, "ann").await;
    let token = issue(&app, ann, json!({"scope": "read"})).await;
    let raw = token["token"].as_str().unwrap().to_owned();
    let request_id = format!("logs-{}-{backend:?}", std::process::id());
    let res = app
        .request(Method::GET, "/notes/424242?limit=1")
        .header("Authorization", format!("Bearer {raw}"))
        .header("X-Request-Id", &request_id)
        .header("traceparent", PARENT)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let (_, span, _) = trace_of(&res);
    let record = access_record(&request_id).await;
    assert_eq!(record["level"], "INFO");
    assert_eq!(record["method"], "GET");
    assert_eq!(
        record["route"], "/notes/{note_id}",
        "the template, never the path"
    );
    assert_eq!(record["status"], 404);
    assert_eq!(record["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(record["span_id"], span.as_str());
    assert_eq!(record["user_id"], ann);
    assert_eq!(record["token_id"], token["id"]);
    assert!(record["duration_ms"].as_f64().unwrap() >= 0.0);
    assert!(record["client"].as_str().unwrap().starts_with("127.0.0.1"));
    let line = record.to_string();
    assert!(!line.contains(&raw), "the token never reaches the log");

    // The operator: no user, no token; the key never appears either.
    let operator_request = format!("{request_id}-operator");
    app.request(Method::POST, "/users")
        .json(&json!({"name": "bob"}))
        .header("X-API-Key", OPERATOR_KEY)
        .header("X-Request-Id", &operator_request)
        .send()
        .await
        .unwrap();
    let record = access_record(&operator_request).await;
    assert_eq!(record["actor"], "operator");
    assert!(record.get("user_id").is_none() && record.get("token_id").is_none());
    assert!(!record.to_string().contains(OPERATOR_KEY));
}
