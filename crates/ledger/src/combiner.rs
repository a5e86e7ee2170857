//! Group commit for appends. Every durable commit waits for a disk flush, and appends to one
//! account are serialized by its lock, so one transaction per append caps one hot account at
//! one flush per event (about 700 appends/s on PostgreSQL here). The [`Appender`] lets
//! concurrent requests share transactions instead: the first request to arrive leads, runs
//! whatever is queued by then as one batch ([`service::append_batch`]), answers everyone in it,
//! and hands the lead to the next waiting request. A lone request runs at once, alone; under load
//! batches grow by themselves to the number of requests waiting. Each request still gets its
//! answer only after the commit that holds its event.
//!
//! Framework-free: callers block on it (the server calls it from its blocking pool). Several
//! appenders (processes) on one database stay correct: batches lock their accounts in id
//! order, exactly as single appends do.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use storage::Pool;

use crate::Error;
use crate::service::{self, Append, Recorded};

/// At most this many commands share a transaction (PostgreSQL allows 65,535 bind parameters
/// per statement; an event takes 6).
pub const MAX_BATCH: usize = 256;

pub struct Appender {
    pool: Pool,
    queue: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    waiting: VecDeque<Arc<Slot>>,
    /// A request is leading: it will take the waiting ones, or hand the lead to one of them.
    leading: bool,
}

struct Slot {
    job: Append,
    state: Mutex<SlotState>,
    changed: Condvar,
}

enum SlotState {
    Waiting,
    /// This request leads now.
    Lead,
    Done(Result<Recorded, Error>),
    Taken,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks; if something ever did, the data is still a
    // consistent queue, so carry on rather than wedge every later append.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Appender {
    pub fn new(pool: Pool) -> Self {
        Appender {
            pool,
            queue: Mutex::new(Queue::default()),
        }
    }

    /// Appends `job`, sharing a transaction with whatever other appends are waiting. Blocks
    /// until the transaction holding it has committed (or the command was refused).
    pub fn append(&self, job: Append) -> Result<Recorded, Error> {
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

    /// Runs one batch from the head of the queue (which holds the leader's own request), then
    /// passes the lead on. The leader does not loop: its caller gets its answer after one batch.
    fn lead(&self) {
        let batch: Vec<Arc<Slot>> = {
            let mut q = lock(&self.queue);
            let n = q.waiting.len().min(MAX_BATCH);
            q.waiting.drain(..n).collect()
        };
        let outcomes = catch_unwind(AssertUnwindSafe(|| self.run(&batch)))
            .unwrap_or_else(|_| busy(&batch, "the batch panicked".into()));
        for (slot, outcome) in batch.iter().zip(outcomes) {
            *lock(&slot.state) = SlotState::Done(outcome);
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

    fn run(&self, batch: &[Arc<Slot>]) -> Vec<Result<Recorded, Error>> {
        match self.pool.get() {
            Ok(mut conn) => {
                let jobs: Vec<&Append> = batch.iter().map(|s| &s.job).collect();
                service::append_batch(&mut conn, &jobs)
            }
            Err(e) => busy(batch, e.to_string()),
        }
    }
}

fn busy(batch: &[Arc<Slot>], last: String) -> Vec<Result<Recorded, Error>> {
    batch
        .iter()
        .map(|_| Err(Error::Busy { last: last.clone() }))
        .collect()
}

fn take(state: &mut SlotState) -> Result<Recorded, Error> {
    match std::mem::replace(state, SlotState::Taken) {
        SlotState::Done(outcome) => outcome,
        _ => unreachable!("a slot is taken once, after its batch answered it"),
    }
}
