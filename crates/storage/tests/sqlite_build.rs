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
