//! Reads from standbys with `Consistency-Token` (`DATABASE_REPLICA_URLS`), as far as one
//! PostgreSQL server can show it: writes answer the primary's WAL position; a standby that is
//! not in recovery (here: the primary's own database) or cannot be reached is never trusted,
//! and every read still answers from the primary. The standby path under a real streaming
//! replica, with replay delay and failover, is `just ha-test`'s.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{Backend, TestApp, json};
use crate::metrics::{metrics, sample};

fn note() -> Value {
    json!({"title": "t", "body": "b"})
}

async fn with_standbys(urls: Vec<String>, eventual: bool) -> Option<TestApp> {
    TestApp::spawn_with(Backend::Postgres, move |s| {
        let mut urls = urls;
        for url in &mut urls {
            if url.is_empty() {
                *url = s.database_url.clone();
            }
        }
        s.replicas = urls
            .iter()
            .map(|u| storage::Database::parse(u).unwrap())
            .collect();
        s.replica_wait = Duration::from_millis(20);
        if eventual {
            s.replica_reads = storage::replicas::ReadPolicy::Eventual;
        }
    })
    .await
}

fn token_of(res: &reqwest::Response) -> Option<String> {
    res.headers()
        .get("consistency-token")
        .map(|v| v.to_str().unwrap().to_owned())
}

/// Every successful write answers the primary's WAL position, further along after each write;
/// a failed write and a read answer none; a read that brings the token back is answered in full
/// (by the primary: this "standby" is not in recovery), and the metrics say where reads went.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(postgres_tests),
    ignore = "needs TEST_POSTGRES_URL (a PostgreSQL server)"
)]
async fn writes_answer_a_token_and_reads_never_trust_a_primary_as_standby() {
    let Some(app) = with_standbys(vec![String::new()], false).await else {
        return;
    };
    let created = app.post_json("/notes", &note()).await;
    let first = token_of(&created).expect("a write answers its position");
    let first = storage::replicas::Lsn::parse(&first).expect("a WAL position");
    let id = json(created, StatusCode::CREATED).await["id"].clone();
    let updated = app
        .request(Method::PUT, &format!("/notes/{id}"))
        .json(&json!({"title": "u", "body": "c"}))
        .send()
        .await
        .unwrap();
    let second = storage::replicas::Lsn::parse(&token_of(&updated).unwrap()).unwrap();
    assert!(second > first, "{first} then {second}");
    let refused = app.post_json("/notes", &json!({"title": ""})).await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(token_of(&refused), None, "a refused write wrote nothing");

    let read = app
        .request(Method::GET, &format!("/notes/{id}"))
        .header("consistency-token", second.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(token_of(&read), None, "reads answer no token");
    assert_eq!(json(read, StatusCode::OK).await["title"], "u");
    // A token from the future is waited for (20 ms here), then the primary answers.
    let ahead = app
        .request(Method::GET, &format!("/notes/{id}"))
        .header("consistency-token", "FFFFFFFF/0")
        .send()
        .await
        .unwrap();
    assert_eq!(ahead.status(), StatusCode::OK);
    // A token that is not a position is ignored: the primary answers.
    let garbage = app
        .request(Method::GET, "/notes")
        .header("consistency-token", "'; DROP TABLE notes; --")
        .send()
        .await
        .unwrap();
    assert_eq!(garbage.status(), StatusCode::OK);

    let (_, _, text) = metrics(&app, None).await;
    assert!(sample(&text, "db_reads_total", &[("served_by", "primary")]) >= 3.0);
    assert_eq!(
        sample(&text, "db_reads_total", &[("served_by", "standby")]),
        0.0
    );
}

/// A standby that cannot be reached fails no read, with or without a token, in either mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(postgres_tests),
    ignore = "needs TEST_POSTGRES_URL (a PostgreSQL server)"
)]
async fn an_unreachable_standby_fails_no_read() {
    let Some(app) = with_standbys(vec!["postgres://postgres@127.0.0.1:1/none".into()], true).await
    else {
        return;
    };
    let created = app.post_json("/notes", &note()).await;
    let token = token_of(&created).unwrap();
    let id = json(created, StatusCode::CREATED).await["id"].clone();
    for token in [Some(token.as_str()), None] {
        let mut req = app.request(Method::GET, &format!("/notes/{id}"));
        if let Some(token) = token {
            req = req.header("consistency-token", token);
        }
        assert_eq!(req.send().await.unwrap().status(), StatusCode::OK);
    }
    assert_eq!(app.get("/notes").await.status(), StatusCode::OK);
}

/// Standbys are PostgreSQL's: beside a SQLite database, or as anything but `postgres://` URLs,
/// they stop start-up with one line naming `DATABASE_REPLICA_URLS`; a SQLite server ignores
/// the header and answers no token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standbys_are_postgresql_only_and_sqlite_ignores_the_header() {
    let read = |db: &'static str, standbys: &'static str| {
        server::Settings::from_lookup(move |k| match k {
            "DATABASE_URL" => Some(db.to_owned()),
            "DATABASE_REPLICA_URLS" => Some(standbys.to_owned()),
            _ => None,
        })
    };
    let err = read("sqlite://x.db", "postgres://h/db").unwrap_err();
    assert_eq!(err.variable, "DATABASE_REPLICA_URLS");
    let err = read("postgres://h/db", "postgres://a/db, sqlite://x.db").unwrap_err();
    assert_eq!(err.variable, "DATABASE_REPLICA_URLS");
    let ok = read("postgres://h/db", "postgres://a/db, postgres://b/db").unwrap();
    assert_eq!(ok.replicas.len(), 2);

    let app = TestApp::spawn(Backend::Sqlite).await.unwrap();
    let created = app.post_json("/notes", &note()).await;
    assert_eq!(token_of(&created), None);
    let id = json(created, StatusCode::CREATED).await["id"].clone();
    let read = app
        .request(Method::GET, &format!("/notes/{id}"))
        .header("consistency-token", "0/1")
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), StatusCode::OK);
}
