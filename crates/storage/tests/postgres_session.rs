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

/// Prepared statements are planned with their values (PostgreSQL's default): a forced generic
/// plan turned a lookup by a skewed foreign key into a scan of the whole table.
#[test]
#[cfg_attr(
    not(postgres_tests),
    ignore = "needs TEST_POSTGRES_URL (a PostgreSQL server)"
)]
fn connections_plan_with_values_and_bound_statements() {
    let Ok(url) = std::env::var("TEST_POSTGRES_URL") else {
        return;
    };
    let mut conn = Database::parse(&url).unwrap().establish().unwrap();
    assert_eq!(setting(&mut conn, "plan_cache_mode"), "auto");
    assert_ne!(setting(&mut conn, "statement_timeout"), "0");
    assert_ne!(
        setting(&mut conn, "idle_in_transaction_session_timeout"),
        "0"
    );
}

/// A session holds a lock a pending migration needs (as a server killed mid-migration leaves
/// behind until PostgreSQL notices): the migration waits it out instead of failing, and
/// applies once the lock is gone.
#[test]
#[cfg_attr(
    not(postgres_tests),
    ignore = "needs TEST_POSTGRES_URL (a PostgreSQL server)"
)]
fn migrations_outlast_a_lock_held_by_another_session() {
    let admin = std::env::var("TEST_POSTGRES_URL").ok();
    let Some(db) =
        storage::testing::TestDatabase::create(storage::Backend::Postgres, admin.as_deref())
            .unwrap()
    else {
        eprintln!("TEST_POSTGRES_URL not set: skipped");
        return;
    };
    use storage::diesel::connection::SimpleConnection;
    let mut conn = db.migrated_connection().unwrap();
    conn.batch_execute(include_str!(
        "../../../migrations/postgres/2026-11-29-000013_owners_and_audit/down.sql"
    ))
    .unwrap();
    conn.batch_execute("DELETE FROM __diesel_schema_migrations WHERE version = '20261129000013'")
        .unwrap();
    let database = storage::Database::parse(&db.url)
        .unwrap()
        .with_timeouts(storage::Timeouts {
            lock: std::time::Duration::from_millis(200),
            ..storage::Timeouts::default()
        });
    let mut holder = database.establish().unwrap();
    holder
        .batch_execute("BEGIN; LOCK TABLE notes IN ACCESS EXCLUSIVE MODE;")
        .unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(3));
        holder.batch_execute("ROLLBACK;").unwrap();
    });
    let mut migrating = database.establish().unwrap();
    let mut waits = 0;
    let ran = storage::run_migrations_patiently(
        &mut migrating,
        std::time::Duration::from_secs(30),
        |_, _| waits += 1,
    )
    .unwrap();
    release.join().unwrap();
    assert_eq!(ran, 1, "the pending migration ran");
    assert!(waits >= 1, "it waited for the lock");
    // And a lock held past the patience is an error, not a hang.
    conn.batch_execute(include_str!(
        "../../../migrations/postgres/2026-11-29-000013_owners_and_audit/down.sql"
    ))
    .unwrap();
    conn.batch_execute("DELETE FROM __diesel_schema_migrations WHERE version = '20261129000013'")
        .unwrap();
    conn.batch_execute("BEGIN; LOCK TABLE notes IN ACCESS EXCLUSIVE MODE;")
        .unwrap();
    let started = std::time::Instant::now();
    let refused = storage::run_migrations_patiently(
        &mut migrating,
        std::time::Duration::from_secs(2),
        |_, _| {},
    );
    assert!(refused.is_err(), "{refused:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    conn.batch_execute("ROLLBACK;").unwrap();
}

/// Times that one instance writes and another compares (leases, due retries) are read off the
/// server's clock, which every instance shares, and it moves within a transaction (not `now()`,
/// the transaction's start).
#[test]
#[cfg_attr(
    not(postgres_tests),
    ignore = "needs TEST_POSTGRES_URL (a PostgreSQL server)"
)]
fn the_shared_clock_is_the_servers_and_moves_within_a_transaction() {
    let Ok(url) = std::env::var("TEST_POSTGRES_URL") else {
        return;
    };
    use diesel::Connection;
    use storage::timestamp::{database_ms, local_ms};
    let mut conn = Database::parse(&url).unwrap().establish().unwrap();
    conn.transaction::<_, diesel::result::Error, _>(|c| {
        let begun: i64 = diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(
            "CAST(FLOOR(EXTRACT(EPOCH FROM now()) * 1000) AS BIGINT)",
        ))
        .get_result(c)?;
        std::thread::sleep(std::time::Duration::from_millis(50));
        let later = database_ms(c)?;
        assert!(later >= begun + 50, "{begun} then {later}");
        // The server runs on this machine here: its clock and ours agree.
        assert!((later - local_ms()).abs() < 5_000, "{later}");
        Ok(())
    })
    .unwrap();
}
