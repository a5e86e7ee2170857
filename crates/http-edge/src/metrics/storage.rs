//! The storage layer's work as metrics: the store's [`Observer`] (group-commit batches and
//! queue waits per writer, pool checkouts, faults by class) and, read when scraped, the SQLite
//! WAL's size and checkpoint progress.

use std::time::Duration;

use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry,
};
use storage::Fault;
use storage::observe::{BatchStages, Observer};

use super::BUCKETS;

/// Jobs per batch: 1 to [`storage::group_commit::MAX_BATCH`].
const BATCH_BUCKETS: [f64; 9] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

pub(super) struct StorageMetrics {
    batch: HistogramVec,
    stages: HistogramVec,
    queued: HistogramVec,
    conflicts: IntCounterVec,
    checkout: Histogram,
    checkout_timeouts: IntCounter,
    thread_wait: Histogram,
    call: Histogram,
    faults: IntCounterVec,
    wal_frames: IntGaugeVec,
    wal_bytes: IntGauge,
    reads: IntCounterVec,
}

impl StorageMetrics {
    pub fn new(registry: &Registry) -> Result<StorageMetrics, prometheus::Error> {
        let m = StorageMetrics {
            batch: HistogramVec::new(
                HistogramOpts::new(
                    "db_batch_jobs",
                    "Jobs per group-commit transaction, by writer (writes: every write route's \
                     queue; ledger; webhooks; webhook-dispatch).",
                )
                .buckets(BATCH_BUCKETS.to_vec()),
                &["writer"],
            )?,
            stages: HistogramVec::new(
                HistogramOpts::new(
                    "db_batch_seconds",
                    "Time a group-commit batch took of its writer, by writer and stage: lock \
                     (waiting for the write lock, shared by every writer of a SQLite file), run \
                     (BEGIN and the statements), commit (COMMIT, with the WAL's flush).",
                )
                .buckets(BUCKETS.to_vec()),
                &["writer", "stage"],
            )?,
            queued: HistogramVec::new(
                HistogramOpts::new(
                    "db_queue_wait_seconds",
                    "Time a write waited in its writer's queue before its batch began.",
                )
                .buckets(BUCKETS.to_vec()),
                &["writer"],
            )?,
            conflicts: IntCounterVec::new(
                Opts::new(
                    "db_write_conflicts_total",
                    "Writes run again in a later batch, by writer and cause: deadlock \
                     (PostgreSQL broke one, after deadlock_timeout), serialization, lock_wait \
                     (a row lock not given within the batch's short lock wait).",
                ),
                &["writer", "cause"],
            )?,
            checkout: Histogram::with_opts(
                HistogramOpts::new(
                    "db_pool_checkout_wait_seconds",
                    "Time taken to get a connection from the pool.",
                )
                .buckets(BUCKETS.to_vec()),
            )?,
            thread_wait: Histogram::with_opts(
                HistogramOpts::new(
                    "db_call_thread_wait_seconds",
                    "Time a request's database call waited for a thread to run on, before its \
                     checkout.",
                )
                .buckets(BUCKETS.to_vec()),
            )?,
            call: Histogram::with_opts(
                HistogramOpts::new(
                    "db_call_seconds",
                    "Time a request's database call ran on its thread: checkout, statements \
                     and commit.",
                )
                .buckets(BUCKETS.to_vec()),
            )?,
            checkout_timeouts: IntCounter::new(
                "db_pool_checkout_timeouts_total",
                "Checkouts that got no connection within DB_CHECKOUT_TIMEOUT_MS.",
            )?,
            faults: IntCounterVec::new(
                Opts::new(
                    "db_faults_total",
                    "Statements and transactions that met a storage fault, by class: full, \
                     read-only, i/o error, replaced, busy, timeout, unavailable, damaged.",
                ),
                &["fault"],
            )?,
            wal_frames: IntGaugeVec::new(
                Opts::new(
                    "sqlite_wal_frames",
                    "The SQLite WAL as the checkpointer last saw it: frames in the log \
                     (state=log) and frames copied back into the database (state=checkpointed).",
                ),
                &["state"],
            )?,
            wal_bytes: IntGauge::new("sqlite_wal_bytes", "Size of the SQLite WAL file.")?,
            reads: IntCounterVec::new(
                Opts::new(
                    "db_reads_total",
                    "Reads that standbys could serve (DATABASE_REPLICA_URLS set), by where they \
                     were served: standby, or primary (no token under REPLICA_READS=token, no \
                     standby caught up within REPLICA_WAIT_MS, or a standby unreachable).",
                ),
                &["served_by"],
            )?,
        };
        registry.register(Box::new(m.batch.clone()))?;
        registry.register(Box::new(m.stages.clone()))?;
        registry.register(Box::new(m.queued.clone()))?;
        registry.register(Box::new(m.conflicts.clone()))?;
        registry.register(Box::new(m.checkout.clone()))?;
        registry.register(Box::new(m.checkout_timeouts.clone()))?;
        registry.register(Box::new(m.thread_wait.clone()))?;
        registry.register(Box::new(m.call.clone()))?;
        registry.register(Box::new(m.faults.clone()))?;
        registry.register(Box::new(m.wal_frames.clone()))?;
        registry.register(Box::new(m.wal_bytes.clone()))?;
        registry.register(Box::new(m.reads.clone()))?;
        // Every class present from the start, so that a rate over it is never "no data".
        for fault in Fault::ALL {
            m.faults.with_label_values(&[fault.as_str()]);
        }
        for cause in storage::observe::Conflict::ALL {
            m.conflicts.with_label_values(&["writes", cause.as_str()]);
        }
        Ok(m)
    }

    /// The SQLite WAL's size and progress, read now.
    pub fn scrape(&self, store: &storage::Store) {
        if let Some((log, checkpointed)) = store.wal_progress() {
            self.wal_frames.with_label_values(&["log"]).set(log);
            self.wal_frames
                .with_label_values(&["checkpointed"])
                .set(checkpointed);
        }
        if let Some(path) = store.database().sqlite_path() {
            let bytes = std::fs::metadata(storage::wal::wal_path(path)).map_or(0, |m| m.len());
            self.wal_bytes.set(i64::try_from(bytes).unwrap_or(i64::MAX));
        }
    }
}

impl Observer for StorageMetrics {
    fn read_served(&self, by: storage::replicas::ServedBy) {
        let by = match by {
            storage::replicas::ServedBy::Standby => "standby",
            storage::replicas::ServedBy::Primary => "primary",
        };
        self.reads.with_label_values(&[by]).inc();
    }

    fn batch(&self, writer: &'static str, jobs: usize) {
        self.batch.with_label_values(&[writer]).observe(jobs as f64);
    }

    fn batch_stages(&self, writer: &'static str, stages: &BatchStages) {
        for (stage, took) in [
            ("lock", stages.lock),
            ("run", stages.run),
            ("commit", stages.commit),
        ] {
            self.stages
                .with_label_values(&[writer, stage])
                .observe(took.as_secs_f64());
        }
    }

    fn queued(&self, writer: &'static str, waited: Duration) {
        self.queued
            .with_label_values(&[writer])
            .observe(waited.as_secs_f64());
    }

    fn conflict(&self, writer: &'static str, cause: storage::observe::Conflict) {
        self.conflicts
            .with_label_values(&[writer, cause.as_str()])
            .inc();
    }

    fn checkout(&self, waited: Duration, ok: bool) {
        self.checkout.observe(waited.as_secs_f64());
        if !ok {
            self.checkout_timeouts.inc();
        }
    }

    fn call(&self, for_thread: Duration, ran: Duration) {
        self.thread_wait.observe(for_thread.as_secs_f64());
        self.call.observe(ran.as_secs_f64());
    }

    fn fault(&self, fault: Fault) {
        self.faults.with_label_values(&[fault.as_str()]).inc();
    }
}
