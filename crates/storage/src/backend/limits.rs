//! How long the storage layer waits, and how durable an SQLite commit is.

use std::time::Duration;

/// SQLite's `synchronous` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// Every commit is flushed to disk before it returns: an acknowledged write survives power
    /// loss. The group-commit writers share one flush among every write of a batch.
    #[default]
    Full,
    /// WAL frames are flushed only at checkpoints: a power loss (not a process crash) may roll
    /// back the last acknowledged writes.
    Normal,
}

impl Synchronous {
    pub fn parse(value: &str) -> Option<Synchronous> {
        match value.to_ascii_lowercase().as_str() {
            "full" => Some(Synchronous::Full),
            "normal" => Some(Synchronous::Normal),
            _ => None,
        }
    }

    pub(super) fn pragma(self) -> &'static str {
        match self {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        }
    }
}

/// How long the storage layer waits for anything, so that no request hangs on the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Taking a connection from the pool (which includes connecting when none is idle).
    pub checkout: Duration,
    /// Establishing a PostgreSQL connection (libpq `connect_timeout`, whole seconds, at least 2).
    pub connect: Duration,
    /// One statement (PostgreSQL `statement_timeout`).
    pub statement: Duration,
    /// Waiting for a lock: PostgreSQL `lock_timeout`, SQLite `busy_timeout`, and the wait for
    /// this process's SQLite write lock.
    pub lock: Duration,
    /// A job waiting in a group-commit queue before its batch starts.
    pub queue: Duration,
    /// The most a request waits for the database's answer to one call (a read, a write, a
    /// group-commit submission), whatever the database does: a frozen primary, a blackholed
    /// host or a synchronous standby that stopped confirming answer nothing at all, and no
    /// server-side timeout can end that wait.
    pub answer: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            checkout: Duration::from_millis(1500),
            connect: Duration::from_secs(2),
            statement: Duration::from_secs(5),
            lock: Duration::from_secs(2),
            queue: Duration::from_secs(5),
            answer: Duration::from_secs(2),
        }
    }
}
