//! How each PostgreSQL connection is set up (runs when `TEST_POSTGRES_URL` names a server).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use diesel::RunQueryDsl;
use storage::Database;

#[derive(diesel::QueryableByName)]
struct Setting {
    #[diesel(sql_type = diesel::sql_types::Text)]
    value: String,
}

fn setting(conn: &mut storage::DbConnection, name: &str) -> String {
    diesel::sql_query(format!("SELECT current_setting('{name}') AS value"))
        .get_result::<Setting>(conn)
        .unwrap()
        .value
}

/// Prepared statements keep one generic plan: under the default a statement with a bound LIMIT
/// (every list page) is planned again on every execution.
#[test]
fn connections_keep_generic_plans_and_bounded_statements() {
    let Ok(url) = std::env::var("TEST_POSTGRES_URL") else {
        return;
    };
    let mut conn = Database::parse(&url).unwrap().establish().unwrap();
    assert_eq!(setting(&mut conn, "plan_cache_mode"), "force_generic_plan");
    assert_ne!(setting(&mut conn, "statement_timeout"), "0");
    assert_ne!(
        setting(&mut conn, "idle_in_transaction_session_timeout"),
        "0"
    );
}
