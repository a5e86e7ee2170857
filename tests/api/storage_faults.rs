//! A 2xx means stored: storage faults give their own problem with `Retry-After`, `/health`
//! tells the truth while they last, and the same server takes writes again once they pass.
//! (The faults that need root or a second PostgreSQL cluster run in `just faults`.)

use std::time::Duration;

use diesel::RunQueryDsl;
use diesel::connection::SimpleConnection;
use reqwest::StatusCode;
use serde_json::{Value, json};
use server::Application;

use crate::backend_tests;
use crate::helpers::{Backend, TestApp, TestDb, test_settings};

fn note(i: usize) -> Value {
    json!({"title": format!("note {i}"), "body": "x".repeat(3000)})
}

async fn problem_type(res: reqwest::Response) -> (StatusCode, Option<String>, String) {
    let status = res.status();
    let retry_after = res
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let body: Value = res.json().await.unwrap();
    let slug = body["type"]
        .as_str()
        .unwrap_or_default()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    (status, retry_after, slug)
}

#[derive(diesel::QueryableByName)]
struct Pages {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    page_count: i64,
}

/// SQLite capped a few pages above its migrated size (`SQLITE_MAX_PAGES`): the disk fills
/// after a handful of notes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_database_is_507_and_recovers_without_a_restart() {
    let db = TestDb::create(Backend::Sqlite).unwrap();
    let pages = {
        let mut conn = storage::Database::parse(&db.url)
            .unwrap()
            .establish()
            .unwrap();
        storage::run_migrations(&mut conn).unwrap();
        diesel::sql_query("PRAGMA page_count")
            .get_result::<Pages>(&mut conn)
            .unwrap()
            .page_count
    };
    let mut settings = test_settings(&db);
    settings.sqlite_max_pages = Some(u32::try_from(pages).unwrap() + 6);
    let app = TestApp::start(
        Application::build(settings).await.unwrap(),
        Backend::Sqlite,
        db,
    );

    let mut stored = Vec::new();
    let mut refused = None;
    for i in 0..200 {
        let res = app.post_json("/notes", &note(i)).await;
        if res.status() == StatusCode::CREATED {
            let body: Value = res.json().await.unwrap();
            stored.push((body["id"].as_i64().unwrap(), i));
        } else {
            refused = Some(problem_type(res).await);
            break;
        }
    }
    let (status, retry_after, slug) = refused.expect("the capped database filled up");
    assert_eq!(status, StatusCode::INSUFFICIENT_STORAGE);
    assert_eq!(slug, "insufficient-storage");
    assert!(retry_after.is_some(), "Retry-After on a 507");
    assert!(!stored.is_empty(), "some notes fit before the cap");

    // Every acknowledged note is there with its content, under a distinct id.
    let mut ids: Vec<i64> = stored.iter().map(|(id, _)| *id).collect();
    ids.dedup();
    assert_eq!(ids.len(), stored.len());
    for (id, i) in &stored {
        let body: Value = app.get(&format!("/notes/{id}")).await.json().await.unwrap();
        assert_eq!(body["title"], format!("note {i}"));
    }
    // The other write routes refuse the same way.
    let res = app
        .post_json("/tags", &json!({"name": "y".repeat(4000)}))
        .await;
    let (status, _, _) = problem_type(res).await;
    assert!(
        status == StatusCode::INSUFFICIENT_STORAGE || status == StatusCode::UNPROCESSABLE_ENTITY,
        "{status}"
    );

    // /health says so while no write succeeds.
    let health = app.get("/health").await;
    assert_eq!(health.status(), StatusCode::SERVICE_UNAVAILABLE);

    // Space comes back (notes deleted): the same server takes writes again.
    for (id, _) in &stored {
        let res = app.delete(&format!("/notes/{id}")).await;
        assert_eq!(res.status(), StatusCode::NO_CONTENT);
    }
    let res = app.post_json("/notes", &note(999)).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    assert_eq!(app.get("/health").await.status(), StatusCode::OK);
}

/// A careless restore moves another file over the database while the server runs: writes are
/// refused (not written into the unlinked file), and `/health` says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_into_a_replaced_database_file_are_refused() {
    let app = TestApp::spawn(Backend::Sqlite).await.unwrap();
    assert_eq!(
        app.post_json("/notes", &note(1)).await.status(),
        StatusCode::CREATED
    );
    let path = app.db.url.strip_prefix("sqlite://").unwrap().to_owned();
    let copy = format!("{path}.restored");
    std::fs::copy(&path, &copy).unwrap();
    std::fs::rename(&copy, &path).unwrap();

    for write in [
        app.post_json("/notes", &note(2)).await,
        app.post_json("/tags", &json!({"name": "t"})).await,
        app.post_json("/accounts", &json!({"account_id": "acc-1", "owner": "ann"}))
            .await,
    ] {
        let (status, retry_after, slug) = problem_type(write).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(slug, "storage-unavailable");
        assert!(retry_after.is_some());
    }
    let health = app.get("/health").await;
    assert_eq!(health.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = health.json().await.unwrap();
    assert_eq!(body["db"], "error");
}

backend_tests!(a_lock_held_past_the_lock_timeout_is_503_not_a_hang);

/// Another session holds the write lock (PostgreSQL `LOCK TABLE`, SQLite `BEGIN IMMEDIATE`)
/// longer than `DB_LOCK_TIMEOUT_MS`: the write answers 503 with `Retry-After`, unrelated reads
/// keep answering, and writes succeed once the lock is gone.
async fn a_lock_held_past_the_lock_timeout_is_503_not_a_hang(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, |s| {
        s.db_timeouts.lock = Duration::from_millis(300);
    })
    .await
    else {
        return;
    };
    let mut holder = storage::Database::parse(&app.db.url)
        .unwrap()
        .establish()
        .unwrap();
    let lock = match backend {
        Backend::Postgres => "BEGIN; LOCK TABLE notes IN ACCESS EXCLUSIVE MODE;",
        Backend::Sqlite => "BEGIN IMMEDIATE;",
    };
    holder.batch_execute(lock).unwrap();

    let (status, retry_after, slug) = problem_type(app.post_json("/notes", &note(1)).await).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(slug, "service-unavailable");
    assert_eq!(retry_after.as_deref(), Some("1"));
    // A read of another table is not held up by the lock.
    assert_eq!(app.get("/tags").await.status(), StatusCode::OK);

    holder.batch_execute("ROLLBACK;").unwrap();
    assert_eq!(
        app.post_json("/notes", &note(2)).await.status(),
        StatusCode::CREATED
    );
}
