//! A SQLite store checkpoints its WAL on a background thread: data committed by a writer reaches
//! the database file without any writer running a checkpoint (the connections' own
//! `wal_autocheckpoint` is far above what this test writes).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use diesel::RunQueryDsl;
#[cfg(target_os = "linux")]
use storage::testing::{nice_of, nice_values_once};
use storage::{Database, Store};

#[test]
fn the_store_moves_committed_wal_frames_into_the_database_file() {
    let dir = std::env::temp_dir().join(format!("storage-checkpoint-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("test.db");
    let store = Store::open(
        Database::parse(&format!("sqlite://{}", file.display())).unwrap(),
        2,
    )
    .unwrap();
    let mut conn = store.pool().get().unwrap();
    diesel::sql_query("CREATE TABLE t (x TEXT NOT NULL)")
        .execute(&mut **conn)
        .unwrap();
    // About 2 MB in 500 pages: far below wal_autocheckpoint=10000, so only the background
    // checkpointer can copy it into the database file.
    diesel::sql_query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500) \
         INSERT INTO t SELECT printf('%.4000c', 'x') FROM n",
    )
    .execute(&mut **conn)
    .unwrap();
    let size = || std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    let deadline = Instant::now() + Duration::from_secs(10);
    while size() < 2_000_000 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(size() >= 2_000_000, "database file is {} bytes", size());
    drop(conn);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The checkpointer thread lowers its own priority (and only its own: the test's thread keeps
/// its nice value).
#[cfg(target_os = "linux")]
#[test]
fn the_checkpointer_runs_at_the_lowest_priority() {
    let dir = std::env::temp_dir().join(format!("storage-nice-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = Store::open(
        Database::parse(&format!("sqlite://{}/test.db", dir.display())).unwrap(),
        1,
    )
    .unwrap();
    let own = nice_of("self");
    let niced = nice_values_once("sqlite-checkpoi", storage::CHECKPOINTER_NICE);
    assert!(!niced.is_empty(), "no sqlite-checkpoint thread");
    assert!(
        niced.iter().all(|&n| n == storage::CHECKPOINTER_NICE),
        "checkpointer nice values {niced:?}"
    );
    assert_eq!(
        nice_of("self"),
        own,
        "the calling thread's priority changed"
    );
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}
