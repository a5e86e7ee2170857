//! Repository tests on a fresh SQLite database (and on PostgreSQL when `TEST_POSTGRES_URL` is
//! set).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Barrier};

use pagination::Page;
use storage::testing::TestDatabase;
use storage::{Backend, Database, Store};
use webhook_verify::{Verifier, header};
use webhooks::{Intake, repo};

const SECRET: &[u8] = b"whsec_repo_test";
const NOW: i64 = 1_700_000_000;

struct TestDb {
    // Dropped first: the pool's connections close before the database is removed.
    pool: Store,
    _db: TestDatabase,
}

fn databases() -> Vec<TestDb> {
    let admin = std::env::var("TEST_POSTGRES_URL").ok();
    [Backend::Sqlite, Backend::Postgres]
        .into_iter()
        .filter_map(|backend| TestDatabase::create(backend, admin.as_deref()).unwrap())
        .map(|db| TestDb {
            pool: migrated(&db.url),
            _db: db,
        })
        .collect()
}

fn migrated(url: &str) -> Store {
    let store = Store::open(Database::parse(url).unwrap(), 8).unwrap();
    storage::run_migrations(&mut store.checkout().unwrap()).unwrap();
    store
}

fn delivery(body: &str) -> webhooks::Delivery {
    let intake = Intake::new(Some(Verifier::new(SECRET).unwrap()));
    let h = header(SECRET, NOW, body.as_bytes());
    intake
        .accept(&[h.as_bytes()], body.as_bytes(), NOW)
        .unwrap()
}

#[test]
fn record_list_and_replay() {
    for db in databases() {
        let mut conn = db.pool.checkout().unwrap();
        let a = repo::record(&mut conn, &delivery(r#"{"event_type":"a"}"#)).unwrap();
        let b = repo::record(&mut conn, &delivery(r#"{"event_type":"b","n":1}"#)).unwrap();
        assert!(!a.replayed && !b.replayed);
        assert!(b.id > a.id);

        let again = repo::record(&mut conn, &delivery(r#"{"event_type":"a"}"#)).unwrap();
        assert_eq!(again.id, a.id);
        assert!(again.replayed);
        assert_eq!(repo::count(&mut conn).unwrap(), 2);

        let (items, total) = repo::list(&mut conn, Page::default()).unwrap();
        assert_eq!(total, 2);
        assert_eq!(items[0].id, b.id);
        assert_eq!(items[0].event_type, "b");
        assert_eq!(items[0].payload, r#"{"event_type":"b","n":1}"#);
        assert_eq!(items[0].delivered_at.len(), 20);
        assert_eq!(items[1].id, a.id);

        let page = Page {
            limit: 1,
            offset: 1,
        };
        let (items, total) = repo::list(&mut conn, page).unwrap();
        assert_eq!((items.len(), items[0].id, total), (1, a.id, 2));
    }
}

/// A JSON body of `len` bytes whose event type is "e".
fn body_of_len(len: usize) -> String {
    let head = r#"{"event_type":"e","pad":""#;
    format!("{head}{}\"}}", "x".repeat(len - head.len() - 2))
}

/// Events up to `INLINE_TEXT_BYTES` come back with the page's one statement; a page holding a
/// larger one is read again by size. Both give every payload intact, newest first.
#[test]
fn pages_of_small_and_of_larger_events_list_the_same_way() {
    let inline = usize::try_from(repo::INLINE_TEXT_BYTES).unwrap();
    for db in databases() {
        let mut conn = db.pool.checkout().unwrap();
        // Payload and event type ("e", one byte) together at the limit, then one byte over.
        let bodies = [
            body_of_len(inline - 1),
            body_of_len(inline),
            body_of_len(40),
        ];
        let ids: Vec<i64> = bodies
            .iter()
            .map(|b| repo::record(&mut conn, &delivery(b)).unwrap().id)
            .collect();
        let mut listed = |offset| {
            let page = Page { limit: 100, offset };
            let (items, total) = repo::list(&mut conn, page).unwrap();
            assert_eq!(total, 3);
            items
                .into_iter()
                .map(|e| (e.id, e.payload))
                .collect::<Vec<_>>()
        };
        let expected = |from: usize| {
            (from..3)
                .rev()
                .map(|i| (ids[i], bodies[i].clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(bodies[0].len() + 1, inline);
        // Newest first: the small one, the one over the limit, the one at it.
        assert_eq!(listed(0), expected(0));
        // A page of the at-limit one alone.
        assert_eq!(listed(2), expected(0)[2..]);
    }
}

#[test]
fn concurrent_identical_deliveries_store_one_row() {
    for db in databases() {
        let d = delivery(r#"{"event_type":"race"}"#);
        let barrier = Arc::new(Barrier::new(6));
        let handles: Vec<_> = (0..6)
            .map(|_| {
                let (pool, d, barrier) = (db.pool.clone(), d.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let mut conn = pool.checkout().unwrap();
                    barrier.wait();
                    repo::record(&mut conn, &d).unwrap()
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let id = results[0].id;
        assert!(results.iter().all(|r| r.id == id));
        assert_eq!(results.iter().filter(|r| !r.replayed).count(), 1);
        assert_eq!(repo::count(&mut db.pool.checkout().unwrap()).unwrap(), 1);
    }
}

#[test]
fn a_batch_answers_each_delivery_as_if_recorded_one_after_another() {
    for db in databases() {
        let mut conn = db.pool.checkout().unwrap();
        let old = repo::record(&mut conn, &delivery(r#"{"event_type":"old"}"#)).unwrap();
        let (a, b) = (
            delivery(r#"{"event_type":"a"}"#),
            delivery(r#"{"event_type":"b"}"#),
        );
        let old_again = delivery(r#"{"event_type":"old"}"#);
        let out = repo::record_batch(&mut conn, &[&a, &old_again, &b, &a, &old_again]).unwrap();
        assert_eq!(out.len(), 5);
        assert!(!out[0].replayed && !out[2].replayed);
        assert!(out[0].id > old.id && out[2].id > old.id && out[0].id != out[2].id);
        assert_eq!((out[1].id, out[1].replayed), (old.id, true));
        assert_eq!((out[3].id, out[3].replayed), (out[0].id, true));
        assert_eq!((out[4].id, out[4].replayed), (old.id, true));
        assert_eq!(repo::count(&mut conn).unwrap(), 3);
    }
}

/// 12 threads × 20 deliveries through one [`webhooks::Recorder`], every delivery sent by two
/// threads at once: 120 rows, each pair answered with one id, exactly one of them not a replay.
#[test]
fn the_recorder_stores_each_delivery_once_under_many_threads() {
    for db in databases() {
        let recorder = Arc::new(webhooks::Recorder::new(db.pool.clone()));
        let barrier = Arc::new(Barrier::new(12));
        let handles: Vec<_> = (0..12)
            .map(|t| {
                let (recorder, barrier) = (recorder.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    (0..20)
                        .map(|i| {
                            let body = format!(r#"{{"event_type":"e","n":{},"i":{i}}}"#, t / 2);
                            (
                                format!("{}-{i}", t / 2),
                                recorder.record_blocking(delivery(&body)).unwrap(),
                            )
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut by_body: std::collections::HashMap<String, Vec<webhooks::Recorded>> =
            Default::default();
        for (body, recorded) in handles.into_iter().flat_map(|h| h.join().unwrap()) {
            by_body.entry(body).or_default().push(recorded);
        }
        assert_eq!(by_body.len(), 120);
        for pair in by_body.values() {
            assert_eq!(pair.len(), 2);
            assert_eq!(pair[0].id, pair[1].id);
            assert_eq!(pair.iter().filter(|r| !r.replayed).count(), 1);
        }
        assert_eq!(repo::count(&mut db.pool.checkout().unwrap()).unwrap(), 120);
    }
}

/// SQLite's webhook_events lost AUTOINCREMENT in a table rebuild (migration 8): both directions
/// keep every row and id, and a new row still gets the next id.
#[test]
fn the_sqlite_rowid_migration_keeps_rows_and_ids() {
    use storage::diesel::connection::SimpleConnection;
    const UP: &str = include_str!(
        "../../../migrations/sqlite/2026-11-24-000008_webhook_events_lean_sqlite/up.sql"
    );
    const DOWN: &str = include_str!(
        "../../../migrations/sqlite/2026-11-24-000008_webhook_events_lean_sqlite/down.sql"
    );
    let db = TestDatabase::create(Backend::Sqlite, None)
        .unwrap()
        .unwrap();
    let pool = migrated(&db.url);
    let mut conn = pool.checkout().unwrap();
    let ids: Vec<i64> = ["a", "b", "c"]
        .iter()
        .map(|t| {
            let body = format!(r#"{{"event_type":"{t}"}}"#);
            repo::record(&mut conn, &delivery(&body)).unwrap().id
        })
        .collect();
    let stored = |conn: &mut storage::DbConnection| {
        let (items, _) = repo::list(conn, Page::default()).unwrap();
        items
            .into_iter()
            .map(|e| (e.id, e.event_type))
            .collect::<Vec<_>>()
    };
    let before = stored(&mut conn);
    assert_eq!(before.len(), 3);

    conn.batch_execute(DOWN).unwrap();
    assert_eq!(stored(&mut conn), before);
    conn.batch_execute(UP).unwrap();
    assert_eq!(stored(&mut conn), before);

    let next = repo::record(&mut conn, &delivery(r#"{"event_type":"d"}"#)).unwrap();
    assert_eq!(next.id, ids[2] + 1);
    let replay = repo::record(&mut conn, &delivery(r#"{"event_type":"b"}"#)).unwrap();
    assert_eq!((replay.id, replay.replayed), (ids[1], true));
}
