//! The pool's connections: [`Conn`] (a connection that can be marked for discarding) and the
//! r2d2 [`Manager`] that makes them, with the SQLite WAL checkpointer it runs beside the pool.

use std::time::Duration;

use diesel::RunQueryDsl;
use diesel::r2d2::R2D2Connection;

use super::{Database, DbConnection, StorageError};

/// A pooled connection, and whether it may serve another request.
pub struct Conn {
    inner: DbConnection,
    discard: bool,
}

impl Conn {
    /// This connection goes back to the pool only to be closed (see
    /// [`crate::Fault::discards_connection`]).
    pub fn discard(&mut self) {
        self.discard = true;
    }

    pub fn is_discarded(&self) -> bool {
        self.discard
    }
}

impl std::ops::Deref for Conn {
    type Target = DbConnection;
    fn deref(&self) -> &DbConnection {
        &self.inner
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut DbConnection {
        &mut self.inner
    }
}

/// The r2d2 manager: builds the right enum variant explicitly (never guessing the backend by
/// trying one after the other).
#[derive(Debug)]
pub struct Manager {
    db: Database,
    /// SQLite files only: stops the background checkpointer when the pool is dropped.
    _checkpointer: Option<std::sync::mpsc::Sender<()>>,
}

impl Manager {
    pub(super) fn new(db: Database) -> Manager {
        let checkpointer = db.sqlite_path().is_some().then(|| checkpointer(db.clone()));
        Manager {
            db,
            _checkpointer: checkpointer,
        }
    }
}

/// How often the background thread moves the WAL into the database file while there are
/// writes, and while there are none.
const CHECKPOINT_BUSY: Duration = Duration::from_millis(10);
const CHECKPOINT_IDLE: Duration = Duration::from_millis(100);

/// What `PRAGMA wal_checkpoint` answers.
#[derive(diesel::QueryableByName)]
struct CheckpointResult {
    /// Frames in the WAL (-1 when the database is not in WAL mode).
    #[diesel(sql_type = diesel::sql_types::Integer)]
    log: i32,
}

/// SQLite checkpoints the WAL back into the database file from whichever connection commits
/// when the WAL passes `wal_autocheckpoint` pages, and that commit then also waits for the
/// checkpoint's copying and its fsyncs. With every write funnelled through one writer (group
/// commit), that stalled all writes. A `PASSIVE` checkpoint from this thread instead runs beside
/// the writers and never blocks them. It runs every 10 ms while the WAL grows (every 100 ms
/// otherwise): the connections' `wal_autocheckpoint` stays as the backstop that restarts the
/// WAL (only a checkpoint that catches up while no write is under way lets the next writer start
/// the WAL over), and what that backstop still has to copy and fsync on the writer's commit is
/// then at most ~10 ms of writes instead of ~100 ms (p99 of `POST /webhook` on SQLite fell from
/// 24–26 ms to 17–18 ms; see docs/webhooks.md). The thread stops when the returned sender (held
/// by the pool's manager) is dropped.
///
/// The thread runs at the lowest CPU priority ([`CHECKPOINTER_NICE`]): its work is never on a
/// request's path, and at normal priority it took the CPU from the request and writer threads
/// at random moments (`POST /webhook` on SQLite +4% with it niced; docs/webhooks.md).
fn checkpointer(db: Database) -> std::sync::mpsc::Sender<()> {
    use std::sync::mpsc::{RecvTimeoutError, channel};
    let (stop, stopped) = channel::<()>();
    let _ = std::thread::Builder::new()
        .name("sqlite-checkpoint".into())
        .spawn(move || {
            lower_own_priority();
            let mut conn = None;
            let mut every = CHECKPOINT_IDLE;
            let mut last_log = 0;
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                if conn.is_none() {
                    conn = db.establish().ok();
                }
                let Some(c) = conn.as_mut() else { continue };
                match diesel::sql_query("PRAGMA wal_checkpoint(PASSIVE)")
                    .get_result::<CheckpointResult>(c)
                {
                    // Frames came in since the last look: writes are under way.
                    Ok(r) => {
                        every = if r.log != last_log {
                            CHECKPOINT_BUSY
                        } else {
                            CHECKPOINT_IDLE
                        };
                        last_log = r.log;
                    }
                    Err(_) => conn = None,
                }
            }
        });
    stop
}

/// The checkpointer's nice value: the lowest priority a thread can give itself. It still runs
/// when both cores are busy (a nice-19 thread gets ~1.5% of a core against a nice-0 one), so
/// the WAL keeps being copied back and cannot grow without bound; `wal_autocheckpoint` stays
/// the backstop.
pub const CHECKPOINTER_NICE: i32 = 19;

/// Linux keeps a nice value per thread, and `setpriority(PRIO_PROCESS, 0, …)` changes only the
/// calling thread's. Elsewhere that call would change the whole process, so it is not made.
fn lower_own_priority() {
    #[cfg(target_os = "linux")]
    let _ = rustix::process::setpriority_process(None, CHECKPOINTER_NICE);
}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = StorageError;

    fn connect(&self) -> Result<Conn, StorageError> {
        Ok(Conn {
            inner: self.db.establish()?,
            discard: false,
        })
    }

    /// Runs on every checkout. Diesel's `ping` is a `SELECT 1` with a static query id, so its
    /// prepared statement is cached; a `sql_query` is not, and was parsed again on every
    /// request (6% of the CPU of `GET /notes/{id}` on SQLite).
    fn is_valid(&self, conn: &mut Conn) -> Result<(), StorageError> {
        conn.inner.ping().map_err(StorageError::Configure)
    }

    /// A connection whose transaction manager is in an unknown state, or that met a fault after
    /// which it cannot be trusted, is not reused.
    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.discard || conn.inner.is_broken()
    }
}
