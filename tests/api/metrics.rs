//! `GET /metrics`: what happened, by route template, in the Prometheus text format.

use reqwest::{Method, StatusCode};

use crate::backend_tests;
use crate::helpers::{Backend, TestApp};
use crate::tokens::{OPERATOR_KEY, tokens_mode};

backend_tests!(
    requests_are_counted_by_route_template,
    the_storage_layer_replays_and_webhooks_are_measured,
    in_tokens_mode_the_metrics_need_the_operator_key,
);

pub async fn metrics(app: &TestApp, key: Option<&str>) -> (StatusCode, String, String) {
    let mut req = app.request(Method::GET, "/metrics");
    if let Some(key) = key {
        req = req.header("X-API-Key", key);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    let content_type = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, content_type, res.text().await.unwrap())
}

/// The value of the series `name` whose labels include `labels` (and the service's), or 0.
pub fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    let wanted: Vec<String> = labels
        .iter()
        .chain(&[("service", "notes-service")])
        .map(|(k, v)| format!("{k}=\"{v}\""))
        .collect();
    text.lines()
        .find_map(|line| {
            let rest = line.strip_prefix(name)?;
            let (set, value) = match rest.strip_prefix('{') {
                Some(rest) => rest.split_once("} ")?,
                None => ("", rest.strip_prefix(' ')?),
            };
            let pairs: Vec<&str> = set.split(',').collect();
            wanted
                .iter()
                .all(|w| pairs.contains(&w.as_str()))
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0.0)
}

async fn requests_are_counted_by_route_template(backend: Backend) {
    let app = TestApp::spawn(backend).await.unwrap();
    for id in [123_456, 654_321] {
        let res = app.get(&format!("/notes/{id}")).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
    }
    assert_eq!(app.get("/notes").await.status(), StatusCode::OK);
    let res = app
        .request(Method::POST, "/notes")
        .header("content-type", "text/plain")
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let (status, content_type, text) = metrics(&app, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    let get = ("method", "GET");
    let item = ("route", "/notes/{note_id}");
    let by_template = [get, item, ("status", "4xx")];
    assert_eq!(
        sample(&text, "http_requests_total", &by_template),
        2.0,
        "{text}"
    );
    let list = [get, ("route", "/notes"), ("status", "2xx")];
    assert_eq!(sample(&text, "http_requests_total", &list), 1.0, "{text}");
    assert!(
        !text.contains("123456"),
        "a raw path became a label:\n{text}"
    );
    let refused = [("cause", "unsupported_media_type")];
    assert_eq!(
        sample(&text, "http_refusals_total", &refused),
        1.0,
        "{text}"
    );
    let latency = "http_request_duration_seconds_count";
    assert_eq!(sample(&text, latency, &[get, item]), 2.0, "{text}");
    let idle = sample(&text, "db_pool_connections", &[("state", "idle")]);
    let in_use = sample(&text, "db_pool_connections", &[("state", "in_use")]);
    assert!(idle + in_use >= 1.0, "no pooled connection:\n{text}");
    for series in [
        "db_pool_connections",
        "http_requests_in_flight",
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_threads",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(series)),
            "no {series} in\n{text}"
        );
    }
    // The scrape itself is in flight while it is rendered.
    assert!(
        sample(&text, "http_requests_in_flight", &[]) >= 1.0,
        "{text}"
    );
}

async fn in_tokens_mode_the_metrics_need_the_operator_key(backend: Backend) {
    let app = tokens_mode(backend).await;
    let (status, _, _) = metrics(&app, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, text) = metrics(&app, Some(OPERATOR_KEY)).await;
    assert_eq!(status, StatusCode::OK);
    // The refused scrape was counted.
    let refused = [("cause", "unauthorized")];
    assert!(
        sample(&text, "http_refusals_total", &refused) >= 1.0,
        "{text}"
    );
}

/// The store's work (group-commit batches and queue waits per writer, pool checkouts, faults by
/// class), idempotent replays by route, webhook verifications by outcome, ledger retries and,
/// on SQLite, the WAL.
async fn the_storage_layer_replays_and_webhooks_are_measured(backend: Backend) {
    let app = TestApp::spawn(backend).await.unwrap();
    for _ in 0..2 {
        let res = app
            .request(Method::POST, "/notes")
            .header("Idempotency-Key", "m-1")
            .json(&serde_json::json!({"title": "t", "body": "b"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED);
    }
    app.open_account("measured", "Ann").await;
    app.deposit("measured", 100).await;
    // A read: its call is timed by stage (waiting for a thread, then running).
    assert_eq!(app.get("/notes").await.status(), StatusCode::OK);
    let unsigned = app
        .request(Method::POST, "/webhook")
        .json(&serde_json::json!({"event_type": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status(), StatusCode::UNAUTHORIZED);
    let (_, _, text) = metrics(&app, None).await;

    let replays = [("route", "/notes")];
    assert_eq!(
        sample(&text, "idempotent_replays_total", &replays),
        1.0,
        "{text}"
    );
    let ledger = [("writer", "ledger")];
    assert!(sample(&text, "db_batch_jobs_sum", &ledger) >= 1.0, "{text}");
    assert!(
        sample(&text, "db_queue_wait_seconds_count", &ledger) >= 1.0,
        "{text}"
    );
    for stage in [
        "db_pool_checkout_wait_seconds_count",
        "db_call_thread_wait_seconds_count",
        "db_call_seconds_count",
    ] {
        assert!(sample(&text, stage, &[]) >= 1.0, "{stage}: {text}");
    }
    // The test app has no WEBHOOK_SECRET: every delivery is refused as such.
    let missing = [("outcome", "no_secret")];
    assert_eq!(
        sample(&text, "webhook_verifications_total", &missing),
        1.0,
        "{text}"
    );
    for series in [
        "db_faults_total{fault=\"busy\"",
        "db_pool_checkout_timeouts_total",
        "ledger_retries_total",
        "db_storage_damaged",
    ] {
        assert!(text.contains(series), "no {series} in\n{text}");
    }
    // Route writes share batches on both backends; every batch's time is split by stage.
    for writer in ["writes", "ledger"] {
        let batches = sample(&text, "db_batch_jobs_count", &[("writer", writer)]);
        assert!(batches >= 1.0, "{writer}: {text}");
        for stage in ["lock", "run", "commit"] {
            let timed = [("writer", writer), ("stage", stage)];
            let n = sample(&text, "db_batch_seconds_count", &timed);
            assert_eq!(n, batches, "{writer} {stage}: {text}");
        }
    }
    if backend == Backend::Sqlite {
        assert!(text.contains("sqlite_wal_bytes"), "{text}");
    }
}

/// `METRICS=false`: requests are neither counted nor timed; `/metrics` still answers with the
/// pool, storage and process metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_metrics_off_requests_are_not_recorded() {
    let app = TestApp::spawn_with(Backend::Sqlite, |s| s.metrics = false)
        .await
        .unwrap();
    assert_eq!(app.get("/notes").await.status(), StatusCode::OK);
    let (status, _, text) = metrics(&app, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!text.contains("http_requests_total{"), "{text}");
    assert!(text.contains("db_pool_connections"), "{text}");
}
