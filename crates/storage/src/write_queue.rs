//! [`WriteQueue`]: any write, through group commit. With `synchronous=FULL` every SQLite commit
//! waits for a disk flush; one transaction per request would cap every write route at one flush
//! per request, and writers that find the lock taken would sleep in SQLite's busy handler (the
//! 117 ms p99 of `POST /notes` at 16 connections). The queue hands each write to one writer
//! thread that runs everything queued in one `BEGIN IMMEDIATE … COMMIT`, each write in its own
//! savepoint, and answers each caller after the shared `COMMIT`: a write that the database
//! refuses rolls back alone; a failed `COMMIT` fails them all.

use std::any::Any;
use std::error::Error;

use diesel::Connection;

use crate::fault::{Failure, Fault, StoreError};
use crate::group_commit::{Durability, Outcome};
use crate::{DbConnection, GroupCommit, Store};

type Job = Box<dyn FnOnce(&mut DbConnection) -> Answer + Send>;
/// A job's own `Result<T, E>`, boxed: the error side stays an error so that the group commit
/// sees its faults ([`crate::group_commit::Outcome`]); a batch that failed answers a boxed
/// [`StoreError`].
struct Answer(Result<Box<dyn Any + Send>, Box<dyn Error + Send>>);

impl Outcome for Answer {
    fn fault(&self) -> Option<Fault> {
        self.0.as_ref().err().and_then(|e| Fault::find(&**e))
    }
}

pub struct WriteQueue {
    commits: GroupCommit<Job, Answer>,
}

impl WriteQueue {
    pub fn new(store: Store) -> Self {
        Self::named("writes", store, Durability::Flushed)
    }

    /// A queue whose writer is `name` in what the store's observer is told, committing with
    /// `durability`.
    pub fn named(name: &'static str, store: Store, durability: Durability) -> Self {
        let failed = |e| Answer(Err(Box::new(e)));
        WriteQueue {
            commits: GroupCommit::with_durability(name, store, run_all, failed, durability),
        }
    }

    /// Runs `f` in the next shared transaction; resolves once that transaction has committed.
    pub async fn write<T, E, F>(&self, f: F) -> Result<T, Failure<E>>
    where
        F: FnOnce(&mut DbConnection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: Error + From<diesel::result::Error> + Send + 'static,
    {
        open(self.commits.submit(job(f)).await)
    }

    /// [`WriteQueue::write`] for a plain thread.
    pub fn write_blocking<T, E, F>(&self, f: F) -> Result<T, Failure<E>>
    where
        F: FnOnce(&mut DbConnection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: Error + From<diesel::result::Error> + Send + 'static,
    {
        open(self.commits.submit_blocking(job(f)))
    }
}

/// `f` in its own savepoint, so that a write the database refuses rolls back alone.
fn job<T, E, F>(f: F) -> Job
where
    F: FnOnce(&mut DbConnection) -> Result<T, E> + Send + 'static,
    T: Send + 'static,
    E: Error + From<diesel::result::Error> + Send + 'static,
{
    Box::new(move |c| {
        Answer(match c.transaction(f) {
            Ok(value) => Ok(Box::new(value)),
            Err(e) => Err(Box::new(e)),
        })
    })
}

fn run_all(conn: &mut DbConnection, jobs: Vec<Job>) -> Vec<Answer> {
    jobs.into_iter().map(|job| job(conn)).collect()
}

/// Unboxes what [`job`] boxed with these very types (or the batch's [`StoreError`]).
fn open<T: 'static, E: Error + 'static>(answer: Answer) -> Result<T, Failure<E>> {
    match answer.0 {
        Ok(value) => match value.downcast::<T>() {
            Ok(value) => Ok(*value),
            Err(_) => unreachable!("a job answers the type its write boxed"),
        },
        Err(e) => match e.downcast::<E>() {
            Ok(e) => Err(Failure::Op(*e)),
            Err(e) => match e.downcast::<StoreError>() {
                Ok(e) => Err(Failure::Store(*e)),
                Err(_) => unreachable!("a job fails with its own error or the batch's"),
            },
        },
    }
}
