//! Group commit on both databases (PostgreSQL when `TEST_POSTGRES_URL` is set): every job gets
//! its own answer after its batch ran, a panicking batch fails only its own jobs, and the writer
//! gives its connection back to the pool once the queue is empty.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use diesel::RunQueryDsl;
use storage::{Database, DbConnection, Fault, GroupCommit, Store, StoreError};

type Answer = Result<i64, StoreError>;

/// Answers each job with its double after a round trip to the database; panics on a negative
/// job.
fn double(conn: &mut DbConnection, jobs: Vec<i64>) -> Vec<Answer> {
    diesel::sql_query("SELECT 1").execute(conn).unwrap();
    assert!(jobs.iter().all(|&j| j >= 0), "negative job");
    jobs.iter().map(|&j| Ok(j * 2)).collect()
}

fn group_commit(store: &Store) -> GroupCommit<i64, Answer> {
    GroupCommit::new(store.clone(), double, Err)
}

/// One-connection stores: SQLite in a fresh file, and PostgreSQL when configured.
fn pools(name: &str) -> Vec<(Store, Option<PathBuf>)> {
    let dir = std::env::temp_dir().join(format!("storage-gc-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}", dir.join("t.db").display());
    let sqlite = Store::open(Database::parse(&url).unwrap(), 1).unwrap();
    let mut pools = vec![(sqlite, Some(dir))];
    if let Ok(url) = std::env::var("TEST_POSTGRES_URL") {
        pools.push((
            Store::open(Database::parse(&url).unwrap(), 1).unwrap(),
            None,
        ));
    }
    pools
}

fn cleanup(pools: Vec<(Store, Option<PathBuf>)>) {
    for (pool, dir) in pools {
        drop(pool);
        if let Some(dir) = dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[test]
fn every_concurrent_job_gets_its_own_answer() {
    let pools = pools("answers");
    for (pool, _) in &pools {
        let gc = group_commit(pool);
        std::thread::scope(|s| {
            for t in 0..8_i64 {
                let gc = &gc;
                s.spawn(move || {
                    for i in 0..50 {
                        let job = t * 1000 + i;
                        assert_eq!(gc.submit_blocking(job), Ok(job * 2));
                    }
                });
            }
        });
    }
    cleanup(pools);
}

#[test]
fn an_idle_writer_gives_its_connection_back() {
    let pools = pools("idle");
    for (pool, _) in &pools {
        let gc = group_commit(pool);
        assert_eq!(gc.submit_blocking(21), Ok(42));
        // The pool has one connection: this waits for the writer to return it (and fails after
        // the pool's connection timeout if it never does).
        let mut conn = pool
            .pool()
            .get()
            .expect("the idle writer returned its connection");
        diesel::sql_query("SELECT 1").execute(&mut **conn).unwrap();
        drop(conn);
        // And the writer takes it again for the next job.
        assert_eq!(gc.submit_blocking(5), Ok(10));
    }
    cleanup(pools);
}

#[test]
fn a_panicking_batch_fails_only_its_own_jobs() {
    let pools = pools("panic");
    for (pool, _) in &pools {
        let gc = group_commit(pool);
        let err = gc.submit_blocking(-1).unwrap_err();
        assert_eq!(err.fault, Fault::Unavailable);
        assert!(err.detail.contains("panicked"), "{err}");
        assert_eq!(gc.submit_blocking(4), Ok(8));
        assert!(
            pool.pool().get().is_ok(),
            "the connection went back to the pool"
        );
    }
    cleanup(pools);
}
