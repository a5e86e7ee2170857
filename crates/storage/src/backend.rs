use std::path::Path;
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::pg::PgConnection;
use diesel::r2d2::R2D2Connection;
use diesel::sqlite::SqliteConnection;
use diesel::{Connection, RunQueryDsl};

/// One connection type for both backends; repositories take `&mut DbConnection`.
#[derive(diesel::MultiConnection)]
pub enum DbConnection {
    Postgresql(PgConnection),
    Sqlite(SqliteConnection),
}

impl DbConnection {
    pub fn backend(&self) -> Backend {
        match self {
            DbConnection::Postgresql(_) => Backend::Postgres,
            DbConnection::Sqlite(_) => Backend::Sqlite,
        }
    }
}

pub type Pool = r2d2::Pool<Manager>;
pub type PooledConn = r2d2::PooledConnection<Manager>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("cannot create the directory for the SQLite database: {0}")]
    CreateDir(#[source] std::io::Error),
    #[error("cannot open the database: {0}")]
    Connect(#[from] diesel::ConnectionError),
    #[error("cannot build the connection pool: {0}")]
    Pool(#[from] r2d2::Error),
    #[error("cannot configure the connection: {0}")]
    Configure(#[source] diesel::result::Error),
}

/// Where the data lives: the parsed form of `DATABASE_URL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Database {
    backend: Backend,
    /// For PostgreSQL the URL as given; for SQLite a file path.
    target: String,
}

impl Database {
    /// `postgres://` and `postgresql://` select PostgreSQL; `sqlite://path` or a bare path
    /// selects SQLite.
    pub fn parse(url: &str) -> Database {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Database {
                backend: Backend::Postgres,
                target: url.to_owned(),
            }
        } else {
            let path = url.strip_prefix("sqlite://").unwrap_or(url);
            Database {
                backend: Backend::Sqlite,
                target: path.to_owned(),
            }
        }
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Opens one connection, configured for this service.
    pub fn establish(&self) -> Result<DbConnection, StorageError> {
        match self.backend {
            Backend::Postgres => Ok(DbConnection::Postgresql(PgConnection::establish(
                &self.target,
            )?)),
            Backend::Sqlite => {
                let mut conn = SqliteConnection::establish(&self.target)?;
                // busy_timeout first: the other pragmas may already need to wait for a lock.
                conn.batch_execute(
                    "PRAGMA busy_timeout=5000; PRAGMA journal_mode=WAL; \
                     PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; \
                     PRAGMA wal_autocheckpoint=10000;",
                )
                .map_err(StorageError::Configure)?;
                Ok(DbConnection::Sqlite(conn))
            }
        }
    }

    /// A pool of at most `max_size` connections (SQLite is capped at 8: one writer at a time
    /// makes more connections useless). Nothing is opened until first use beyond one idle
    /// connection, so many pools (tests, instances) stay cheap.
    pub fn pool(&self, max_size: u32) -> Result<Pool, StorageError> {
        if self.backend == Backend::Sqlite
            && self.target != ":memory:"
            && let Some(dir) = Path::new(&self.target).parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(StorageError::CreateDir)?;
        }
        let max_size = match self.backend {
            Backend::Sqlite => max_size.clamp(1, 8),
            Backend::Postgres => max_size.max(1),
        };
        Ok(r2d2::Pool::builder()
            .max_size(max_size)
            .min_idle(Some(1))
            .connection_timeout(Duration::from_secs(10))
            .build(Manager::new(self.clone()))?)
    }

    /// Like [`Database::pool`] but returns at once even when the database is unreachable, so
    /// the service can start and report `db: error` on `/health`.
    pub fn lazy_pool(&self, max_size: u32) -> Pool {
        let max_size = match self.backend {
            Backend::Sqlite => max_size.clamp(1, 8),
            Backend::Postgres => max_size.max(1),
        };
        r2d2::Pool::builder()
            .max_size(max_size)
            .min_idle(Some(0))
            .connection_timeout(Duration::from_secs(2))
            .build_unchecked(Manager::new(self.clone()))
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
    fn new(db: Database) -> Manager {
        let checkpointer = (db.backend == Backend::Sqlite && db.target != ":memory:")
            .then(|| checkpointer(db.clone()));
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
    type Connection = DbConnection;
    type Error = StorageError;

    fn connect(&self) -> Result<DbConnection, StorageError> {
        self.db.establish()
    }

    /// Runs on every checkout. Diesel's `ping` is a `SELECT 1` with a static query id, so its
    /// prepared statement is cached; a `sql_query` is not, and was parsed again on every
    /// request (6% of the CPU of `GET /notes/{id}` on SQLite).
    fn is_valid(&self, conn: &mut DbConnection) -> Result<(), StorageError> {
        conn.ping().map_err(StorageError::Configure)
    }

    /// A connection whose transaction manager is in an unknown state is not reused.
    fn has_broken(&self, conn: &mut DbConnection) -> bool {
        conn.is_broken()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        assert_eq!(
            Database::parse("postgres://u@h/db").backend(),
            Backend::Postgres
        );
        assert_eq!(
            Database::parse("postgresql://u@h/db").backend(),
            Backend::Postgres
        );
        let s = Database::parse("sqlite://data/service.db");
        assert_eq!(s.backend(), Backend::Sqlite);
        assert_eq!(s.target, "data/service.db");
        assert_eq!(Database::parse("/tmp/x.db").target, "/tmp/x.db");
    }
}
