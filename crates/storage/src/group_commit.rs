//! Group commit: concurrent callers share transactions. Every durable commit waits for a disk
//! flush (PostgreSQL) or for the single write lock (SQLite), so one transaction per request caps
//! a write path at one flush or one lock hand-over per request. A [`GroupCommit`] queues each
//! caller's job instead: the first caller to arrive leads, runs whatever is queued by then as one
//! batch (the `run` function given to [`GroupCommit::new`], one transaction for all of it),
//! answers everyone in it, and hands the lead to the next waiting caller. A lone caller runs at
//! once, alone; under load batches grow by themselves to the number of callers waiting. Each
//! caller still gets its answer only after the commit that holds its work.
//!
//! Framework-free: callers block on it (the server calls it from its blocking pool). Waiting
//! callers hold no connection; only the leader takes one from the pool.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use crate::{DbConnection, Pool};

/// At most this many jobs share a transaction (PostgreSQL allows 65,535 bind parameters per
/// statement; a job's row takes a handful).
pub const MAX_BATCH: usize = 256;

/// Runs a batch in one transaction and returns one answer per job, in order.
pub type RunBatch<J, R> = fn(&mut DbConnection, &[&J]) -> Vec<R>;

pub struct GroupCommit<J, R> {
    pool: Pool,
    run: RunBatch<J, R>,
    /// The answer when there is no connection, or the batch panicked.
    failed: fn(String) -> R,
    queue: Mutex<Queue<J, R>>,
}

struct Queue<J, R> {
    waiting: VecDeque<Arc<Slot<J, R>>>,
    /// A caller is leading: it will take the waiting ones, or hand the lead to one of them.
    leading: bool,
}

struct Slot<J, R> {
    job: J,
    state: Mutex<SlotState<R>>,
    changed: Condvar,
}

enum SlotState<R> {
    Waiting,
    /// This caller leads now.
    Lead,
    Done(R),
    Taken,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks; if something ever did, the data is still a
    // consistent queue, so carry on rather than wedge every later caller.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<J, R> GroupCommit<J, R> {
    pub fn new(pool: Pool, run: RunBatch<J, R>, failed: fn(String) -> R) -> Self {
        GroupCommit {
            pool,
            run,
            failed,
            queue: Mutex::new(Queue {
                waiting: VecDeque::new(),
                leading: false,
            }),
        }
    }

    /// Runs `job` in a batch with whatever other jobs are waiting. Blocks until that batch has
    /// answered.
    pub fn submit(&self, job: J) -> R {
        let slot = Arc::new(Slot {
            job,
            state: Mutex::new(SlotState::Waiting),
            changed: Condvar::new(),
        });
        let lead_now = {
            let mut q = lock(&self.queue);
            q.waiting.push_back(Arc::clone(&slot));
            !std::mem::replace(&mut q.leading, true)
        };
        if !lead_now {
            let mut state = lock(&slot.state);
            while matches!(*state, SlotState::Waiting) {
                state = slot
                    .changed
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if let SlotState::Done(_) = *state {
                return take(&mut state);
            }
        }
        self.lead();
        take(&mut lock(&slot.state))
    }

    /// Runs one batch from the head of the queue (which holds the leader's own job), then
    /// passes the lead on. The leader does not loop: its caller gets its answer after one batch.
    fn lead(&self) {
        let batch: Vec<Arc<Slot<J, R>>> = {
            let mut q = lock(&self.queue);
            let n = q.waiting.len().min(MAX_BATCH);
            q.waiting.drain(..n).collect()
        };
        let answers = catch_unwind(AssertUnwindSafe(|| self.run_batch(&batch)))
            .unwrap_or_else(|_| self.fail_all(&batch, "the batch panicked"));
        for (slot, answer) in batch.iter().zip(answers) {
            *lock(&slot.state) = SlotState::Done(answer);
            slot.changed.notify_one();
        }
        let mut q = lock(&self.queue);
        match q.waiting.front() {
            Some(next) => {
                *lock(&next.state) = SlotState::Lead;
                next.changed.notify_one();
            }
            None => q.leading = false,
        }
    }

    fn run_batch(&self, batch: &[Arc<Slot<J, R>>]) -> Vec<R> {
        match self.pool.get() {
            Ok(mut conn) => {
                let jobs: Vec<&J> = batch.iter().map(|s| &s.job).collect();
                let answers = (self.run)(&mut conn, &jobs);
                assert_eq!(answers.len(), jobs.len(), "one answer per job");
                answers
            }
            Err(e) => self.fail_all(batch, &e.to_string()),
        }
    }

    fn fail_all(&self, batch: &[Arc<Slot<J, R>>], why: &str) -> Vec<R> {
        batch
            .iter()
            .map(|_| (self.failed)(why.to_owned()))
            .collect()
    }
}

fn take<R>(state: &mut SlotState<R>) -> R {
    match std::mem::replace(state, SlotState::Taken) {
        SlotState::Done(answer) => answer,
        _ => unreachable!("a slot is taken once, after its batch answered it"),
    }
}
