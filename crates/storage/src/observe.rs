//! What the storage layer tells an observer (the server's metrics) as it works, without
//! depending on a metrics library: group-commit batches and queue waits per writer, pool
//! checkouts, faults by class, and the SQLite WAL's progress.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use crate::Fault;

/// Told about the storage layer's work. Every method has an empty default, and each is called
/// on the path it measures: keep them cheap (an atomic add, a histogram observation).
pub trait Observer: Send + Sync {
    /// A group-commit `writer` (notes, ledger, webhooks) ran a batch of `jobs` jobs.
    fn batch(&self, _writer: &'static str, _jobs: usize) {}
    /// A batch of `writer` took `stages` of its writer's time: a single writer's throughput is
    /// its jobs per batch over the sum of the three.
    fn batch_stages(&self, _writer: &'static str, _stages: &BatchStages) {}
    /// A job of `writer` waited `waited` in the queue before its batch began.
    fn queued(&self, _writer: &'static str, _waited: Duration) {}
    /// A write of `writer` met a conflict (`cause`) and runs again in a later batch.
    fn conflict(&self, _writer: &'static str, _cause: Conflict) {}
    /// A connection was taken from the pool after `waited` (`ok` false: none came in time).
    fn checkout(&self, _waited: Duration, _ok: bool) {}
    /// A database call made for a request waited `for_thread` for a thread to run on (the
    /// server's blocking pool), then ran for `ran` (checkout, statements, commit).
    fn call(&self, _for_thread: Duration, _ran: Duration) {}
    /// A statement or transaction met `fault`.
    fn fault(&self, _fault: Fault) {}
    /// A read that standbys could have served was served `by` one or by the primary
    /// (only with standbys configured).
    fn read_served(&self, _by: crate::replicas::ServedBy) {}
}

/// Why a write of a group-commit batch runs again in a later one (PostgreSQL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflict {
    /// PostgreSQL ended it to break a deadlock, after its waiters' `deadlock_timeout`.
    Deadlock,
    /// A serialization failure.
    Serialization,
    /// It waited for a row lock longer than its batch allows (`write_queue::LOCK_WAIT`).
    LockWait,
}

impl Conflict {
    pub const ALL: [Conflict; 3] = [
        Conflict::Deadlock,
        Conflict::Serialization,
        Conflict::LockWait,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Conflict::Deadlock => "deadlock",
            Conflict::Serialization => "serialization",
            Conflict::LockWait => "lock_wait",
        }
    }
}

/// Where a group-commit batch's time went, in the order it is spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchStages {
    /// Waiting for the store's write lock (SQLite: shared by every writer of the file).
    pub lock: Duration,
    /// `BEGIN` and the jobs' statements.
    pub run: Duration,
    /// `COMMIT`: on SQLite the WAL's write and, under `synchronous=FULL`, its flush; on
    /// PostgreSQL the round trip and the WAL flush.
    pub commit: Duration,
}

/// The observer of a store that has none.
pub(crate) struct Nobody;

impl Observer for Nobody {}

pub(crate) fn nobody() -> Arc<dyn Observer> {
    Arc::new(Nobody)
}

/// The SQLite WAL as the checkpointer last saw it: frames in the log and frames copied back
/// into the database file (`-1` before the first look).
#[derive(Debug)]
pub struct WalProgress {
    frames: AtomicI64,
    checkpointed: AtomicI64,
}

impl Default for WalProgress {
    fn default() -> Self {
        WalProgress {
            frames: AtomicI64::new(-1),
            checkpointed: AtomicI64::new(-1),
        }
    }
}

impl WalProgress {
    pub(crate) fn set(&self, frames: i32, checkpointed: i32) {
        self.frames.store(i64::from(frames), Ordering::Relaxed);
        self.checkpointed
            .store(i64::from(checkpointed), Ordering::Relaxed);
    }

    /// `(frames, checkpointed)`, once the checkpointer has looked.
    pub fn get(&self) -> Option<(i64, i64)> {
        let frames = self.frames.load(Ordering::Relaxed);
        (frames >= 0).then(|| (frames, self.checkpointed.load(Ordering::Relaxed)))
    }
}
