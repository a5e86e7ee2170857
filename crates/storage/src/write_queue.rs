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
//! would then deadlock where two single-write transactions could not, and PostgreSQL would
//! break that only after `deadlock_timeout` (1 s). So a write waits at most [`LOCK_WAIT`] for a
//! row lock: then its savepoint rolls back alone, the queue runs it again in a later batch,
//! and the writers run their batches' statements in turn while rows are contended
//! (`group_commit::Locking::Unordered`). A deadlock PostgreSQL does report (between server
//! instances) is run again the same way, up to [`CONFLICT_TRIES`] runs. A write therefore is a
//! function that may run more than once (`Fn`): everything it does but its statements must be
//! harmless to repeat.

use std::any::Any;
use std::error::Error;
use std::time::Instant;

use crate::fault::{Failure, Fault, StoreError};
use crate::group_commit::{Durability, Locking, MAX_BATCH, Outcome};
use crate::observe::Conflict;
use crate::{Backend, DbConnection, GroupCommit, Store};

/// How many times a write runs when PostgreSQL ends it to break a deadlock or a serialization
/// conflict; the last conflict is its answer (a `Busy` fault, 503 with `Retry-After`).
pub const CONFLICT_TRIES: u32 = 4;

/// The longest a write of a PostgreSQL batch waits for a row lock (`SET LOCAL lock_timeout`
/// in the batch's `BEGIN`, `group_commit::Locking::Unordered`); past it the write's savepoint
/// rolls back and it runs again in a later batch, until its waits add up to the store's lock
/// timeout (`DB_LOCK_TIMEOUT_MS`, then its answer, as for any write), and the writers run their
/// batches in turn for a while (`group_commit::IN_TURN_FOR`). A lock held by the other writer's
/// batch is given back at that batch's `COMMIT`, a millisecond or a few later; a wait this
/// long is most likely half of a deadlock (two batches, each holding the rows of its earlier
/// writes while a later one waits for the other's), which PostgreSQL would otherwise break
/// only after `deadlock_timeout` (1 s by default): edits of two hot notes by 16 clients ran at
/// 13 a second that way, with 2 s timeouts.
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_millis(20);

/// The most writes per PostgreSQL batch. Each write's savepoint that writes is a
/// subtransaction; past 64 in one transaction PostgreSQL's per-backend cache of them overflows,
/// and every other session's snapshot then looks transactions up in `pg_subtrans` (a known
/// cliff). A write may nest a savepoint of its own, hence half of that.
pub const POSTGRES_BATCH: usize = 32;

type Job = Box<dyn FnOnce(&mut DbConnection) -> Answer + Send>;

/// A job's own `Result<T, E>`, boxed: the error side stays an error so that the group commit
/// sees its faults ([`crate::group_commit::Outcome`]); a batch that failed answers a boxed
/// [`StoreError`]. `again`: the job, to run again in a later batch, and the conflict it met.
struct Answer {
    result: Result<Box<dyn Any + Send>, Box<dyn Error + Send>>,
    again: Option<(Job, Conflict)>,
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

    fn runs_again(&self) -> bool {
        self.again.is_some()
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
                name,
                store,
                run_all,
                failed,
                durability,
                max_batch,
                Locking::Unordered {
                    lock_wait: LOCK_WAIT,
                },
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
        let mut next = job(f, self.budget());
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
        let mut next = job(f, self.budget());
        loop {
            let answer = self.commits.submit_blocking(next);
            match answer.again {
                Some(again) => next = self.again(again),
                None => return open(answer),
            }
        }
    }

    fn budget(&self) -> Budget {
        Budget {
            tries: CONFLICT_TRIES,
            lock: self.store.timeouts().lock,
            waiting_since: None,
        }
    }

    /// A write that met a conflict, counted on its way back into the queue.
    fn again(&self, (job, cause): (Job, Conflict)) -> Job {
        self.store.observer().conflict(self.name, cause);
        job
    }
}

/// How often, and for how long, a write may still run again.
#[derive(Clone, Copy)]
struct Budget {
    /// Runs left after conflicts (deadlocks, serialization failures).
    tries: u32,
    /// The store's lock timeout (`DB_LOCK_TIMEOUT_MS`): the most a write waits for locks in
    /// all, over its runs cut short by [`LOCK_WAIT`]; then the lock timeout is its answer.
    lock: std::time::Duration,
    /// When its first wait for a lock began.
    waiting_since: Option<Instant>,
}

/// `f` in its own savepoint, so that a write the database refuses rolls back alone; one that
/// meets a conflict comes back to run again while its `budget` lasts.
fn job<T, E, F>(f: F, budget: Budget) -> Job
where
    F: Fn(&mut DbConnection) -> Result<T, E> + Send + 'static,
    T: Send + 'static,
    E: Error + From<diesel::result::Error> + Send + 'static,
{
    Box::new(move |c| match crate::savepoint(c, &f) {
        Ok(value) => Answer::done(Ok(Box::new(value))),
        // A wait cut short by `LOCK_WAIT` does not count against the tries.
        Err(e) if waited_for_lock(c, &e) => {
            let since = budget
                .waiting_since
                .unwrap_or_else(|| Instant::now() - LOCK_WAIT);
            if since.elapsed() >= budget.lock {
                return Answer::done(Err(Box::new(e)));
            }
            let budget = Budget {
                waiting_since: Some(since),
                ..budget
            };
            Answer {
                result: Err(Box::new(e)),
                again: Some((job(f, budget), Conflict::LockWait)),
            }
        }
        Err(e) => match Fault::conflict(&e) {
            Some(cause) if budget.tries > 1 => {
                let budget = Budget {
                    tries: budget.tries - 1,
                    ..budget
                };
                Answer {
                    result: Err(Box::new(e)),
                    again: Some((job(f, budget), cause)),
                }
            }
            _ => Answer::done(Err(Box::new(e))),
        },
    })
}

/// Whether `err` is PostgreSQL's lock timeout, which in a batch is [`LOCK_WAIT`]'s.
fn waited_for_lock(conn: &DbConnection, err: &(dyn Error + 'static)) -> bool {
    conn.backend() == Backend::Postgres
        && crate::fault::sources(err).any(|e| {
            e.downcast_ref::<diesel::result::Error>()
                .is_some_and(|e| e.to_string().contains("lock timeout"))
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
