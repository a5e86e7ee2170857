//! [`WriteQueue`]: any write, through group commit. With `synchronous=FULL` every SQLite commit
//! waits for a disk flush; one transaction per request would cap every write route at one flush
//! per request, and writers that find the lock taken would sleep in SQLite's busy handler (the
//! 117 ms p99 of `POST /notes` at 16 connections). The queue hands each write to one writer
//! thread that runs everything queued in one `BEGIN IMMEDIATE … COMMIT`, each write in its own
//! savepoint, and answers each caller after the shared `COMMIT`: a write that the database
//! refuses rolls back alone; a failed `COMMIT` fails them all.

use std::any::Any;

use diesel::Connection;

use crate::fault::{Failure, StoreError};
use crate::{DbConnection, GroupCommit, Store};

type Job = Box<dyn FnOnce(&mut DbConnection) -> Box<dyn Any + Send> + Send>;
type Answer = Result<Box<dyn Any + Send>, StoreError>;

pub struct WriteQueue {
    commits: GroupCommit<Job, Answer>,
    /// Told about the faults the writes themselves met (a full disk at an `INSERT`), for
    /// `/health`; the group commit reports its own.
    store: Store,
}

impl WriteQueue {
    pub fn new(store: Store) -> Self {
        WriteQueue {
            commits: GroupCommit::new(store.clone(), run_all, Err),
            store,
        }
    }

    /// Runs `f` in the next shared transaction; resolves once that transaction has committed.
    pub async fn write<T, E, F>(&self, f: F) -> Result<T, Failure<E>>
    where
        F: FnOnce(&mut DbConnection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: std::error::Error + From<diesel::result::Error> + Send + 'static,
    {
        let job: Job = Box::new(move |c| Box::new(c.transaction(f)) as Box<dyn Any + Send>);
        self.noted(open(self.commits.submit(job).await))
    }

    /// [`WriteQueue::write`] for a plain thread.
    pub fn write_blocking<T, E, F>(&self, f: F) -> Result<T, Failure<E>>
    where
        F: FnOnce(&mut DbConnection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: std::error::Error + From<diesel::result::Error> + Send + 'static,
    {
        let job: Job = Box::new(move |c| Box::new(c.transaction(f)) as Box<dyn Any + Send>);
        self.noted(open(self.commits.submit_blocking(job)))
    }

    fn noted<T, E: std::error::Error + 'static>(
        &self,
        outcome: Result<T, Failure<E>>,
    ) -> Result<T, Failure<E>> {
        if let Err(Failure::Op(e)) = &outcome {
            self.store.note(Err(e));
        }
        outcome
    }
}

fn run_all(conn: &mut DbConnection, jobs: Vec<Job>) -> Vec<Answer> {
    jobs.into_iter().map(|job| Ok(job(conn))).collect()
}

/// The job's own `Result<T, E>`, boxed by [`WriteQueue::write`] with these very types.
fn open<T: 'static, E: 'static>(answer: Answer) -> Result<T, Failure<E>> {
    match answer?.downcast::<Result<T, E>>() {
        Ok(result) => (*result).map_err(Failure::Op),
        Err(_) => unreachable!("a job answers the Result type its write boxed"),
    }
}
