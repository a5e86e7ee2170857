use reqwest::StatusCode;
use serde_json::json;
use server::{Application, Settings};
use storage::Database;

use crate::api_tests;
use crate::helpers::{Backend, TestApp, TestDb, json};

api_tests!(
    healthy_database_is_200,
    live_and_ready_on_a_healthy_database
);

async fn healthy_database_is_200(app: TestApp) {
    let res = app.get("/health").await;
    let body = json(res, StatusCode::OK).await;
    assert_eq!(
        body,
        json!({"status": "ok", "db": "ok", "service": "notes-service", "checks": {"database": "ok"}})
    );
}

async fn live_and_ready_on_a_healthy_database(app: TestApp) {
    let live = json(app.get("/health/live").await, StatusCode::OK).await;
    assert_eq!(live, json!({"status": "live"}));
    let ready = json(app.get("/health/ready").await, StatusCode::OK).await;
    assert_eq!(
        ready,
        json!({"status": "ready", "database": "ok", "draining": false})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_database_is_503_degraded() {
    // Nothing listens on port 1: every connection attempt fails at once.
    let db = Database::parse("postgres://postgres@127.0.0.1:1/none").unwrap();
    let store = storage::Store::lazy(db, 2).unwrap();
    let settings = Settings {
        bind: "127.0.0.1:0".parse().unwrap(),
        workers: Some(1),
        service_name: "health-test".to_owned(),
        ..Settings::default()
    };
    let app = Application::serve(settings, http_edge::db::Db::new(store))
        .await
        .unwrap();
    let placeholder = TestDb::create(Backend::Sqlite).unwrap();
    let app = TestApp::start(app, Backend::Postgres, placeholder);
    let res = app.get("/health").await;
    let body = json(res, StatusCode::SERVICE_UNAVAILABLE).await;
    assert_eq!(
        body,
        json!({"status": "degraded", "db": "error", "service": "health-test", "checks": {"database": "error"}})
    );
    // Not ready, and still live: an orchestrator restarts nothing for a database outage.
    let ready = json(
        app.get("/health/ready").await,
        StatusCode::SERVICE_UNAVAILABLE,
    )
    .await;
    assert_eq!(
        ready,
        json!({"status": "not-ready", "database": "error", "draining": false})
    );
    let live = json(app.get("/health/live").await, StatusCode::OK).await;
    assert_eq!(live, json!({"status": "live"}));
    // Other routes answer a problem, not a hang or a bare 500.
    let res = app.get("/notes").await;
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    let p: serde_json::Value = res.json().await.unwrap();
    assert!(
        p["type"]
            .as_str()
            .unwrap()
            .ends_with("/service-unavailable")
    );
    assert!(
        !p.to_string().contains("127.0.0.1:1"),
        "no internals in the body"
    );
}
