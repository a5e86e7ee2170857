//! [`Store`]: the one way the service reads and writes. A pool, plus what keeps a 2xx honest:
//!
//! - every write runs in an explicit transaction whose `COMMIT` result is checked. (SQLite
//!   commits an autocommit `INSERT … RETURNING` only when the statement is reset, and Diesel
//!   does not look at the reset's result: on a full disk the row was reported and then
//!   silently rolled back.)
//! - on SQLite, one write lock per process, taken with a bounded wait before `BEGIN IMMEDIATE`,
//!   so writers queue in order instead of sleeping in SQLite's busy handler;
//! - a connection that met a fault after which it cannot be trusted is discarded, not reused;
//! - a `BEGIN` that fails on a dead connection is retried once on a fresh one (nothing had been
//!   done yet, so the retry cannot write twice);
//! - the SQLite files are checked before and after each write ([`crate::files`]);
//! - the last write fault is remembered for a while, for `/health`.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use diesel::RunQueryDsl;
use diesel::r2d2::R2D2Connection;
use parking_lot::Mutex;

use crate::fault::{Failure, Fault, StoreError};
use crate::fault_log::FaultLog;

mod transaction;

use crate::files::Files;
use crate::{Backend, Database, DbConnection, Pool, PooledConn, StorageError};
pub use transaction::Begin;

/// How long a write fault keeps `/health` degraded when no write has succeeded since.
pub const FAULT_MEMORY: Duration = Duration::from_secs(10);

#[derive(Clone)]
pub struct Store {
    pool: Pool,
    shared: Arc<Shared>,
}

struct Shared {
    database: Database,
    /// SQLite only: one writer at a time in this process.
    write_lock: Option<Mutex<()>>,
    /// SQLite files only: raised by the checkpointer when the next writer should copy the
    /// WAL's short tail before it begins (see [`crate::checkpoint`]).
    catch_up: Arc<AtomicBool>,
    /// SQLite files only: stops the WAL checkpointer when the last clone is dropped.
    _checkpointer: Option<std::sync::mpsc::Sender<()>>,
    /// SQLite files only (not `:memory:`), once they have been opened.
    files: OnceLock<Files>,
    /// Keeps the WAL this process uses from being deleted and recreated by SQLite when the
    /// pool happens to close its last connection (see [`crate::files`]).
    sentinel: Mutex<Option<DbConnection>>,
    faults: FaultLog,
    /// SQLite files with `quick_check_every`: stops the background check when dropped.
    _quick_check: Option<std::sync::mpsc::Sender<()>>,
    /// Told about batches, checkouts and faults (the server's metrics).
    observer: std::sync::RwLock<Arc<dyn crate::observe::Observer>>,
    /// SQLite files only: the WAL as the checkpointer last saw it.
    wal: Arc<crate::observe::WalProgress>,
    /// Damage found in what is stored (see [`crate::damage`]).
    damage: crate::damage::SharedFound,
    started: Instant,
}

impl Store {
    /// Opens a pool (connecting once, so a bad URL fails here) and records the SQLite files.
    /// A SQLite WAL that lost committed transactions is found before SQLite opens the file
    /// ([`crate::damage::on_open`]): the store then refuses writes.
    pub fn open(database: Database, pool_size: u32) -> Result<Store, StorageError> {
        let damage = crate::damage::on_open(&database)?;
        let pool = database.pool(pool_size)?;
        let store = Store::with_pool(database, pool, true);
        store.found_damage(damage);
        store.watch_files();
        Ok(store)
    }

    /// Like [`Store::open`], but returns at once even when the database is unreachable.
    pub fn lazy(database: Database, pool_size: u32) -> Result<Store, StorageError> {
        let damage = crate::damage::on_open(&database)?;
        let pool = database.lazy_pool(pool_size);
        let store = Store::with_pool(database, pool, true);
        store.found_damage(damage);
        Ok(store)
    }

    fn found_damage(&self, damage: Option<crate::damage::Damage>) {
        if let Some(damage) = damage {
            self.shared.damage.record(damage);
        }
    }

    /// Tells `observer` about this store's work from now on (one observer per store).
    pub fn observe(&self, observer: Arc<dyn crate::observe::Observer>) {
        if let Ok(mut current) = self.shared.observer.write() {
            *current = observer;
        }
    }

    /// The store's observer (the default one ignores everything).
    pub fn observer(&self) -> Arc<dyn crate::observe::Observer> {
        self.shared
            .observer
            .read()
            .map_or_else(|_| crate::observe::nobody(), |o| Arc::clone(&o))
    }

    /// SQLite files: the WAL's frames and how many are copied back, as last seen.
    pub fn wal_progress(&self) -> Option<(i64, i64)> {
        self.shared.wal.get()
    }

    /// The damage found in what is stored, if any; remembered until the process ends.
    pub fn damage(&self) -> Option<crate::damage::Damage> {
        self.shared.damage.get()
    }

    /// `checkpointer`: whether to start the WAL checkpointer of a SQLite file (tests leave it
    /// off to control the WAL themselves).
    fn with_pool(database: Database, pool: Pool, checkpointer: bool) -> Store {
        let write_lock = (database.backend() == Backend::Sqlite).then(|| Mutex::new(()));
        let catch_up = Arc::new(AtomicBool::new(false));
        let wal = Arc::new(crate::observe::WalProgress::default());
        let checkpointer = database
            .sqlite_path()
            .filter(|_| checkpointer)
            .map(|_| crate::checkpoint::start(database.clone(), catch_up.clone(), wal.clone()));
        let damage = crate::damage::SharedFound::default();
        let quick_check = match (database.sqlite_path(), database.quick_check_every) {
            (Some(_), Some(every)) => {
                let found = Arc::downgrade(&damage);
                Some(crate::damage::start_quick_check(
                    database.clone(),
                    every,
                    found,
                ))
            }
            _ => None,
        };
        Store {
            pool,
            shared: Arc::new(Shared {
                database,
                write_lock,
                catch_up,
                _checkpointer: checkpointer,
                files: OnceLock::new(),
                sentinel: Mutex::new(None),
                faults: FaultLog::default(),
                _quick_check: quick_check,
                observer: std::sync::RwLock::new(crate::observe::nobody()),
                wal,
                damage,
                started: Instant::now(),
            }),
        }
    }

    pub fn backend(&self) -> Backend {
        self.shared.database.backend()
    }

    pub fn database(&self) -> &Database {
        &self.shared.database
    }

    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    pub fn timeouts(&self) -> crate::Timeouts {
        self.shared.database.timeouts
    }

    /// Opens the sentinel connection and records which files it opened. Until this has
    /// happened once, there is nothing to compare against and the file checks pass.
    fn watch_files(&self) {
        let Some(path) = self.shared.database.sqlite_path() else {
            return;
        };
        if self.shared.files.get().is_some() {
            return;
        }
        let Ok(mut conn) = self.shared.database.establish() else {
            return;
        };
        // A read opens the WAL (and creates it if needed).
        let _ = diesel::sql_query("SELECT 1 FROM sqlite_master LIMIT 1").execute(&mut conn);
        *self.shared.sentinel.lock() = Some(conn);
        if let Some(files) = Files::record(path) {
            let _ = self.shared.files.set(files);
        }
    }

    /// Read on every write: a lock-free `OnceLock` once recorded.
    fn files(&self) -> Option<&Files> {
        self.shared.database.sqlite_path()?;
        if self.shared.files.get().is_none() {
            // A lazily started store records the files on first use.
            self.watch_files();
        }
        self.shared.files.get()
    }

    /// The SQLite files at the configured path are the ones this process writes to.
    pub fn files_intact(&self) -> Result<(), StoreError> {
        match self.files() {
            Some(files) => files.intact(),
            None => Ok(()),
        }
    }

    /// A connection from the pool, within the checkout timeout.
    pub fn checkout(&self) -> Result<PooledConn, StoreError> {
        let started = Instant::now();
        let conn = self.pool.get();
        self.observer().checkout(started.elapsed(), conn.is_ok());
        conn.map_err(|e| {
            let err = StoreError::new(Fault::Unavailable, format!("no database connection: {e}"));
            self.note(Err(&err));
            err
        })
    }

    /// A connection checked with a round trip, for the second try after a dead one: when the
    /// database dropped every session (a restart), the pool still holds the others, and each
    /// of those was handed back too recently to be checked on its way out
    /// (`backend::pool::VALIDATION_BYPASS`). Dead ones are discarded, at most a pool's worth.
    fn live_checkout(&self) -> Result<PooledConn, StoreError> {
        for _ in 0..self.pool.max_size() {
            let mut conn = self.checkout()?;
            match conn.ping() {
                Ok(_) => return Ok(conn),
                Err(e) if Fault::of(&e) == Some(Fault::Unavailable) => conn.discard(),
                Err(e) => return Err(StoreError::from_diesel(&e)),
            }
        }
        self.checkout()
    }

    /// Runs a read on a pooled connection. The operation's errors are returned as they are; a
    /// fault among them discards the connection. `f` may run twice (see below), so it must only
    /// read.
    pub fn read<T, E>(
        &self,
        mut f: impl FnMut(&mut DbConnection) -> Result<T, E>,
    ) -> Result<T, Failure<E>>
    where
        E: std::error::Error + 'static,
    {
        // The connection goes back to the pool (or is discarded) before any second try.
        let mut attempt = |mut conn: PooledConn| {
            let out = f(&mut conn);
            let fault = out.as_ref().err().and_then(|e| Fault::find(e));
            if fault.is_some_and(Fault::discards_connection) {
                conn.discard();
            }
            if let Some(fault) = fault {
                self.observer().fault(fault);
            }
            if let (Some(Fault::Damaged), Err(e)) = (fault, &out) {
                self.damaged_by(e);
            }
            (out, fault)
        };
        let (mut out, fault) = attempt(self.checkout()?);
        // A connection the database dropped (a restart, a terminated session) is found out by
        // the first statement on it, since the pool does not check a connection it handed out
        // moments ago (`backend::pool`). A read changes nothing, so it runs once more on a
        // live connection, as a write's `BEGIN` does.
        if fault == Some(Fault::Unavailable) {
            out = attempt(self.live_checkout()?).0;
        }
        out.map_err(Failure::Op)
    }

    /// Runs a write in its own transaction on a pooled connection and answers only after the
    /// `COMMIT` succeeded. On SQLite it first takes this process's write lock.
    pub fn write<T, E>(
        &self,
        f: impl FnOnce(&mut DbConnection) -> Result<T, E>,
    ) -> Result<T, Failure<E>>
    where
        E: std::error::Error + From<diesel::result::Error> + 'static,
    {
        let _lock = self.lock_for_write()?;
        let mut conn = self.begin(None)?;
        let out = f(&mut conn);
        let result = self.finish(&mut conn, out);
        self.note(result.as_ref().map(|_| ()).map_err(Failure::as_dyn));
        result
    }

    /// Records damage met by a statement (a malformed page, a value that does not decode).
    fn damaged_by(&self, err: &(dyn std::error::Error + 'static)) {
        let chain: Vec<String> = crate::fault::sources(err).map(|e| e.to_string()).collect();
        self.shared.damage.record(crate::damage::Damage {
            detail: format!("{}: {}", self.database().describe(), chain.join(": ")),
            refuses_writes: false,
        });
    }

    /// Remembers how the last write ended, for [`Store::check`].
    pub fn note(&self, outcome: Result<(), &(dyn std::error::Error + 'static)>) {
        match outcome {
            Ok(()) => self.shared.faults.clear(),
            Err(e) => {
                if let Some(fault) = Fault::find(e) {
                    self.observer().fault(fault);
                    self.shared
                        .faults
                        .record(fault, self.shared.started.elapsed());
                    if fault == Fault::Damaged {
                        self.damaged_by(e);
                    }
                }
            }
        }
    }

    /// Whether the database would take a write now, without writing: the SQLite files are the
    /// ones this process has open, writable and not on a full file system; no write failed with
    /// a fault in the last [`FAULT_MEMORY`] without one succeeding since; and a read answers.
    /// Blocking; bound it with the caller's own timeout.
    pub fn check(&self) -> Result<(), StoreError> {
        if let Some(damage) = self.damage() {
            return Err(StoreError::new(Fault::Damaged, damage.detail));
        }
        if let Some(files) = self.files() {
            files.intact()?;
            files.writable()?;
        }
        if let Some(fault) = self
            .shared
            .faults
            .recent(self.shared.started.elapsed(), FAULT_MEMORY)
        {
            return Err(StoreError::new(fault, "the last write failed"));
        }
        // A ping is a read: like any read, it tries a fresh connection once when the database
        // had dropped the pooled one.
        self.read(|conn| conn.ping().map(|_| ()))
            .map_err(|failure| match failure {
                Failure::Op(e) => StoreError::from_diesel(&e),
                Failure::Store(e) => e,
            })
    }
}

impl<E: std::error::Error + 'static> Failure<E> {
    fn as_dyn(&self) -> &(dyn std::error::Error + 'static) {
        match self {
            Failure::Op(e) => e,
            Failure::Store(e) => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;

    /// Frames in the WAL, and of those copied into the database file.
    fn wal(conn: &mut DbConnection) -> (i32, i32) {
        let pass = crate::checkpoint::pass(conn).expect("checkpoint");
        (pass.log, pass.checkpointed)
    }

    fn exec(q: &'static str) -> impl FnOnce(&mut DbConnection) -> diesel::QueryResult<usize> {
        move |c| diesel::sql_query(q).execute(c)
    }

    /// Leaves a long WAL as steady writes leave it: every frame but one writer's last few was
    /// copied while that writer was under way (here a reader keeps it from rewinding), so no
    /// later writer rewinds it by itself. Returns the frames copied.
    fn leave_a_tail(store: &Store, other: &mut DbConnection, reader: &mut DbConnection) -> i32 {
        store
            .write(exec(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1200) \
                 INSERT INTO t SELECT printf('%.3000c', 'x') FROM n",
            ))
            .expect("1,200 pages");
        diesel::sql_query("BEGIN").execute(reader).expect("begin");
        diesel::sql_query("SELECT count(*) FROM t")
            .execute(reader)
            .expect("read");
        let (log, copied) = wal(other);
        assert_eq!(
            log, copied,
            "the reader sees every frame, so all are copied"
        );
        store
            .write(exec("INSERT INTO t VALUES ('one')"))
            .expect("write");
        diesel::sql_query("COMMIT")
            .execute(reader)
            .expect("end read");
        copied
    }

    #[test]
    fn a_writer_told_to_catch_up_copies_the_tail_and_the_wal_starts_over() {
        let dir = std::env::temp_dir().join(format!("store-catch-up-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let database = Database::parse(&format!("sqlite://{}/t.db", dir.display())).expect("url");
        let store = Store::with_pool(database.clone(), database.pool(2).expect("pool"), false);
        store
            .write(exec("CREATE TABLE t (x TEXT NOT NULL)"))
            .expect("create");
        let (mut other, mut reader) =
            (database.establish().unwrap(), database.establish().unwrap());

        let copied = leave_a_tail(&store, &mut other, &mut reader);
        assert!(copied >= crate::REWIND_AT_FRAMES, "{copied} frames");
        store
            .write(exec("INSERT INTO t VALUES ('two')"))
            .expect("write");
        let (log, _) = wal(&mut other);
        assert!(
            log > copied + 1,
            "without the flag the WAL goes on: {log} after {copied}"
        );

        let copied = leave_a_tail(&store, &mut other, &mut reader);
        assert!(copied >= crate::REWIND_AT_FRAMES, "{copied} frames");
        store.shared.catch_up.store(true, Ordering::Relaxed);
        store
            .write(exec("INSERT INTO t VALUES ('two')"))
            .expect("write");
        let (log, _) = wal(&mut other);
        assert!(
            log < 10,
            "with the flag the WAL starts over: {log} frames after {copied}"
        );
        assert!(
            !store.shared.catch_up.load(Ordering::Relaxed),
            "the flag is taken down"
        );
        drop((other, reader, store));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
