//! Group commit: concurrent callers share transactions. Every durable commit waits for a disk
//! flush (PostgreSQL) or for the single write lock (SQLite), so one transaction per request caps
//! a write path at one flush or one lock hand-over per request. A [`GroupCommit`] owns one writer
//! thread instead: callers queue jobs; the writer takes everything queued, runs it as one batch
//! (the `run` function given to [`GroupCommit::new`], one transaction for all of it), answers
//! each caller, and takes the next lot, which queued while the batch ran. A lone job runs at
//! once, alone; under load batches grow by themselves to the number of callers waiting. Each
//! caller still gets its answer only after the commit that holds its work.
//!
//! Callers wait without holding a thread or a connection: [`GroupCommit::submit`] is a future
//! (runtime-agnostic; the server awaits it on its async workers), and only the writer takes a
//! connection from the pool. It keeps that connection while batches keep coming (for at most
//! [`HOLD_AT_MOST`]) and gives it back whenever the queue is empty.
//! [`GroupCommit::submit_blocking`] is for plain threads (tests, tools).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{self, TryRecvError};
use std::thread;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::{DbConnection, Pool, PooledConn};

/// At most this many jobs share a transaction (PostgreSQL allows 65,535 bind parameters per
/// statement; a job's row takes a handful).
pub const MAX_BATCH: usize = 256;

/// Runs a batch in one transaction and returns one answer per job, in order.
pub type RunBatch<J, R> = fn(&mut DbConnection, &[&J]) -> Vec<R>;

pub struct GroupCommit<J, R> {
    jobs: mpsc::Sender<(J, oneshot::Sender<R>)>,
    /// The answer when there is no connection, the batch panicked, or the writer is gone.
    failed: fn(String) -> R,
}

impl<J: Send + 'static, R: Send + 'static> GroupCommit<J, R> {
    /// Starts the writer thread; it stops when the `GroupCommit` is dropped.
    pub fn new(pool: Pool, run: RunBatch<J, R>, failed: fn(String) -> R) -> Self {
        let (jobs, queue) = mpsc::channel();
        let writer = Writer {
            pool,
            run,
            failed,
            queue,
        };
        // If the thread cannot start, every submit answers `failed` (its queue is gone).
        let _ = thread::Builder::new()
            .name("group-commit".into())
            .spawn(move || writer.serve());
        GroupCommit { jobs, failed }
    }

    /// Runs `job` in the next batch; resolves once that batch has committed (or failed).
    pub async fn submit(&self, job: J) -> R {
        match self.enqueue(job) {
            Ok(answer) => answer.await.unwrap_or_else(|_| self.writer_gone()),
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
            .send((job, tx))
            .map(|()| rx)
            .map_err(|_| self.writer_gone())
    }

    fn writer_gone(&self) -> R {
        (self.failed)("the group-commit writer stopped".into())
    }
}

/// How long the writer keeps one connection while batches keep coming. Taking a connection from
/// the pool runs the pool's check query (a round trip on PostgreSQL) and, on SQLite, may hand
/// over a connection whose page cache is cold; under load that cost came once per batch. The
/// bound keeps that check running at least this often, so a connection that broke (a restarted
/// PostgreSQL server) fails at most this long before it is replaced.
const HOLD_AT_MOST: Duration = Duration::from_millis(100);

/// The writer's connection, while it keeps one.
struct Held {
    conn: PooledConn,
    since: Instant,
}

struct Writer<J, R> {
    pool: Pool,
    run: RunBatch<J, R>,
    failed: fn(String) -> R,
    queue: mpsc::Receiver<(J, oneshot::Sender<R>)>,
}

impl<J, R> Writer<J, R> {
    fn serve(self) {
        let mut held: Option<Held> = None;
        loop {
            let first = match self.queue.try_recv() {
                Ok(job) => job,
                Err(TryRecvError::Empty) => {
                    // Idle: the connection goes back to the pool before the writer sleeps.
                    held = None;
                    match self.queue.recv() {
                        Ok(job) => job,
                        // Every sender is gone: the GroupCommit was dropped.
                        Err(_) => return,
                    }
                }
                Err(TryRecvError::Disconnected) => return,
            };
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match self.queue.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            let jobs: Vec<&J> = batch.iter().map(|(job, _)| job).collect();
            let answers = catch_unwind(AssertUnwindSafe(|| self.run_batch(&mut held, &jobs)))
                .unwrap_or_else(|_| {
                    // Whatever the batch left on its connection is unknown: not reused.
                    held = None;
                    self.fail_all(jobs.len(), "the batch panicked")
                });
            for ((_, reply), answer) in batch.into_iter().zip(answers) {
                // A caller that stopped waiting (its request was dropped) needs no answer.
                let _ = reply.send(answer);
            }
        }
    }

    /// Runs a batch on the held connection, taking one from the pool first when there is none
    /// or it has been held for [`HOLD_AT_MOST`].
    fn run_batch(&self, held: &mut Option<Held>, jobs: &[&J]) -> Vec<R> {
        let h = match held.take().filter(|h| h.since.elapsed() <= HOLD_AT_MOST) {
            Some(h) => held.insert(h),
            None => match self.pool.get() {
                Ok(conn) => held.insert(Held {
                    conn,
                    since: Instant::now(),
                }),
                Err(e) => return self.fail_all(jobs.len(), &e.to_string()),
            },
        };
        let answers = (self.run)(&mut h.conn, jobs);
        assert_eq!(answers.len(), jobs.len(), "one answer per job");
        answers
    }

    fn fail_all(&self, n: usize, why: &str) -> Vec<R> {
        (0..n).map(|_| (self.failed)(why.to_owned())).collect()
    }
}
