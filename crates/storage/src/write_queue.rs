//! [`WriteQueue`]: any write, through group commit. Every durable commit waits for a disk flush
//! (and on SQLite for the one write lock); one transaction per request would cap every write
//! route at one commit per request, and SQLite writers that find the lock taken would sleep in
//! its busy handler (the 117 ms p99 of `POST /notes` at 16 connections). The queue hands each
//! write to a writer thread that runs everything queued in one transaction (`BEGIN IMMEDIATE`
//! on SQLite), each write in its own savepoint, and answers each caller after the shared
//! `COMMIT`: a write that the database refuses rolls back alone; a failed `COMMIT` fails them
//! all.
//!
//! On PostgreSQL two writers take turns at the queue (`group_commit::POSTGRES_WRITERS`), so two
//! batches can hold row locks at once, each until its `COMMIT`. Two writes of different
//! batches that lock the same rows in opposite orders (two notes edited by two clients each)
//! would then deadlock where two single-write transactions could not; PostgreSQL ends one of
//! them with "deadlock detected", which rolls back that write's savepoint alone, and the queue
//! runs that write again in a later batch ([`CONFLICT_TRIES`]). A write therefore is a
//! function that may run more than once (`Fn`): everything it does but its statements must be
//! harmless to repeat.

use std::any::Any;
use std::error::Error;
use std::time::Instant;

use crate::fault::{Failure, Fault, StoreError};
use crate::group_commit::{Durability, MAX_BATCH, Outcome};
use crate::{Backend, DbConnection, GroupCommit, Store};

/// How many times a write runs when PostgreSQL ends it to break a deadlock or a serialization
/// conflict; the last conflict is its answer (a `Busy` fault, 503 with `Retry-After`).
pub const CONFLICT_TRIES: u32 = 4;

/// The most writes per PostgreSQL batch. Each write's savepoint that writes is a
/// subtransaction; past 64 in one transaction PostgreSQL's per-backend cache of them overflows,
/// and every other session's snapshot then looks transactions up in `pg_subtrans` (a known
/// cliff). A write may nest a savepoint of its own, hence half of that.
pub const POSTGRES_BATCH: usize = 32;

type Job = Box<dyn FnOnce(&mut DbConnection) -> Answer + Send>;

/// A job's own `Result<T, E>`, boxed: the error side stays an error so that the group commit
/// sees its faults ([`crate::group_commit::Outcome`]); a batch that failed answers a boxed
/// [`StoreError`]. `again`: the job, to run again in a later batch (it met a conflict).
struct Answer {
    result: Result<Box<dyn Any + Send>, Box<dyn Error + Send>>,
    again: Option<Job>,
}

impl Answer {
    fn done(result: Result<Box<dyn Any + Send>, Box<dyn Error + Send>>) -> Self {
        Answer {
            result,
            again: None,
        }
    }
}

impl Outcome for Answer {
    fn fault(&self) -> Option<Fault> {
        // A write that runs again has not failed (yet): nothing to report to `/health`.
        if self.again.is_some() {
            return None;
        }
        self.result.as_ref().err().and_then(|e| Fault::find(&**e))
    }
}

pub struct WriteQueue {
    commits: GroupCommit<Job, Answer>,
    name: &'static str,
    /// Whose observer is told of conflicts (set after the queue may be made).
    store: Store,
}

impl WriteQueue {
    pub fn new(store: Store) -> Self {
        Self::named("writes", store, Durability::Flushed)
    }

    /// A queue whose writer is `name` in what the store's observer is told, committing with
    /// `durability`.
    pub fn named(name: &'static str, store: Store, durability: Durability) -> Self {
        let failed = |e| Answer::done(Err(Box::new(e)));
        let max_batch = match store.backend() {
            Backend::Sqlite => MAX_BATCH,
            Backend::Postgres => POSTGRES_BATCH,
        };
        WriteQueue {
            name,
            store: store.clone(),
            commits: GroupCommit::with_durability(
                name, store, run_all, failed, durability, max_batch,
            ),
        }
    }

    /// Runs `f` in the next shared transaction; resolves once that transaction has committed,
    /// within the store's answer deadline in all (however often `f` ran).
    pub async fn write<T, E, F>(&self, f: F) -> Result<T, Failure<E>>
    where
        F: Fn(&mut DbConnection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: Error + From<diesel::result::Error> + Send + 'static,
    {
        let deadline = Instant::now() + self.commits.deadline();
        let mut next = job(f, CONFLICT_TRIES);
        loop {
            let answer = self.commits.submit_until(next, deadline).await;
            match answer.again {
                Some(again) => next = self.again(again),
                None => return open(answer),
            }
        }
    }

    /// [`WriteQueue::write`] for a plain thread.
    pub fn write_blocking<T, E, F>(&self, f: F) -> Result<T, Failure<E>>
    where
        F: Fn(&mut DbConnection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: Error + From<diesel::result::Error> + Send + 'static,
    {
        let mut next = job(f, CONFLICT_TRIES);
        loop {
            let answer = self.commits.submit_blocking(next);
            match answer.again {
                Some(again) => next = self.again(again),
                None => return open(answer),
            }
        }
    }

    /// A write that met a conflict, counted on its way back into the queue.
    fn again(&self, job: Job) -> Job {
        self.store.observer().conflict(self.name);
        job
    }
}

/// `f` in its own savepoint, so that a write the database refuses rolls back alone; one that
/// meets a conflict comes back to run again while `tries` last.
fn job<T, E, F>(f: F, tries: u32) -> Job
where
    F: Fn(&mut DbConnection) -> Result<T, E> + Send + 'static,
    T: Send + 'static,
    E: Error + From<diesel::result::Error> + Send + 'static,
{
    Box::new(move |c| match crate::savepoint(c, &f) {
        Ok(value) => Answer::done(Ok(Box::new(value))),
        Err(e) if tries > 1 && Fault::is_conflict(&e) => Answer {
            result: Err(Box::new(e)),
            again: Some(job(f, tries - 1)),
        },
        Err(e) => Answer::done(Err(Box::new(e))),
    })
}

fn run_all(conn: &mut DbConnection, jobs: Vec<Job>) -> Vec<Answer> {
    jobs.into_iter().map(|job| job(conn)).collect()
}

/// Unboxes what [`job`] boxed with these very types (or the batch's [`StoreError`]).
fn open<T: 'static, E: Error + 'static>(answer: Answer) -> Result<T, Failure<E>> {
    match answer.result {
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
