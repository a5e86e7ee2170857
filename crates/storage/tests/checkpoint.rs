//! A SQLite pool checkpoints its WAL on a background thread: data committed by a writer reaches
//! the database file without any writer running a checkpoint (the connections' own
//! `wal_autocheckpoint` is far above what this test writes).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use diesel::RunQueryDsl;
use storage::Database;

#[test]
fn the_pool_moves_committed_wal_frames_into_the_database_file() {
    let dir = std::env::temp_dir().join(format!("storage-checkpoint-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("test.db");
    let pool = Database::parse(&format!("sqlite://{}", file.display()))
        .pool(2)
        .unwrap();
    let mut conn = pool.get().unwrap();
    diesel::sql_query("CREATE TABLE t (x TEXT NOT NULL)")
        .execute(&mut *conn)
        .unwrap();
    // About 2 MB in 500 pages: far below wal_autocheckpoint=10000, so only the background
    // checkpointer can copy it into the database file.
    diesel::sql_query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500) \
         INSERT INTO t SELECT printf('%.4000c', 'x') FROM n",
    )
    .execute(&mut *conn)
    .unwrap();
    let size = || std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    let deadline = Instant::now() + Duration::from_secs(10);
    while size() < 2_000_000 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(size() >= 2_000_000, "database file is {} bytes", size());
    drop(conn);
    drop(pool);
    let _ = std::fs::remove_dir_all(&dir);
}
