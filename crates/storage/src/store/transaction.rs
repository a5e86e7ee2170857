//! A write transaction on the [`Store`]: the process's SQLite write lock, `BEGIN` (retried
//! once on a fresh connection when the first was dead), and a `COMMIT` whose result decides
//! whether the write is acknowledged.

use std::sync::atomic::Ordering;

use diesel::connection::{AnsiTransactionManager, SimpleConnection, TransactionManager};
use diesel::r2d2::R2D2Connection;
use parking_lot::MutexGuard;

use super::Store;
use crate::fault::{Failure, Fault, StoreError};
use crate::{DbConnection, PooledConn};

impl Store {
    /// This process's SQLite write lock (nothing on PostgreSQL), within the lock timeout.
    pub fn lock_for_write(&self) -> Result<Option<MutexGuard<'_, ()>>, StoreError> {
        match &self.shared.write_lock {
            None => Ok(None),
            Some(lock) => lock
                .try_lock_for(self.shared.database.timeouts.lock)
                .map(Some)
                .ok_or_else(|| {
                    StoreError::new(
                        Fault::Busy,
                        "the SQLite write lock stayed taken past the lock timeout",
                    )
                }),
        }
    }

    /// Checks the files, then begins a write transaction (`BEGIN IMMEDIATE` on SQLite) on
    /// `held` or on a connection from the pool. A `BEGIN` that fails for a reason that
    /// condemns the connection is tried once more on a fresh one.
    pub fn begin(&self, held: Option<PooledConn>) -> Result<PooledConn, StoreError> {
        self.begin_as(held, Begin::default())
    }

    /// Sets a connection begun `unflushed` ([`Store::begin_as`]) back to the store's
    /// durability.
    pub fn flush_in_commit(&self, conn: &mut PooledConn) {
        if conn.is_discarded() || self.shared.database.synchronous != crate::Synchronous::Full {
            return;
        }
        let c: &mut DbConnection = conn;
        if let DbConnection::Sqlite(c) = c {
            // Never back to the pool in a mode that would answer unflushed commits.
            if SimpleConnection::batch_execute(c, "PRAGMA synchronous=FULL").is_err() {
                conn.discard();
            }
        }
    }

    /// [`Store::begin`] as `how` says (a group-commit batch's way). `unflushed`: on SQLite the
    /// setting is the connection's, and stays until [`Store::flush_in_commit`] sets it back,
    /// which the holder must do before the connection goes back to the pool.
    pub fn begin_as(&self, held: Option<PooledConn>, how: Begin) -> Result<PooledConn, StoreError> {
        // SQLite already commits without a flush under `synchronous=normal`.
        let how = Begin {
            unflushed: how.unflushed
                && (self.backend() == crate::Backend::Postgres
                    || self.shared.database.synchronous == crate::Synchronous::Full),
            ..how
        };
        self.files_intact().inspect_err(|e| self.note(Err(e)))?;
        if let Some(damage) = self.damage().filter(|d| d.refuses_writes) {
            return Err(StoreError::new(Fault::Damaged, damage.detail));
        }
        let mut conn = match held {
            Some(c) => {
                c.arm();
                c
            }
            None => self.checkout()?,
        };
        if self.shared.catch_up.swap(false, Ordering::Relaxed) {
            // Holding the write lock, no frame can arrive while the tail is copied, so this
            // writer begins on a fully copied WAL and SQLite rewinds it. A failed pass only
            // leaves the WAL as it was.
            let _ = crate::checkpoint::pass(&mut conn);
        }
        match begin_write(&mut conn, how) {
            Ok(()) => Ok(conn),
            Err(first) => {
                let fault = Fault::of(&first);
                if fault.is_some_and(Fault::discards_connection) {
                    conn.discard();
                }
                // Only a dead connection is worth a second try: a busy database has already
                // been waited for (busy_timeout / lock_timeout).
                if fault != Some(Fault::Unavailable) {
                    let err = StoreError::from_diesel(&first);
                    self.note(Err(&err));
                    return Err(err);
                }
                drop(conn);
                let mut fresh = self.live_checkout()?;
                begin_write(&mut fresh, how).map_err(|e| {
                    if Fault::of(&e).is_some_and(Fault::discards_connection) {
                        fresh.discard();
                    }
                    let err = StoreError::from_diesel(&e);
                    self.note(Err(&err));
                    err
                })?;
                Ok(fresh)
            }
        }
    }

    /// Commits (when `out` is a success) or rolls back (when it is not) the transaction begun
    /// by [`Store::begin`]. A failed `COMMIT`, or files replaced while it ran, turn a success
    /// into a storage failure: nothing may be acknowledged that is not stored where it will
    /// be read.
    pub fn finish<T, E>(&self, conn: &mut PooledConn, out: Result<T, E>) -> Result<T, Failure<E>>
    where
        E: std::error::Error + 'static,
    {
        match out {
            Ok(value) => {
                if let Err(e) = commit(conn) {
                    if Fault::of(&e).is_none_or(Fault::discards_connection) || conn.is_broken() {
                        conn.discard();
                    }
                    let err = self.explain(&e);
                    self.note(Err(&err));
                    return Err(Failure::Store(err));
                }
                self.files_intact().inspect_err(|_| conn.discard())?;
                Ok(value)
            }
            Err(e) => {
                if rollback(conn).is_err() || conn.is_broken() {
                    conn.discard();
                }
                if Fault::find(&e).is_some_and(Fault::discards_connection) {
                    conn.discard();
                }
                Err(Failure::Op(e))
            }
        }
    }

    /// A failed `COMMIT` as a [`StoreError`]. When SQLite has already rolled the transaction
    /// back (a full disk mid-transaction), the commit reports only "no transaction is active";
    /// the state of the files then tells what happened.
    fn explain(&self, err: &diesel::result::Error) -> StoreError {
        if Fault::of(err).is_none()
            && let Some(files) = self.files()
            && let Err(state) = files.writable()
        {
            return StoreError::new(state.fault, format!("{err} ({})", state.detail));
        }
        StoreError::from_diesel(err)
    }
}

/// How a write transaction begins ([`Store::begin_as`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Begin {
    /// The `COMMIT` does not wait for the disk flush
    /// ([`crate::group_commit::Durability::Unflushed`]).
    pub unflushed: bool,
    /// PostgreSQL: the longest a statement of the transaction waits for a lock (`SET LOCAL
    /// lock_timeout`), instead of the connection's lock timeout. SQLite has one writer at a
    /// time, which never waits for a row.
    pub lock_wait: Option<std::time::Duration>,
}

/// `BEGIN IMMEDIATE` on SQLite (the write lock is taken now, not at the first write, so a
/// transaction never fails half-way to upgrade a stale snapshot), `BEGIN` on PostgreSQL.
/// `unflushed`: the `COMMIT` does not wait for the disk flush (on SQLite the pragma must be
/// set outside a transaction; on PostgreSQL `SET LOCAL` ends with it). PostgreSQL's settings
/// go in the `BEGIN`'s round trip.
fn begin_write(conn: &mut DbConnection, how: Begin) -> diesel::QueryResult<()> {
    let unflushed = how.unflushed;
    match conn {
        DbConnection::Sqlite(c) => {
            if unflushed {
                SimpleConnection::batch_execute(c, "PRAGMA synchronous=NORMAL")?;
            }
            let begun = AnsiTransactionManager::begin_transaction_sql(c, "BEGIN IMMEDIATE");
            if unflushed && begun.is_err() {
                // The caller gets no connection to set back: it must not reach the pool
                // unflushed (a failure here is the connection's, which then is discarded).
                SimpleConnection::batch_execute(c, "PRAGMA synchronous=FULL")?;
            }
            begun
        }
        DbConnection::Postgresql(c) => {
            let mut sql = String::from("BEGIN");
            if unflushed {
                sql.push_str("; SET LOCAL synchronous_commit = off");
            }
            if let Some(wait) = how.lock_wait {
                sql.push_str(&format!("; SET LOCAL lock_timeout = {}", wait.as_millis()));
            }
            let begun = AnsiTransactionManager::begin_transaction_sql(c, &sql);
            if begun.is_err() {
                // A setting refused after the BEGIN would leave a transaction Diesel does not
                // know of: never back to the pool like that.
                let _ = SimpleConnection::batch_execute(c, "ROLLBACK");
            }
            begun
        }
    }
}

/// PostgreSQL answers the `COMMIT` of a transaction that a failed statement aborted with a
/// `ROLLBACK`, not an error, and Diesel reports that as committed: a write that swallowed a
/// failed statement and answered Ok would have its whole batch rolled back and answered as
/// stored (a savepoint released after each write used to catch it, `crate::savepoint` no longer
/// sends one). A savepoint sent with the `COMMIT`, in the same round trip, fails there instead,
/// and the `COMMIT` is not run.
fn commit(conn: &mut DbConnection) -> diesel::QueryResult<()> {
    match conn {
        DbConnection::Postgresql(c) => {
            let committed = SimpleConnection::batch_execute(c, "SAVEPOINT committing; COMMIT");
            // Diesel follows libpq's transaction state: after the COMMIT (done or failed) it
            // knows the transaction ended; after a refused savepoint it is still open.
            if committed.is_err() && crate::in_transaction(conn) {
                let _ = rollback(conn);
            }
            committed
        }
        DbConnection::Sqlite(c) => AnsiTransactionManager::commit_transaction(c),
    }
}

fn rollback(conn: &mut DbConnection) -> diesel::QueryResult<()> {
    crate::with_backend!(conn, |c| AnsiTransactionManager::rollback_transaction(c))
}
