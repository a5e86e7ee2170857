//! Group commit: concurrent callers share transactions. Every durable commit waits for a disk
//! flush (PostgreSQL) or for the single write lock (SQLite), so one transaction per request caps
//! a write path at one flush or one lock hand-over per request. A [`GroupCommit`] owns one writer
//! thread instead ([`POSTGRES_WRITERS`] on PostgreSQL, taking turns at the queue): callers queue
//! jobs; the writer takes everything queued, runs it as one batch (the `run` function given to
//! [`GroupCommit::new`], one transaction for all of it), answers each caller, and takes the
//! next lot, which queued while the batch ran. A lone job runs at
//! once, alone; under load batches grow by themselves to the number of callers waiting. Each
//! caller still gets its answer only after the commit that holds its work.
//!
//! Callers wait without holding a thread or a connection: [`GroupCommit::submit`] is a future
//! (runtime-agnostic; the server awaits it on its async workers), and only the writer takes a
//! connection from the pool. It keeps that connection while batches keep coming (for at most
//! [`HOLD_AT_MOST`]) and gives it back whenever the queue is empty.
//! [`GroupCommit::submit_blocking`] is for plain threads (tests, tools).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, TryRecvError};
use std::thread;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::fault::{Failure, Fault, StoreError};
use crate::{Backend, DbConnection, PooledConn, Store};

/// At most this many jobs share a transaction (PostgreSQL allows 65,535 bind parameters per
/// statement; a job's row takes a handful).
pub const MAX_BATCH: usize = 256;

/// Runs a batch inside the writer's transaction and returns one answer per job, in order. A job
/// the database refuses must not fail its neighbours: the function runs each job (or the whole
/// batch) in a nested transaction (a savepoint) and answers a refusal for that job alone.
pub type RunBatch<J, R> = fn(&mut DbConnection, Vec<J>) -> Vec<R>;

/// Writers per group commit on PostgreSQL, each with its own connection while it has batches.
/// SQLite has one (one write lock per file). PostgreSQL runs transactions side by side and
/// shares one WAL flush among the commits waiting for it, so a second writer's batch runs
/// while the first one's waits for its flush or its round trips; the jobs already allow it
/// (several servers share one database: appends lock their accounts in one order, webhook
/// inserts skip duplicates by the unique index). Measured on 2026-11-27 (release build, 2
/// cores, `wrk -c16 -d5s`, alternating servers): appends to 100 accounts 2.9-3.4k req/s with
/// one writer, 5.6-5.7k with two (p99 5.2-5.4 ms against 6.3-10.7 ms), 4.8k with three (p99
/// up to 25 ms: batches wait on each other's account locks, and the cores are full); signed
/// webhooks 7.0k, 9.5-9.9k and 8.9-9.2k.
pub const POSTGRES_WRITERS: usize = 2;

/// How the jobs of a group commit take their row locks (it matters on PostgreSQL, whose
/// writers are two; SQLite's one writer never waits for a row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Locking {
    /// In one order across the whole batch (the ledger locks all of a batch's accounts in one
    /// sorted statement): two batches never wait for each other, and run side by side.
    Ordered,
    /// In any order (route writes: two notes edited by two clients each). Two batches side by
    /// side can then each hold the rows of their earlier jobs while a later job waits for the
    /// other's: a deadlock that PostgreSQL breaks only after `deadlock_timeout` (1 s). So a
    /// statement waits at most the given time for a lock (its job answers that it runs again,
    /// [`Outcome::runs_again`]), and once one has, the writers run their batches' statements
    /// in turn for [`IN_TURN_FOR`] (a batch's `COMMIT` overlapping the next one's statements,
    /// so that a batch waits at most for one that is committing, which waits for no lock).
    /// Batches that meet no lock keep running side by side: in turn, uncontended creates ran
    /// 25–38% slower.
    Unordered { lock_wait: Duration },
}

/// How long the writers of an [`Locking::Unordered`] group commit run in turn after a job
/// waited for a lock. Hot rows under load meet that again within milliseconds of the end, and
/// each time it costs the writes then running up to `lock_wait`: 16 clients editing two notes
/// had a p99 of 21–54 ms with 1 s, 8.5–10 ms with 5 s, at the same rate (3.2–3.6k/s).
pub const IN_TURN_FOR: Duration = Duration::from_secs(5);

/// A queued job, its caller's answer channel, and when it was queued.
type Queued<J, R> = (J, oneshot::Sender<R>, Instant);

/// What the writer needs to see in a job's answer: the storage fault it met, if any. A job's
/// statement can fail on a fault that outlives it (a SQLite connection opened while the file was
/// read-only stays read-only) while the batch around it commits, so the writer looks at every
/// answer: such a fault discards the connection and is reported to [`Store::note`] (`/health`).
pub trait Outcome {
    fn fault(&self) -> Option<Fault>;
    /// The job met another batch's lock or a conflict and runs again in a later batch.
    fn runs_again(&self) -> bool {
        false
    }
}

impl<T, E: std::error::Error + 'static> Outcome for Result<T, E> {
    fn fault(&self) -> Option<Fault> {
        self.as_ref().err().and_then(|e| Fault::find(e))
    }
}

pub struct GroupCommit<J, R> {
    jobs: mpsc::Sender<Queued<J, R>>,
    /// The most [`GroupCommit::submit`] waits for its batch (`Timeouts::answer`).
    deadline: Duration,
    /// The answer when the batch could not run or commit (no connection, no lock, a failed
    /// `COMMIT`, replaced files, a panic, a job that waited too long).
    failed: fn(StoreError) -> R,
}

impl<J: Send + 'static, R: Outcome + Send + 'static> GroupCommit<J, R> {
    /// Starts the writer thread; it stops when the `GroupCommit` is dropped. `name` is the
    /// writer's, in what the store's observer is told (`notes`, `ledger`, `webhooks`).
    pub fn new(
        name: &'static str,
        store: Store,
        run: RunBatch<J, R>,
        failed: fn(StoreError) -> R,
    ) -> Self {
        Self::with_durability(
            name,
            store,
            run,
            failed,
            Durability::Flushed,
            MAX_BATCH,
            Locking::Ordered,
        )
    }

    /// [`GroupCommit::new`] with the given [`Durability`], at most `max_batch` jobs (at least
    /// one, at most [`MAX_BATCH`]) per transaction, whose jobs lock rows as `locking` says.
    pub fn with_durability(
        name: &'static str,
        store: Store,
        run: RunBatch<J, R>,
        failed: fn(StoreError) -> R,
        durability: Durability,
        max_batch: usize,
        locking: Locking,
    ) -> Self {
        let max_batch = max_batch.clamp(1, MAX_BATCH);
        let (jobs, queue) = mpsc::channel();
        let deadline = store.timeouts().answer;
        let queue = Arc::new(Mutex::new(queue));
        let in_turn = Arc::new(InTurn {
            since: Instant::now(),
            until_ms: AtomicU64::new(0),
        });
        let writers = match store.backend() {
            Backend::Sqlite => 1,
            // Writers hold connections while busy: at most a quarter of the pool.
            Backend::Postgres => {
                let quarter = usize::try_from(store.pool().max_size() / 4).unwrap_or(1);
                POSTGRES_WRITERS.min(quarter).max(1)
            }
        };
        for _ in 0..writers {
            let writer = Writer {
                name,
                durability,
                max_batch,
                locking,
                in_turn: Arc::clone(&in_turn),
                store: store.clone(),
                run,
                failed,
                queue: Arc::clone(&queue),
            };
            // If no thread starts, every submit answers `failed` (its queue is gone).
            let _ = thread::Builder::new()
                .name("group-commit".into())
                .spawn(move || writer.serve());
        }
        GroupCommit {
            jobs,
            deadline,
            failed,
        }
    }

    /// Runs `job` in the next batch; resolves once that batch has committed (or failed), or
    /// with a `Timeout` fault when no answer came within the deadline: the database did not
    /// answer, and the job may still be carried out when it does (the caller cannot know).
    pub async fn submit(&self, job: J) -> R {
        self.submit_until(job, Instant::now() + self.deadline).await
    }

    /// [`GroupCommit::submit`] with its own deadline: for a caller that submits more than once
    /// for one answer and must keep to one deadline in all.
    pub async fn submit_until(&self, job: J, deadline: Instant) -> R {
        match self.enqueue(job) {
            Ok(answer) => match tokio::time::timeout_at(deadline.into(), answer).await {
                Ok(answer) => answer.unwrap_or_else(|_| self.writer_gone()),
                Err(_) => (self.failed)(StoreError::new(
                    Fault::Timeout,
                    format!("no answer from the database within {:?}", self.deadline),
                )),
            },
            Err(failed) => failed,
        }
    }

    /// [`GroupCommit::submit`] for a plain thread (not inside an async runtime).
    pub fn submit_blocking(&self, job: J) -> R {
        match self.enqueue(job) {
            Ok(answer) => answer
                .blocking_recv()
                .unwrap_or_else(|_| self.writer_gone()),
            Err(failed) => failed,
        }
    }

    fn enqueue(&self, job: J) -> Result<oneshot::Receiver<R>, R> {
        let (tx, rx) = oneshot::channel();
        self.jobs
            .send((job, tx, Instant::now()))
            .map(|()| rx)
            .map_err(|_| self.writer_gone())
    }

    /// The most a caller waits for its answer (`Timeouts::answer`).
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    fn writer_gone(&self) -> R {
        (self.failed)(StoreError::new(
            Fault::Unavailable,
            "the group-commit writer stopped",
        ))
    }
}

/// How long the writer keeps one connection while batches keep coming. Taking a connection from
/// the pool runs the pool's check query (a round trip on PostgreSQL) and, on SQLite, may hand
/// over a connection whose page cache is cold; under load that cost came once per batch. The
/// bound keeps that check running at least this often. A held connection that died in between
/// fails its `BEGIN`, and the batch begins again on a fresh one ([`Store::begin`]).
const HOLD_AT_MOST: Duration = Duration::from_millis(100);

/// The queue, held by the writer whose batch's statements are running in turn.
type Turn<'a, J, R> = parking_lot::MutexGuard<'a, mpsc::Receiver<Queued<J, R>>>;

/// Why a batch ran nothing, or committed nothing.
enum Refused {
    /// No transaction could begin: no connection, or a dead one twice.
    Begin(StoreError),
    /// The write lock, the batch itself or its `COMMIT` failed.
    Batch(StoreError),
}

/// The writer's connection, while it keeps one.
struct Held {
    conn: PooledConn,
    since: Instant,
}

/// Whether a batch's `COMMIT` waits for its disk flush.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// As the store is configured (`synchronous=FULL` on SQLite, `synchronous_commit=on` on
    /// PostgreSQL by default): an answered write survives power loss.
    Flushed,
    /// The commit does not wait for the flush (`synchronous=NORMAL`, `synchronous_commit=off`
    /// for the batch's transaction): a power loss may take the last batches, never a later
    /// write without an earlier one, and a process crash takes nothing. For bookkeeping that
    /// is redone when lost (the webhook dispatcher's cursors, leases and log), never for a
    /// write a client is told is stored.
    Unflushed,
}

/// Until when the writers of a [`Locking::Unordered`] group commit run in turn.
struct InTurn {
    since: Instant,
    /// Milliseconds after `since`.
    until_ms: AtomicU64,
}

impl InTurn {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.since.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn active(&self) -> bool {
        self.now_ms() < self.until_ms.load(Ordering::Relaxed)
    }

    fn start(&self) {
        let until = self.now_ms().saturating_add(IN_TURN_FOR.as_millis() as u64);
        self.until_ms.fetch_max(until, Ordering::Relaxed);
    }
}

struct Writer<J, R> {
    name: &'static str,
    durability: Durability,
    max_batch: usize,
    locking: Locking,
    in_turn: Arc<InTurn>,
    store: Store,
    run: RunBatch<J, R>,
    failed: fn(StoreError) -> R,
    /// Shared by the writers: one takes a batch at a time.
    queue: Arc<Mutex<mpsc::Receiver<Queued<J, R>>>>,
}

impl<J, R: Outcome> Writer<J, R> {
    fn serve(self) {
        let mut held: Option<Held> = None;
        loop {
            // Another writer is at the queue, taking what is queued or waiting for it: this one
            // may wait a while, and its connection goes back to the pool before it does.
            let queue = match self.queue.try_lock() {
                Some(queue) => queue,
                None => {
                    self.release(held.take());
                    self.queue.lock()
                }
            };
            let first = match queue.try_recv() {
                Ok(job) => job,
                Err(TryRecvError::Empty) => {
                    // Idle: the connection goes back to the pool before the writer sleeps.
                    self.release(held.take());
                    match queue.recv() {
                        Ok(job) => job,
                        // Every sender is gone: the GroupCommit was dropped.
                        Err(_) => return,
                    }
                }
                Err(TryRecvError::Disconnected) => {
                    self.release(held.take());
                    return;
                }
            };
            let mut batch = vec![first];
            while batch.len() < self.max_batch {
                match queue.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            // In turn, the queue stays this writer's until its batch's statements have run: the
            // other writer takes the next batch meanwhile, and runs it as this one commits.
            let turn = match self.locking {
                Locking::Unordered { .. } if self.in_turn.active() => Some(queue),
                _ => {
                    drop(queue);
                    None
                }
            };
            if let Some(err) = self.serve_batch(&mut held, batch, turn) {
                self.fail_queued(&err);
            }
        }
    }

    /// Hands the writer's connection back to the pool in the store's own durability.
    fn release(&self, held: Option<Held>) {
        if let (Some(mut held), Durability::Unflushed) = (held, self.durability) {
            self.store.flush_in_commit(&mut held.conn);
        }
    }

    /// The batch found the database unreachable after waiting the checkout timeout. Everything
    /// that queued meanwhile would wait that long again, one batch after another, past any bound
    /// a client can plan for: it gets the same answer now. What queues from here on tries again.
    fn fail_queued(&self, err: &StoreError) {
        let queue = self.queue.lock();
        while let Ok((_, reply, _)) = queue.try_recv() {
            let _ = reply.send((self.failed)(StoreError::new(
                err.fault,
                format!("{} (while this write waited in the queue)", err.detail),
            )));
        }
    }

    /// Answers the jobs that waited past the queue timeout without running them, runs the rest
    /// in one transaction, and answers each of them after its `COMMIT`. Returns the error when
    /// the database could not be reached at all.
    fn serve_batch(
        &self,
        held: &mut Option<Held>,
        batch: Vec<Queued<J, R>>,
        turn: Option<Turn<'_, J, R>>,
    ) -> Option<StoreError> {
        let bound = self.store.timeouts().queue;
        let observer = self.store.observer();
        let mut jobs = Vec::with_capacity(batch.len());
        let mut replies = Vec::with_capacity(batch.len());
        let mut last_queued = None;
        for (job, reply, queued) in batch {
            last_queued = last_queued.max(Some(queued));
            let waited = queued.elapsed();
            observer.queued(self.name, waited);
            if waited > bound {
                let _ = reply.send((self.failed)(StoreError::new(
                    Fault::Timeout,
                    format!("waited more than {bound:?} for the group-commit writer"),
                )));
            } else {
                jobs.push(job);
                replies.push(reply);
            }
        }
        if jobs.is_empty() {
            return None;
        }
        observer.batch(self.name, jobs.len());
        // Once the last caller has stopped waiting (its `submit` deadline), a batch stuck on a
        // server that answers nothing is cut off (`crate::cutoff`): the writer, and every write
        // queued behind it, go on with a fresh connection.
        let deadline = last_queued.unwrap_or_else(Instant::now) + self.store.timeouts().answer;
        let ran = crate::cutoff::within(deadline, || self.run_batch(held, jobs, turn));
        let (answers, unreachable) = match ran {
            Ok(answers) => (answers, None),
            Err(refused) => {
                let (Refused::Begin(err) | Refused::Batch(err)) = &refused;
                self.store.note(Err(err));
                let answers = replies.iter().map(|_| (self.failed)(err.clone())).collect();
                let unreachable = match refused {
                    Refused::Begin(err) if err.fault == Fault::Unavailable => Some(err),
                    _ => None,
                };
                (answers, unreachable)
            }
        };
        for (reply, answer) in replies.into_iter().zip(answers) {
            // A caller that stopped waiting (its request was dropped) needs no answer.
            let _ = reply.send(answer);
        }
        unreachable
    }

    /// Begins a transaction on the held connection (or one from the pool when there is none or
    /// it has been held for [`HOLD_AT_MOST`]), runs the batch, gives up its `turn` at the
    /// queue, commits.
    fn run_batch(
        &self,
        held: &mut Option<Held>,
        jobs: Vec<J>,
        turn: Option<Turn<'_, J, R>>,
    ) -> Result<Vec<R>, Refused> {
        let n = jobs.len();
        let asked = Instant::now();
        let _lock = self.store.lock_for_write().map_err(Refused::Batch)?;
        let locked = Instant::now();
        let previous = match held.take() {
            Some(h) if h.since.elapsed() <= HOLD_AT_MOST => Some((h.conn, h.since)),
            expired => {
                self.release(expired);
                None
            }
        };
        let since = previous
            .as_ref()
            .map_or_else(Instant::now, |(_, since)| *since);
        let previous = previous.map(|(conn, _)| conn);
        let how = crate::Begin {
            unflushed: self.durability == Durability::Unflushed,
            lock_wait: match self.locking {
                Locking::Unordered { lock_wait } => Some(lock_wait),
                Locking::Ordered => None,
            },
        };
        let mut conn = self.store.begin_as(previous, how).map_err(Refused::Begin)?;
        let answers = catch_unwind(AssertUnwindSafe(|| (self.run)(&mut conn, jobs)));
        drop(turn);
        if let Ok(answers) = &answers
            && answers.iter().any(Outcome::runs_again)
        {
            self.in_turn.start();
        }
        let ran = Instant::now();
        let mut job_fault = None;
        let outcome = match answers {
            Ok(answers) if answers.len() == n => {
                job_fault = answers.iter().find_map(Outcome::fault);
                if job_fault.is_some_and(Fault::discards_connection) {
                    conn.discard();
                }
                self.store.finish(&mut conn, Ok::<_, StoreError>(answers))
            }
            _ => {
                // Whatever the batch left on its connection is unknown: not reused.
                conn.discard();
                let err = StoreError::new(
                    Fault::Unavailable,
                    "the batch panicked or did not answer every job",
                );
                let _ = self.store.finish::<(), _>(&mut conn, Err(err.clone()));
                Err(Failure::Store(err))
            }
        };
        let stages = crate::observe::BatchStages {
            lock: locked - asked,
            run: ran - locked,
            commit: ran.elapsed(),
        };
        self.store.observer().batch_stages(self.name, &stages);
        if !conn.is_discarded() {
            *held = Some(Held { conn, since });
        }
        match outcome {
            Ok(answers) => {
                match job_fault {
                    Some(fault) => self.store.note(Err(&StoreError::new(
                        fault,
                        "a write of the committed batch met a storage fault",
                    ))),
                    None => self.store.note(Ok(())),
                }
                Ok(answers)
            }
            Err(Failure::Store(e) | Failure::Op(e)) => Err(Refused::Batch(e)),
        }
    }
}
