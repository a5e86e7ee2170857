//! Which database and how to reach it ([`Database`]); its limits and durability
//! ([`Timeouts`], [`Synchronous`]) are in [`limits`], the pooled connection and its manager
//! in [`pool`].

mod conninfo;
mod limits;
mod pool;

pub use limits::{Synchronous, Timeouts};
pub use pool::{Conn, Manager};

use std::path::Path;

use diesel::Connection;
use diesel::connection::SimpleConnection;
use diesel::pg::PgConnection;
use diesel::sqlite::SqliteConnection;

use conninfo::{is_keyword_conninfo, is_plain_path};

/// Each SQLite connection's page cache, in KiB (`PRAGMA cache_size=-N`; half SQLite's default).
/// A process holds at most the pool's 8 connections, the group-commit writers' and the
/// checkpointer's, so page caches take at most about 12 MiB however large the file grows; the
/// operating system's file cache holds the rest of a hot database for every connection at once,
/// and a miss costs a `pread` from it. Measured on a 1,000,000-article file under 16 connections:
/// 2 MiB per connection took the server to 64 MiB resident, 1 MiB to 43 MiB, at the same
/// throughput (docs/PERFORMANCE.md, "Memory"). Memory-mapped I/O stays off (`mmap_size=0`): mapped pages of the file
/// would count in the server's resident memory and grow it with the database.
pub const SQLITE_CACHE_KIB: u32 = 1_024;

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
    /// The connections a server's pool holds: SQLite has one writer and gains nothing past
    /// 8; PostgreSQL runs route writes in parallel.
    pub fn pool_size(self) -> u32 {
        match self {
            Backend::Sqlite => 8,
            Backend::Postgres => 16,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error(
        "unsupported scheme {0:?}: expected sqlite://, postgres:// or postgresql:// (or a bare file path for SQLite)"
    )]
    Scheme(String),
    #[error(
        "{0:?} is neither a PostgreSQL connection string (postgres://… or host=… dbname=…) nor \
         plainly a file path (sqlite://path, or a path without spaces, `=` or a scheme)"
    )]
    Unclear(String),
    #[error("cannot create the directory for the SQLite database: {0}")]
    CreateDir(#[source] std::io::Error),
    #[error("cannot open the database: {0}")]
    Connect(#[from] diesel::ConnectionError),
    #[error("cannot build the connection pool: {0}")]
    Pool(#[from] r2d2::Error),
    #[error("cannot configure the connection: {0}")]
    Configure(#[source] diesel::result::Error),
    #[error("cannot read or keep the SQLite files' state: {0}")]
    Io(#[source] std::io::Error),
}

/// Where the data lives: the parsed form of `DATABASE_URL`, plus how to talk to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Database {
    backend: Backend,
    /// For PostgreSQL the URL as given; for SQLite a file path.
    target: String,
    pub timeouts: Timeouts,
    pub synchronous: Synchronous,
    /// SQLite: a cap on the database file, in pages (`PRAGMA max_page_count`); writes past it
    /// fail as on a full disk.
    pub max_pages: Option<u32>,
    /// SQLite: start normally although the WAL lost committed transactions (or an earlier
    /// start found so), instead of refusing writes ([`crate::wal`]).
    pub accept_wal_loss: bool,
    /// SQLite: how often a background `PRAGMA quick_check` reads the whole file (`None`: never).
    pub quick_check_every: Option<std::time::Duration>,
}

impl Database {
    /// `postgres://` and `postgresql://` URLs (several hosts and `target_session_attrs`
    /// included) and libpq keyword strings (`host=… port=… dbname=…`) select PostgreSQL;
    /// `sqlite://path` or plainly a file path selects SQLite. Anything else is refused, so that
    /// no typo (`postgress://`, `postgres:/x`, a keyword string) quietly starts on a new SQLite
    /// file named after it.
    pub fn parse(url: &str) -> Result<Database, StorageError> {
        let (backend, target) =
            if url.starts_with("postgres://") || url.starts_with("postgresql://") {
                (Backend::Postgres, url)
            } else if let Some(path) = url
                .strip_prefix("sqlite://")
                .or_else(|| url.strip_prefix("sqlite:"))
            {
                (Backend::Sqlite, path)
            } else if let Some((scheme, _)) = url.split_once("://") {
                return Err(StorageError::Scheme(scheme.to_owned()));
            } else if is_keyword_conninfo(url) {
                (Backend::Postgres, url.trim())
            } else if is_plain_path(url) {
                (Backend::Sqlite, url)
            } else {
                return Err(StorageError::Unclear(url.to_owned()));
            };
        Ok(Database {
            backend,
            target: target.to_owned(),
            timeouts: Timeouts::default(),
            synchronous: Synchronous::default(),
            max_pages: None,
            accept_wal_loss: false,
            quick_check_every: None,
        })
    }

    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    pub fn with_synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    pub fn with_max_pages(mut self, max_pages: Option<u32>) -> Self {
        self.max_pages = max_pages;
        self
    }

    pub fn with_accept_wal_loss(mut self, accept: bool) -> Self {
        self.accept_wal_loss = accept;
        self
    }

    pub fn with_quick_check_every(mut self, every: Option<std::time::Duration>) -> Self {
        self.quick_check_every = every;
        self
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Where the data is, for a log line: the SQLite file's absolute path, or PostgreSQL's
    /// hosts and database (never a user or password).
    pub fn describe(&self) -> String {
        match self.backend {
            Backend::Sqlite => {
                let path = Path::new(&self.target);
                let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
                format!("SQLite file {}", absolute.display())
            }
            Backend::Postgres => match self.target.split_once("://") {
                Some((_, rest)) => {
                    let rest = rest.split('?').next().unwrap_or("");
                    let (authority, db) = rest.split_once('/').unwrap_or((rest, ""));
                    let hosts = authority.rsplit('@').next().unwrap_or("");
                    format!("PostgreSQL {hosts}/{db}")
                }
                None => {
                    let value = |key: &str| {
                        self.target
                            .split_whitespace()
                            .find_map(|pair| pair.strip_prefix(&format!("{key}=")))
                            .unwrap_or("")
                            .to_owned()
                    };
                    format!(
                        "PostgreSQL {}:{}/{}",
                        value("host"),
                        value("port"),
                        value("dbname")
                    )
                }
            },
        }
    }

    /// The SQLite file (`None` for PostgreSQL and for `:memory:`).
    pub fn sqlite_path(&self) -> Option<&Path> {
        (self.backend == Backend::Sqlite && self.target != ":memory:")
            .then(|| Path::new(&self.target))
    }

    /// Opens one connection, configured for this service.
    pub fn establish(&self) -> Result<DbConnection, StorageError> {
        Ok(self.open(false)?.0)
    }

    /// [`Database::establish`] for the pool: a PostgreSQL connection comes with the watch that
    /// can cut off a call stuck on it ([`crate::cutoff`]).
    pub(crate) fn establish_watched(
        &self,
    ) -> Result<(DbConnection, Option<std::sync::Arc<crate::cutoff::Watch>>), StorageError> {
        self.open(true)
    }

    fn open(
        &self,
        watched: bool,
    ) -> Result<(DbConnection, Option<std::sync::Arc<crate::cutoff::Watch>>), StorageError> {
        match self.backend {
            Backend::Postgres => {
                let ports = if watched { self.pg_ports() } else { Vec::new() };
                let (conn, watch) = crate::cutoff::connect(&ports, || self.open_pg())?;
                Ok((DbConnection::Postgresql(conn), watch))
            }
            Backend::Sqlite => Ok((self.open_sqlite()?, None)),
        }
    }

    fn open_pg(&self) -> Result<PgConnection, StorageError> {
        let t = &self.timeouts;
        let mut conn = PgConnection::establish(&self.pg_url())?;
        // `plan_cache_mode` stays `auto`: a forced generic plan is chosen without the values,
        // and on skewed data (most comments on one note) it scanned the whole table for every
        // other note (docs/PERFORMANCE.md).
        conn.batch_execute(&format!(
            "SET statement_timeout = {}; SET lock_timeout = {}; \
                     SET idle_in_transaction_session_timeout = {};",
            t.statement.as_millis(),
            t.lock.as_millis(),
            // A transaction left open by a stuck client must not hold locks forever.
            (t.statement * 2).as_millis(),
        ))
        .map_err(StorageError::Configure)?;
        Ok(conn)
    }

    fn open_sqlite(&self) -> Result<DbConnection, StorageError> {
        let t = &self.timeouts;
        let mut conn = SqliteConnection::establish(&self.target)?;
        // busy_timeout first: the other pragmas may already need to wait for a lock.
        conn.batch_execute(&format!(
            "PRAGMA busy_timeout={}; PRAGMA journal_mode=WAL; \
                     PRAGMA synchronous={}; PRAGMA foreign_keys=ON; \
                     PRAGMA wal_autocheckpoint=10000; \
                     PRAGMA cache_size=-{SQLITE_CACHE_KIB}; PRAGMA mmap_size=0;",
            t.lock.as_millis(),
            self.synchronous.pragma(),
        ))
        .map_err(StorageError::Configure)?;
        if let Some(pages) = self.max_pages {
            conn.batch_execute(&format!("PRAGMA max_page_count={pages};"))
                .map_err(StorageError::Configure)?;
        }
        Ok(DbConnection::Sqlite(conn))
    }

    fn pool_builder(&self, max_size: u32) -> r2d2::Builder<Manager> {
        let max_size = match self.backend {
            Backend::Sqlite => max_size.clamp(1, 8),
            Backend::Postgres => max_size.max(1),
        };
        r2d2::Pool::builder()
            .max_size(max_size)
            .connection_timeout(self.timeouts.checkout)
            // r2d2 logs every failed connect at error level; the requests that needed the
            // connection log their own failure with the request id.
            .error_handler(Box::new(r2d2::NopErrorHandler))
    }

    /// A pool of at most `max_size` connections (SQLite is capped at 8: one writer at a time
    /// makes more connections useless). Nothing is opened until first use beyond one idle
    /// connection, so many pools (tests, instances) stay cheap.
    ///
    /// One connection is made here, directly, so a bad URL, a refused login or an unwritable
    /// file fails at once with its own error. It is not made through the pool: r2d2's `build`
    /// gives the first connection only the checkout timeout, and on a loaded machine creating
    /// a fresh SQLite file (WAL switch, fsyncs) took longer, so a healthy start failed with
    /// nothing but "timed out waiting for connection".
    pub fn pool(&self, max_size: u32) -> Result<Pool, StorageError> {
        if let Some(dir) = self.sqlite_path().and_then(Path::parent)
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(StorageError::CreateDir)?;
        }
        drop(self.establish()?);
        Ok(self
            .pool_builder(max_size)
            .min_idle(Some(1))
            .build_unchecked(Manager::new(self.clone())))
    }

    /// Like [`Database::pool`] but returns at once even when the database is unreachable, so
    /// the service can start and report `db: error` on `/health`.
    pub fn lazy_pool(&self, max_size: u32) -> Pool {
        self.pool_builder(max_size)
            .min_idle(Some(0))
            .build_unchecked(Manager::new(self.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_ports_of_each_host() {
        let ports = |url| Database::parse(url).unwrap().pg_ports();
        assert_eq!(ports("postgres://u:p@h1:6001,h2:6002/db?x=1"), [6001, 6002]);
        assert_eq!(ports("postgres://u@[::1]:6003,[::1]/db"), [6003, 5432]);
        assert_eq!(ports("postgresql://h/db"), [5432]);
        assert_eq!(ports("host=a,b port=7001,7002 dbname=d"), [7001, 7002]);
        assert_eq!(ports("host=a dbname=d"), [5432]);
    }

    #[test]
    fn parses_urls() {
        let parse = |url| Database::parse(url).unwrap();
        assert_eq!(parse("postgres://u@h/db").backend(), Backend::Postgres);
        assert_eq!(parse("postgresql://u@h/db").backend(), Backend::Postgres);
        let s = parse("sqlite://data/service.db");
        assert_eq!(s.backend(), Backend::Sqlite);
        assert_eq!(s.target, "data/service.db");
        assert_eq!(parse("/tmp/x.db").target, "/tmp/x.db");
        assert_eq!(parse("data/x.db").target, "data/x.db");
    }

    #[test]
    fn refuses_other_schemes() {
        for url in [
            "mysql://host/db",
            "postgress://u@h/db",
            "sqlite3://x.db",
            "http://x",
        ] {
            let err = Database::parse(url).unwrap_err();
            assert!(matches!(err, StorageError::Scheme(_)), "{url}: {err}");
        }
    }

    const DEAD_PEER: &str = "keepalives=1&keepalives_idle=5&keepalives_interval=2\
        &keepalives_count=3&tcp_user_timeout=2000";

    #[test]
    fn postgres_gets_a_connect_timeout_and_dead_peer_detection() {
        let db = Database::parse("postgres://u@h/db").unwrap();
        assert_eq!(
            db.pg_url(),
            format!("postgres://u@h/db?connect_timeout=2&{DEAD_PEER}")
        );
        let db = Database::parse("postgres://u@h/db?sslmode=disable").unwrap();
        assert_eq!(
            db.pg_url(),
            format!("postgres://u@h/db?sslmode=disable&connect_timeout=2&{DEAD_PEER}")
        );
        let db = Database::parse("postgres://u@h/db?connect_timeout=9&keepalives=0").unwrap();
        assert!(
            db.pg_url()
                .starts_with("postgres://u@h/db?connect_timeout=9&keepalives=0&")
        );
        assert!(!db.pg_url().contains("keepalives=1"));
    }

    #[test]
    fn several_hosts_and_keyword_strings_are_postgres() {
        let multi =
            "postgres://postgres@127.0.0.1:5433,127.0.0.1:5434/db?target_session_attrs=read-write";
        let db = Database::parse(multi).unwrap();
        assert_eq!(db.backend(), Backend::Postgres);
        assert!(db.pg_url().starts_with(multi));
        let keywords = "host=127.0.0.1 port=5433 dbname=test user=postgres";
        let db = Database::parse(keywords).unwrap();
        assert_eq!(db.backend(), Backend::Postgres);
        assert_eq!(
            db.pg_url(),
            format!(
                "{keywords} connect_timeout=2 {}",
                DEAD_PEER.replace('&', " ")
            )
        );
    }

    #[test]
    fn descriptions_name_the_place_and_never_a_password() {
        let url = "postgres://ann:secret@h1:5432,h2:5433/db?target_session_attrs=read-write";
        let described = Database::parse(url).unwrap().describe();
        assert_eq!(described, "PostgreSQL h1:5432,h2:5433/db");
        let keywords = "host=h port=5432 dbname=db user=ann password=secret";
        let described = Database::parse(keywords).unwrap().describe();
        assert_eq!(described, "PostgreSQL h:5432/db");
        let described = Database::parse("/tmp/x.db").unwrap().describe();
        assert_eq!(described, "SQLite file /tmp/x.db");
    }

    #[test]
    fn nothing_unclear_becomes_a_sqlite_file() {
        for unclear in [
            "host=db port=5432 dbname=x oops",
            "postgres:/u@h/db",
            "postgresql:u@h/db",
            "my database.db",
            "a=b",
            "",
        ] {
            let err = Database::parse(unclear).unwrap_err();
            assert!(
                matches!(err, StorageError::Unclear(_) | StorageError::Scheme(_)),
                "{unclear:?}: {err}"
            );
        }
        assert_eq!(
            Database::parse("sqlite:data/x.db").unwrap().target,
            "data/x.db"
        );
        for path in [
            "data/service.db",
            "/var/lib/x.db",
            "./x.db",
            "C:/data/x.db",
            "x",
            ":memory:",
        ] {
            assert_eq!(
                Database::parse(path).unwrap().backend(),
                Backend::Sqlite,
                "{path}"
            );
        }
    }
}
