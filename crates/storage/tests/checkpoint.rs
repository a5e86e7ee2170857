//! A SQLite store checkpoints its WAL on a background thread: data committed by a writer reaches
//! the database file without any writer running a checkpoint (the connections' own
//! `wal_autocheckpoint` is far above what this test writes).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use diesel::RunQueryDsl;
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
    let deadline = Instant::now() + Duration::from_secs(10);
    let niced = loop {
        let niced: Vec<i32> = checkpointer_threads().iter().map(|t| nice_of(t)).collect();
        if (!niced.is_empty() && niced.iter().all(|&n| n == storage::CHECKPOINTER_NICE))
            || Instant::now() > deadline
        {
            break niced;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
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

/// The ids of this process's checkpointer threads (`comm` is cut to 15 bytes).
#[cfg(target_os = "linux")]
fn checkpointer_threads() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|tid| {
            std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
                .is_ok_and(|c| c.trim_end() == "sqlite-checkpoi")
        })
        .collect()
}

/// A thread's nice value: field 19 of its `stat`, the 17th after the parenthesised name.
#[cfg(target_os = "linux")]
fn nice_of(tid: &str) -> i32 {
    let path = if tid == "self" {
        "/proc/thread-self/stat".to_owned()
    } else {
        format!("/proc/self/task/{tid}/stat")
    };
    let stat = std::fs::read_to_string(path).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 1..];
    after_name
        .split_whitespace()
        .nth(16)
        .unwrap()
        .parse()
        .unwrap()
}
