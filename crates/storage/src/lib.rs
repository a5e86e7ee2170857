#![doc = include_str!("../README.md")]

mod backend;
mod checkpoint;
pub mod counts;
pub mod cutoff;
pub mod damage;
pub mod fault;
mod fault_log;
pub mod files;
pub mod group_commit;
mod migrations;
pub mod observe;
mod priority;
pub mod replicas;
pub mod seed;
mod store;
#[cfg(feature = "testing")]
pub mod testing;
pub mod timestamp;
pub mod wal;
mod write_queue;

pub use backend::{
    Backend, Conn, Database, DbConnection, Pool, PooledConn, SQLITE_CACHE_KIB, StorageError,
    Synchronous, Timeouts,
};
pub use checkpoint::{CATCH_UP_FRAMES, REWIND_AT_FRAMES};
pub use fault::{Failure, Fault, StoreError};
pub use group_commit::GroupCommit;
pub use migrations::{
    Migrated, MigrationError, applied_migrations, migrate, migration_names, revert_all_migrations,
    run_migrations, run_migrations_patiently,
};
pub use priority::{CHECKPOINTER_NICE, idle_own_priority, lower_own_priority};
pub use store::{Begin, FAULT_MEMORY, Store};
pub use write_queue::WriteQueue;

/// Re-exported so domain crates use the exact Diesel this crate was built with.
pub use diesel;

/// Runs `$body` with `$c` bound to the concrete connection (`PgConnection` or
/// `SqliteConnection`) inside a [`DbConnection`]. For the few Diesel statements that only
/// compile against a concrete backend.
#[macro_export]
macro_rules! with_backend {
    ($conn:expr, |$c:ident| $body:expr) => {
        match $conn {
            $crate::DbConnection::Postgresql($c) => $body,
            $crate::DbConnection::Sqlite($c) => $body,
        }
    };
}

/// Whether `conn` is inside a transaction now (a nested `Connection::transaction` would then
/// be a savepoint: two more round trips on PostgreSQL).
pub fn in_transaction(conn: &mut DbConnection) -> bool {
    use diesel::connection::{Connection, TransactionManager};
    <DbConnection as Connection>::TransactionManager::transaction_manager_status_mut(conn)
        .transaction_depth()
        .is_ok_and(|depth| depth.is_some())
}

/// `f` in a savepoint of the transaction `conn` is in (in a transaction of its own when it is
/// in none), so that a failing `f` is undone alone and the transaction goes on.
///
/// On PostgreSQL the savepoint is never released: the transaction's `COMMIT` commits it with
/// the rest, where Diesel's nested transaction sends `SAVEPOINT` and `RELEASE`, two round trips
/// around every write of a group-commit batch (`POST /notes` sent four statements where three
/// do). Savepoints of one name nest, so `ROLLBACK TO` it undoes the latest, this `f`'s. Diesel
/// still follows the transaction's state: it reads libpq's after every statement. On SQLite a
/// savepoint costs no round trip, and an open one keeps every page changed after it in the
/// statement journal, so Diesel's nested transaction (released at once) stays.
pub fn savepoint<T, E, F>(conn: &mut DbConnection, f: F) -> Result<T, E>
where
    F: FnOnce(&mut DbConnection) -> Result<T, E>,
    E: From<diesel::result::Error>,
{
    use diesel::connection::{Connection, SimpleConnection};
    if conn.backend() != Backend::Postgres || !in_transaction(conn) {
        return conn.transaction(f);
    }
    conn.batch_execute("SAVEPOINT nested")?;
    let out = f(conn);
    if out.is_err() {
        // Released too (in the same round trip): a savepoint rolled back but kept would be a
        // level that the next write's changes give a subtransaction id of its own, and past 64
        // of those in one transaction PostgreSQL's cache of them overflows.
        conn.batch_execute("ROLLBACK TO SAVEPOINT nested; RELEASE SAVEPOINT nested")?;
    }
    out
}

/// True when `err` is a violation of a unique constraint (on either backend).
pub fn is_unique_violation(err: &diesel::result::Error) -> bool {
    matches!(
        err,
        diesel::result::Error::DatabaseError(diesel::result::DatabaseErrorKind::UniqueViolation, _)
    )
}
