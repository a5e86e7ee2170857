//! How the bundled SQLite is built.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use diesel::RunQueryDsl;
use storage::Database;

#[derive(diesel::QueryableByName)]
struct CompileOption {
    #[diesel(sql_type = diesel::sql_types::Text)]
    compile_options: String,
}

/// The bundled SQLite is built with the query planner stability guarantee (`.cargo/config.toml`
/// sets `LIBSQLITE3_FLAGS`). Without it every statement with a bound LIMIT (each `.first()` and
/// every paged list) is parsed and planned again on each run.
#[test]
fn the_bundled_sqlite_keeps_query_plans_stable() {
    let mut conn = Database::parse(":memory:").unwrap().establish().unwrap();
    let options: Vec<CompileOption> = diesel::sql_query("PRAGMA compile_options")
        .load(&mut conn)
        .unwrap();
    assert!(
        options.iter().any(|o| o.compile_options == "ENABLE_QPSG"),
        "SQLite was built without SQLITE_ENABLE_QPSG"
    );
}

/// The statement journal (every savepoint's copy of the pages it changes) stays in memory up to
/// 4 MiB: at SQLite's default of 64 KiB a group-commit batch of a few webhook deliveries wrote
/// it to a temporary file, opened and closed under the write lock on every batch.
#[test]
fn the_bundled_sqlite_keeps_statement_journals_in_memory() {
    let mut conn = Database::parse(":memory:").unwrap().establish().unwrap();
    let options: Vec<CompileOption> = diesel::sql_query("PRAGMA compile_options")
        .load(&mut conn)
        .unwrap();
    assert!(
        options
            .iter()
            .any(|o| o.compile_options == "STMTJRNL_SPILL=4194304"),
        "SQLite was built with another statement journal spill threshold: {:?}",
        options
            .iter()
            .map(|o| &o.compile_options)
            .collect::<Vec<_>>()
    );
}

#[derive(diesel::QueryableByName)]
struct CacheSize {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    cache_size: i64,
}

#[derive(diesel::QueryableByName)]
struct MmapSize {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    mmap_size: i64,
}

/// Every SQLite connection gets the page cache the memory budget counts on, and no memory-mapped
/// I/O (mapped pages of a large file would grow the server's resident memory with the file).
#[test]
fn connections_have_the_budgeted_page_cache_and_no_mmap() {
    let dir = std::env::temp_dir().join(format!("sqlite-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}/m.db", dir.display());
    let mut conn = Database::parse(&url).unwrap().establish().unwrap();
    let cache: CacheSize = diesel::sql_query("PRAGMA cache_size")
        .get_result(&mut conn)
        .unwrap();
    assert_eq!(cache.cache_size, -i64::from(storage::SQLITE_CACHE_KIB));
    let mmap: MmapSize = diesel::sql_query("PRAGMA mmap_size")
        .get_result(&mut conn)
        .unwrap();
    assert_eq!(mmap.mmap_size, 0);
    drop(conn);
    std::fs::remove_dir_all(&dir).unwrap();
}
