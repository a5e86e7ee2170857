//! The kept counts (`storage::counts`) equal `COUNT(*)` after random concurrent inserts and
//! deletes on every counted table, on SQLite and on PostgreSQL (when `TEST_POSTGRES_URL` is
//! set): several connections write at once, some of their transactions roll back, notes are
//! deleted with their comments (cascade), and multi-row statements insert and delete many rows
//! at a time. Every list's `total` reads these counts, so this is what keeps it exact.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU64, Ordering};

use diesel::connection::SimpleConnection;
use diesel::sql_types::BigInt;
use diesel::{Connection, QueryableByName, RunQueryDsl};
use proptest::prelude::*;
use storage::counts::{COUNTED_TABLES, Counted, audit, total};
use storage::testing::{TestDatabase, on_each_backend};
use storage::{Database, DbConnection};

/// One statement a writer runs.
#[derive(Debug, Clone)]
enum Op {
    /// `n` rows into a whole-table counted table (by index into `COUNTED_TABLES`).
    Insert { table: usize, n: u8 },
    /// Up to `n` of its rows, lowest ids first.
    Delete { table: usize, n: u8 },
    /// `n` comments on the `pick`-th note.
    Comment { pick: u8, n: u8 },
    /// Up to `n` comments of the `pick`-th note.
    Uncomment { pick: u8, n: u8 },
    /// `n` tokens for the `pick`-th user (of [`USERS`]).
    Issue { pick: u8, n: u8 },
    /// Up to `n` tokens of the `pick`-th user.
    Unissue { pick: u8, n: u8 },
}

/// Users made before the writers start (tokens need one).
const USERS: u8 = 3;

/// A writer's transaction: its statements, committed or rolled back.
#[derive(Debug, Clone)]
struct Transaction {
    ops: Vec<Op>,
    commit: bool,
}

fn op() -> impl Strategy<Value = Op> {
    let table = 0..COUNTED_TABLES.len();
    prop_oneof![
        (table.clone(), 1..6u8).prop_map(|(table, n)| Op::Insert { table, n }),
        (table, 1..4u8).prop_map(|(table, n)| Op::Delete { table, n }),
        (any::<u8>(), 1..5u8).prop_map(|(pick, n)| Op::Comment { pick, n }),
        (any::<u8>(), 1..3u8).prop_map(|(pick, n)| Op::Uncomment { pick, n }),
        (any::<u8>(), 1..4u8).prop_map(|(pick, n)| Op::Issue { pick, n }),
        (any::<u8>(), 1..3u8).prop_map(|(pick, n)| Op::Unissue { pick, n }),
    ]
}

fn transaction() -> impl Strategy<Value = Transaction> {
    (prop::collection::vec(op(), 1..5), prop::bool::weighted(0.8))
        .prop_map(|(ops, commit)| Transaction { ops, commit })
}

/// Unique values across every statement of the run (titles, account ids, tag names).
static SERIAL: AtomicU64 = AtomicU64::new(0);

/// `n` rows for `table`, through a recursive CTE: one multi-row statement on both backends.
fn insert_sql(table: &str, n: u8) -> String {
    let from = SERIAL.fetch_add(u64::from(n), Ordering::Relaxed);
    let to = from + u64::from(n) - 1;
    let rows = match table {
        "notes" => "INSERT INTO notes (title, body) SELECT 'n' || k, 'b' FROM g",
        "tags" => "INSERT INTO tags (name) SELECT 'tag-' || k FROM g",
        "articles" => {
            "INSERT INTO articles (title, author, category, created_at) \
             SELECT 'a' || k, 'x', NULL, '2026-01-01T00:00:00Z' FROM g"
        }
        "versioned_notes" => {
            "INSERT INTO versioned_notes (title, body, tags, created_at, updated_at) \
             SELECT 'v' || k, 'b', '[]', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z' FROM g"
        }
        "accounts" => {
            "INSERT INTO accounts (account_id, owner, balance_cents, is_open, last_sequence, \
             updated_at) SELECT 'acc-' || k, 'o', 0, TRUE, 0, '2026-01-01T00:00:00Z' FROM g"
        }
        "webhook_events" => {
            "INSERT INTO webhook_events (event_type, payload, delivered_at, signature_t, \
             signature_v1) SELECT 'e', '{}', '2026-01-01T00:00:00Z', 't' || k, 'v' FROM g"
        }
        other => panic!("not a counted table: {other}"),
    };
    format!(
        "WITH RECURSIVE g(k) AS (SELECT CAST({from} AS BIGINT) UNION ALL \
         SELECT k + 1 FROM g WHERE k < {to}) {rows}"
    )
}

fn delete_sql(table: &str, n: u8) -> String {
    let key = if table == "accounts" {
        "account_id"
    } else {
        "id"
    };
    format!(
        "DELETE FROM {table} WHERE {key} IN \
         (SELECT {key} FROM {table} ORDER BY {key} LIMIT {n})"
    )
}

/// The `pick`-th note's id (by id, wrapping), as SQL: NULL when there are no notes, so the
/// statement then touches nothing.
fn picked_note(pick: u8) -> String {
    format!(
        "(SELECT id FROM notes ORDER BY id LIMIT 1 OFFSET \
         (SELECT CASE WHEN COUNT(*) = 0 THEN 0 ELSE {pick} % COUNT(*) END FROM notes))"
    )
}

fn picked_user(pick: u8) -> String {
    format!(
        "(SELECT id FROM users ORDER BY id LIMIT 1 OFFSET {})",
        pick % USERS
    )
}

fn run(conn: &mut DbConnection, op: &Op) -> diesel::QueryResult<()> {
    let sql = match op {
        Op::Insert { table, n } => insert_sql(COUNTED_TABLES[*table], *n),
        Op::Delete { table, n } => delete_sql(COUNTED_TABLES[*table], *n),
        Op::Comment { pick, n } => format!(
            "WITH RECURSIVE g(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM g WHERE k < {n}) \
             INSERT INTO comments (note_id, body) SELECT note.id, 'c' FROM g, \
             (SELECT {} AS id) note WHERE note.id IS NOT NULL",
            picked_note(*pick)
        ),
        Op::Uncomment { pick, n } => format!(
            "DELETE FROM comments WHERE id IN (SELECT id FROM comments \
             WHERE note_id = {} ORDER BY id LIMIT {n})",
            picked_note(*pick)
        ),
        Op::Issue { pick, n } => {
            let from = SERIAL.fetch_add(u64::from(*n), Ordering::Relaxed);
            let to = from + u64::from(*n) - 1;
            format!(
                "WITH RECURSIVE g(k) AS (SELECT CAST({from} AS BIGINT) UNION ALL \
                 SELECT k + 1 FROM g WHERE k < {to}) \
                 INSERT INTO tokens (user_id, token_hash, scope, label, created_at) \
                 SELECT {}, 'hash-' || k, 'read', '', '2026-01-01T00:00:00Z' FROM g",
                picked_user(*pick)
            )
        }
        Op::Unissue { pick, n } => format!(
            "DELETE FROM tokens WHERE id IN (SELECT id FROM tokens \
             WHERE user_id = {} ORDER BY id LIMIT {n})",
            picked_user(*pick)
        ),
    };
    conn.batch_execute(&sql)
}

/// Runs one writer's transactions; a transaction that loses a race (deadlock, serialization,
/// a lock wait past the timeout) simply did not happen, which the counts must reflect too.
fn write(url: &str, transactions: &[Transaction]) {
    let mut conn = Database::parse(url).unwrap().establish().unwrap();
    for t in transactions {
        let _ = conn.transaction::<(), diesel::result::Error, _>(|c| {
            for op in &t.ops {
                run(c, op)?;
            }
            if t.commit {
                Ok(())
            } else {
                Err(diesel::result::Error::RollbackTransaction)
            }
        });
    }
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

fn count_star(conn: &mut DbConnection, sql: &str) -> i64 {
    diesel::sql_query(sql).get_result::<Count>(conn).unwrap().n
}

fn check(db: &TestDatabase, writers: &[Vec<Transaction>]) {
    let conn = &mut Database::parse(&db.url).unwrap().establish().unwrap();
    std::thread::scope(|s| {
        for w in writers {
            s.spawn(|| write(&db.url, w));
        }
    });
    assert_eq!(audit(conn).unwrap(), vec![], "{:?}", db.backend());
    for table in COUNTED_TABLES {
        let rows = count_star(conn, &format!("SELECT COUNT(*) AS n FROM {table}"));
        assert_eq!(total(conn, Counted::table(table)).unwrap(), rows, "{table}");
    }
    let note = count_star(conn, "SELECT COALESCE(MIN(id), 0) AS n FROM notes");
    let comments = count_star(
        conn,
        &format!("SELECT COUNT(*) AS n FROM comments WHERE note_id = {note}"),
    );
    assert_eq!(total(conn, Counted::comments_of(note)).unwrap(), comments);
    let user = count_star(conn, "SELECT MIN(id) AS n FROM users");
    let tokens = count_star(
        conn,
        &format!("SELECT COUNT(*) AS n FROM tokens WHERE user_id = {user}"),
    );
    assert_eq!(total(conn, Counted::tokens_of(user)).unwrap(), tokens);
}

#[test]
fn kept_counts_equal_count_star_after_concurrent_writes() {
    on_each_backend(|db, conn| {
        for i in 0..USERS {
            conn.batch_execute(&format!(
                "INSERT INTO users (name, created_at) VALUES ('u{i}', '2026-01-01T00:00:00Z')"
            ))
            .unwrap();
        }
        // Few cases, each with several writers: every case adds to the same database, so the
        // counts are checked against a history that keeps growing.
        let config = ProptestConfig {
            cases: 12,
            failure_persistence: None,
            ..ProptestConfig::default()
        };
        proptest!(config, |(writers in prop::collection::vec(
            prop::collection::vec(transaction(), 1..8), 2..5))| {
            check(db, &writers);
        });
    });
}

#[test]
fn an_empty_database_counts_zero() {
    on_each_backend(|_, conn| {
        for table in COUNTED_TABLES {
            assert_eq!(total(conn, Counted::table(table)).unwrap(), 0, "{table}");
        }
        assert_eq!(total(conn, Counted::comments_of(1)).unwrap(), 0);
        assert_eq!(audit(conn).unwrap(), vec![]);
    });
}

/// The counts migration on a database written by the previous release (no `row_counts`, rows in
/// every counted table): it counts what is there, so the first list after the upgrade already
/// shows exact totals, and later writes keep them.
#[test]
fn the_counts_migration_counts_existing_rows() {
    const UP: [&str; 2] = [
        include_str!("../../../migrations/sqlite/2026-11-26-000010_row_counts/up.sql"),
        include_str!("../../../migrations/postgres/2026-11-26-000010_row_counts/up.sql"),
    ];
    const DOWN: [&str; 2] = [
        include_str!("../../../migrations/sqlite/2026-11-26-000010_row_counts/down.sql"),
        include_str!("../../../migrations/postgres/2026-11-26-000010_row_counts/down.sql"),
    ];
    on_each_backend(|db, conn| {
        let i = usize::from(db.backend() == storage::Backend::Postgres);
        conn.batch_execute(DOWN[i]).unwrap();
        for (table, n) in COUNTED_TABLES.iter().zip([3u8, 1, 4, 1, 5, 2]) {
            conn.batch_execute(&insert_sql(table, n)).unwrap();
        }
        run(conn, &Op::Comment { pick: 0, n: 3 }).unwrap();
        run(conn, &Op::Comment { pick: 2, n: 2 }).unwrap();
        for name in ["ann", "bob"] {
            conn.batch_execute(&format!(
                "INSERT INTO users (name, created_at) VALUES ('{name}', '2026-01-01T00:00:00Z')"
            ))
            .unwrap();
        }
        run(conn, &Op::Issue { pick: 1, n: 3 }).unwrap();
        conn.batch_execute(UP[i]).unwrap();
        assert_eq!(audit(conn).unwrap(), vec![]);
        assert_eq!(total(conn, Counted::table("notes")).unwrap(), 3);
        assert_eq!(total(conn, Counted::table("accounts")).unwrap(), 5);
        let first = count_star(conn, "SELECT MIN(id) AS n FROM notes");
        assert_eq!(total(conn, Counted::comments_of(first)).unwrap(), 3);
        let bob = count_star(conn, "SELECT MAX(id) AS n FROM users");
        assert_eq!(total(conn, Counted::tokens_of(bob)).unwrap(), 3);
        // A user deleted with their tokens (cascade) takes the count along.
        run(conn, &Op::Unissue { pick: 1, n: 1 }).unwrap();
        conn.batch_execute(&format!("DELETE FROM users WHERE id = {bob}"))
            .unwrap();
        assert_eq!(audit(conn).unwrap(), vec![]);
        assert_eq!(total(conn, Counted::tokens_of(bob)).unwrap(), 0);
        run(conn, &Op::Delete { table: 0, n: 1 }).unwrap();
        run(conn, &Op::Insert { table: 1, n: 2 }).unwrap();
        assert_eq!(audit(conn).unwrap(), vec![]);
        assert_eq!(total(conn, Counted::table("notes")).unwrap(), 2);
        assert_eq!(total(conn, Counted::table("tags")).unwrap(), 3);
    });
}

/// A name that is not a counted table never reaches the SQL text of a total.
#[test]
fn only_counted_tables_have_a_total() {
    on_each_backend(|_, conn| {
        assert!(total(conn, Counted::table("notes; DROP TABLE notes")).is_err());
        assert_eq!(total(conn, Counted::table("notes")).unwrap(), 0);
    });
}

/// A total keeps its statement cacheable: the prepared statement is made once and reused, so a
/// list is not parsed and planned again on every request (a `sql()` literal would prevent it).
#[test]
fn a_total_is_prepared_once() {
    use diesel::connection::{Instrumentation, InstrumentationEvent};
    use std::sync::{Arc, Mutex};
    on_each_backend(|_, conn| {
        let cached = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen = Arc::clone(&cached);
        let watch = move |event: InstrumentationEvent<'_>| {
            if let InstrumentationEvent::CacheQuery { sql, .. } = event {
                seen.lock().unwrap().push(sql.to_owned());
            }
        };
        conn.set_instrumentation(Box::new(watch) as Box<dyn Instrumentation>);
        for _ in 0..3 {
            total(conn, Counted::table("notes")).unwrap();
            total(conn, Counted::comments_of(7)).unwrap();
        }
        let cached = cached.lock().unwrap();
        let totals: Vec<&String> = cached.iter().filter(|s| s.contains("row_counts")).collect();
        assert_eq!(totals.len(), 2, "{cached:?}");
    });
}
