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

/// A TCP relay in front of PostgreSQL that can stop relaying, keeping every connection open: a
/// frozen primary (SIGSTOP) or a blackholed port, as the service sees them.
struct Freezer {
    port: u16,
    frozen: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Freezer {
    async fn start(target: std::net::SocketAddr) -> Freezer {
        use std::sync::atomic::{AtomicBool, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let frozen = std::sync::Arc::new(AtomicBool::new(false));
        let flag = frozen.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = tokio::net::TcpStream::connect(target).await else {
                    continue;
                };
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                for (mut from, mut to, flag) in [
                    (
                        Box::new(cr) as Box<dyn tokio::io::AsyncRead + Unpin + Send>,
                        Box::new(sw) as Box<dyn tokio::io::AsyncWrite + Unpin + Send>,
                        flag.clone(),
                    ),
                    (Box::new(sr), Box::new(cw), flag.clone()),
                ] {
                    tokio::spawn(async move {
                        let mut buf = vec![0u8; 16 * 1024];
                        loop {
                            let n = match from.read(&mut buf).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => n,
                            };
                            // Frozen: bytes stop here, unanswered, and nothing closes.
                            while flag.load(Ordering::SeqCst) {
                                tokio::time::sleep(Duration::from_millis(20)).await;
                            }
                            if to.write_all(&buf[..n]).await.is_err() {
                                return;
                            }
                        }
                    });
                }
            }
        });
        Freezer { port, frozen }
    }

    fn set(&self, frozen: bool) {
        self.frozen
            .store(frozen, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The database stops answering (a frozen primary, a blackholed port): every request, reads,
/// writes, ledger appends and `/health` alike, is answered 503 with `Retry-After` within
/// `DB_ANSWER_TIMEOUT_MS` (2 s; 2.5 s allowed here), and the same server serves again once the
/// database answers. PostgreSQL only (a SQLite file cannot freeze).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(postgres_tests),
    ignore = "needs TEST_POSTGRES_URL (a PostgreSQL server)"
)]
async fn a_database_that_stops_answering_gets_503_within_the_deadline() {
    let Ok(admin) = std::env::var("TEST_POSTGRES_URL") else {
        eprintln!("TEST_POSTGRES_URL not set: skipped");
        return;
    };
    let db = TestDb::create(Backend::Postgres).unwrap();
    let target = url_host_port(&admin);
    let freezer = Freezer::start(target).await;
    let mut settings = test_settings(&db);
    // The production deadlines: the ones this test measures.
    settings.db_timeouts = storage::Timeouts::default();
    settings.database_url = db.url.replacen(
        &format!("{}:{}", target.ip(), target.port()),
        &format!("127.0.0.1:{}", freezer.port),
        1,
    );
    assert_ne!(
        settings.database_url, db.url,
        "the URL goes through the relay"
    );
    let app = TestApp::start(
        Application::build(settings).await.unwrap(),
        Backend::Postgres,
        db,
    );
    assert_eq!(
        app.post_json("/notes", &note(1)).await.status(),
        StatusCode::CREATED
    );
    assert_eq!(
        app.post_json("/accounts", &json!({"account_id": "a", "owner": "o"}))
            .await
            .status(),
        StatusCode::CREATED
    );

    freezer.set(true);
    let deposit = json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 1}});
    for round in 0..2 {
        let calls = vec![
            app.request(reqwest::Method::GET, "/notes/1"),
            app.request(reqwest::Method::GET, "/notes"),
            app.request(reqwest::Method::POST, "/notes").json(&note(2)),
            app.request(reqwest::Method::POST, "/accounts/a/events")
                .json(&deposit),
            app.request(reqwest::Method::GET, "/health"),
        ];
        let started = std::time::Instant::now();
        let answers = futures_util::future::join_all(calls.into_iter().map(|r| r.send())).await;
        let took = started.elapsed();
        assert!(
            took < Duration::from_millis(2500),
            "round {round}: answered after {took:?}"
        );
        for answer in answers {
            let res = answer.unwrap();
            let path = res.url().path().to_owned();
            assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE, "{path}");
            if path != "/health" {
                let (_, retry_after, slug) = problem_type(res).await;
                assert_eq!(
                    (retry_after.as_deref(), slug.as_str()),
                    (Some("1"), "service-unavailable"),
                    "{path}"
                );
            }
        }
    }

    freezer.set(false);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let res = app.post_json("/notes", &note(3)).await;
        if res.status() == StatusCode::CREATED {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no write after the database came back"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(app.get("/health").await.status(), StatusCode::OK);
}

/// Frozen PostgreSQL processes (SIGSTOP), resumed on drop.
struct Frozen(Vec<i32>);

impl Drop for Frozen {
    fn drop(&mut self) {
        for pid in &self.0 {
            let _ = std::process::Command::new("kill")
                .args(["-CONT", &pid.to_string()])
                .status();
        }
    }
}

/// A frozen primary left behind after a failover: every session the service holds is frozen
/// (SIGSTOP of its idle backend process: the host still acknowledges every packet, nothing
/// answers), while a new session reaches a live backend, as a reconnect reaches the promoted
/// standby. Requests that meet a frozen session are answered 503 within the deadline, the
/// calls stuck on it are cut off (`storage::cutoff`), and notes, ledger appends (group commit)
/// and webhooks are stored again on fresh sessions while the old ones are still frozen. Needs
/// root or the `postgres` user to signal the test database's own backends (skipped otherwise);
/// the shared server's other sessions are not touched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(postgres_tests),
    ignore = "needs TEST_POSTGRES_URL (a PostgreSQL server)"
)]
async fn writes_resume_on_fresh_sessions_while_the_old_ones_stay_frozen() {
    const SECRET: &str = "whsec_frozen_sessions_padded_to_32_bytes";
    let Some(db) = TestDb::create(Backend::Postgres) else {
        eprintln!("TEST_POSTGRES_URL not set: skipped");
        return;
    };
    let mut settings = test_settings(&db);
    settings.db_timeouts = storage::Timeouts::default();
    settings.webhook_secret = Some(server::Secret::new(SECRET));
    let app = TestApp::start(
        Application::build(settings).await.unwrap(),
        Backend::Postgres,
        db,
    );
    let deposit = json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 1}});
    let webhook = |i: usize| {
        let body = json!({"event_type": "frozen.test", "i": i}).to_string();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let sig = webhook_verify::header(SECRET.as_bytes(), now, body.as_bytes());
        app.request(reqwest::Method::POST, "/webhook")
            .header("content-type", "application/json")
            .header("x-webhook-signature", sig)
            .body(body)
    };
    let writes = |i: usize| {
        vec![
            (
                "note",
                app.request(reqwest::Method::POST, "/notes").json(&note(i)),
            ),
            (
                "append",
                app.request(reqwest::Method::POST, "/accounts/a/events")
                    .json(&deposit),
            ),
            ("webhook", webhook(i)),
        ]
    };
    assert_eq!(
        app.post_json("/accounts", &json!({"account_id": "a", "owner": "o"}))
            .await
            .status(),
        StatusCode::CREATED
    );
    // Several sessions open and idle, as under load.
    for round in 0..3 {
        let sent = writes(round).into_iter().map(|(_, r)| r.send());
        for res in futures_util::future::join_all(sent).await {
            assert!(res.unwrap().status().is_success());
        }
    }

    let pids: Vec<i32> = crate::helpers::with_conn(&app.db, |conn| {
        use diesel::sql_types::Integer;
        #[derive(diesel::QueryableByName)]
        struct Pid {
            #[diesel(sql_type = Integer)]
            pid: i32,
        }
        diesel::sql_query(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() \
             AND pid <> pg_backend_pid() AND state = 'idle'",
        )
        .load::<Pid>(conn)
        .unwrap()
        .into_iter()
        .map(|p| p.pid)
        .collect()
    })
    .await;
    assert!(!pids.is_empty(), "the service holds idle sessions");
    let mut frozen = Frozen(Vec::new());
    for pid in pids {
        let stopped = std::process::Command::new("kill")
            .args(["-STOP", &pid.to_string()])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !stopped {
            eprintln!("cannot signal PostgreSQL's processes (not root or postgres): skipped");
            return;
        }
        frozen.0.push(pid);
    }

    // Until every kind of write has been stored again, each answer is a 2xx or a 503 problem
    // within the deadline (2.5 s allowed here).
    let mut stored = std::collections::BTreeSet::new();
    let give_up = std::time::Instant::now() + Duration::from_secs(15);
    let mut i = 100;
    while stored.len() < 3 {
        assert!(
            std::time::Instant::now() < give_up,
            "only {stored:?} stored again within 15 s while the old sessions stayed frozen"
        );
        i += 1;
        let calls = writes(i).into_iter().map(|(kind, r)| async move {
            let started = std::time::Instant::now();
            (kind, r.send().await.unwrap(), started.elapsed())
        });
        for (kind, res, took) in futures_util::future::join_all(calls).await {
            assert!(
                took < Duration::from_millis(2500),
                "{kind}: answered after {took:?}"
            );
            if res.status().is_success() {
                stored.insert(kind);
            } else {
                let (status, retry_after, slug) = problem_type(res).await;
                assert_eq!(
                    (status, retry_after.as_deref(), slug.as_str()),
                    (
                        StatusCode::SERVICE_UNAVAILABLE,
                        Some("1"),
                        "service-unavailable"
                    ),
                    "{kind}"
                );
            }
        }
    }
    drop(frozen);
    assert_eq!(app.get("/health").await.status(), StatusCode::OK);
}

/// `host:port` of a `postgres://user@host:port/db` URL.
fn url_host_port(url: &str) -> std::net::SocketAddr {
    let rest = url.split_once("://").unwrap().1;
    let authority = rest.split('/').next().unwrap();
    let host_port = authority.rsplit('@').next().unwrap();
    let host_port = if host_port.contains(':') {
        host_port.to_owned()
    } else {
        format!("{host_port}:5432")
    };
    host_port.parse().unwrap()
}

/// A stored value that does not decode (text that is not UTF-8, as a damaged page or a foreign
/// writer leaves it; SQLite only, PostgreSQL refuses such text) and a ledger event that does
/// not fold: 503 `storage-damaged`, never a 500 and never the bytes as data; the instance turns
/// not ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_value_that_does_not_decode_is_503_storage_damaged() {
    let app = TestApp::spawn(Backend::Sqlite).await.unwrap();
    let note = app.create_note("fine", "b").await;
    let id = note["id"].as_i64().unwrap();
    app.open_account("damaged", "Ann").await;
    app.deposit("damaged", 100).await;
    let url = app.db.url.clone();
    tokio::task::spawn_blocking(move || {
        let mut conn = storage::Database::parse(&url).unwrap().establish().unwrap();
        conn.batch_execute(&format!(
            "UPDATE notes SET title = CAST(X'C328FF' AS TEXT) WHERE id = {id};
             UPDATE account_events SET payload = '{{not json' WHERE aggregate_id = 'damaged' \
             AND sequence = 2;"
        ))
        .unwrap();
    })
    .await
    .unwrap();
    for path in [
        format!("/notes/{id}"),
        "/accounts/damaged/events".to_owned(),
    ] {
        let res = app.get(&path).await;
        let (status, retry_after, slug) = problem_type(res).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{path}");
        assert_eq!(slug, "storage-damaged", "{path}");
        assert!(retry_after.is_some(), "{path}");
    }
    let ready = app.get("/health/ready").await;
    assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);
}
