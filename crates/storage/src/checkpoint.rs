//! The SQLite WAL checkpointer: a background thread beside each [`crate::Store`] that copies
//! committed WAL frames back into the database file, so that no writer has to.
//!
//! SQLite checkpoints from whichever connection commits when the WAL passes
//! `wal_autocheckpoint` pages, and that commit then also waits for the checkpoint's copying and
//! its fsyncs. With every write funnelled through one writer (group commit), that stalled all
//! writes. A `PASSIVE` checkpoint from this thread instead runs beside the writers and never
//! blocks them. It runs every 10 ms while the WAL grows (every 100 ms otherwise).
//!
//! Copying alone never lets the WAL start over: SQLite rewinds it only for a writer that begins
//! after a checkpoint copied every frame, and under steady writes the group commit's writer has
//! always begun its next batch by then. So once a pass leaves a WAL of [`REWIND_AT_FRAMES`] or
//! more with at most [`CATCH_UP_FRAMES`] left to copy, the thread raises a flag, and the store's
//! next writer, holding the write lock (no frame can arrive meanwhile), copies that tail before
//! its `BEGIN` and so begins on a fully copied WAL, which SQLite then rewinds. The writer does
//! it, not this thread: a nice-19 thread holding the write lock would be descheduled under load
//! with every writer waiting behind it.
//!
//! Without this the WAL grew to the connections' `wal_autocheckpoint` (10,000 pages, 40 MiB)
//! before anything rewound it, and random updates over 1,000,000 notes ran with a p99 of
//! 18–26 ms at 16 connections; rewinding at 1,000 pages brought it to 8.7–9.6 ms (at 500 pages
//! 6.7 ms, but 2,000 and 4,000 pages gave 14 and 18 ms). The price is about 7% of that route's
//! throughput (16.1–17.2k/s against 17.2–18.4k/s), since the tail is copied on the writer's
//! time; sequential inserts did not change. Measured with `scripts/bench/replay.lua`, see
//! docs/PERFORMANCE.md.
//!
//! Before it raises the flag, the thread syncs the database file itself (`fdatasync` on a
//! descriptor of its own). A `PASSIVE` pass that stops short of the WAL's end copies frames
//! without syncing them, and the writer's catch-up pass, which does reach the end, then synced
//! the whole file under the write lock: every page this thread had copied since the last sync,
//! thousands of random pages under random updates (7 ms per catch-up, traced with `strace`).
//! Synced here first, the writer's sync covers only the tail it copied (under 1 ms). Random
//! updates of 1,000,000 notes at 16 connections went from a p99 of 9.8–11 ms to 4.0–4.7 ms at
//! the same throughput (20–23k/s); appends did not change.
//!
//! The thread runs at the lowest nice priority ([`CHECKPOINTER_NICE`]): its work is never on a
//! request's path, and at normal priority it took the CPU from the request and writer threads
//! at random moments (`POST /webhook` on SQLite +4% with it niced; docs/webhooks.md). It stays
//! in the normal scheduling class, not the idle one ([`crate::idle_own_priority`]): under a
//! full CPU it must still get its small share, or the WAL grows.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::time::Duration;

use diesel::RunQueryDsl;

use crate::priority::{CHECKPOINTER_NICE, lower_own_priority};
use crate::{Database, DbConnection};

/// How often the thread looks at the WAL while there are writes, and while there are none.
const BUSY: Duration = Duration::from_millis(10);
const IDLE: Duration = Duration::from_millis(100);

/// A WAL this long (in frames, i.e. pages) is rewound: shorter WALs kept the tails lower still,
/// at more of the writer's time (see above).
pub const REWIND_AT_FRAMES: i32 = 1_000;

/// At most this many frames are copied while writers wait: about 1 MiB, measured at about
/// 0.5 ms including the fsync.
pub const CATCH_UP_FRAMES: i32 = 256;

/// What `PRAGMA wal_checkpoint` answers.
#[derive(diesel::QueryableByName)]
pub(crate) struct Pass {
    /// Frames in the WAL (-1 when the database is not in WAL mode).
    #[diesel(sql_type = diesel::sql_types::Integer)]
    pub(crate) log: i32,
    /// Of those, frames now copied into the database file.
    #[diesel(sql_type = diesel::sql_types::Integer)]
    pub(crate) checkpointed: i32,
}

pub(crate) fn pass(conn: &mut DbConnection) -> diesel::QueryResult<Pass> {
    diesel::sql_query("PRAGMA wal_checkpoint(PASSIVE)").get_result(conn)
}

/// What `PRAGMA wal_checkpoint(TRUNCATE)` answers first: 1 when a reader or writer kept it
/// from copying every frame and emptying the WAL (after the connection's busy timeout).
#[derive(diesel::QueryableByName)]
struct Truncated {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    busy: i32,
}

/// Copies every WAL frame into the database file, syncs it and empties the WAL, waiting for
/// readers and writers up to the connection's busy timeout. True when the WAL was emptied.
pub(crate) fn truncate(conn: &mut DbConnection) -> diesel::QueryResult<bool> {
    let t: Truncated = diesel::sql_query("PRAGMA wal_checkpoint(TRUNCATE)").get_result(conn)?;
    Ok(t.busy == 0)
}

/// Whether a pass left a WAL long enough to rewind and a tail short enough to copy while
/// writers wait. A pass that copied everything qualifies too: under steady writes the writer
/// had already begun its next transaction on the WAL as it was, and SQLite rewinds only for a
/// writer that begins after the last frame was copied.
pub fn worth_catching_up(log: i32, checkpointed: i32) -> bool {
    log >= REWIND_AT_FRAMES && (0..=CATCH_UP_FRAMES).contains(&(log - checkpointed))
}

/// Starts the thread for the SQLite file of `db`. It raises `catch_up` for the store's next
/// writer to copy the tail before it begins. The thread stops when the returned sender is
/// dropped.
pub fn start(
    db: Database,
    catch_up: Arc<AtomicBool>,
    progress: Arc<crate::observe::WalProgress>,
) -> Sender<()> {
    let (stop, stopped) = channel::<()>();
    let _ = std::thread::Builder::new()
        .name("sqlite-checkpoint".into())
        .spawn(move || {
            lower_own_priority(CHECKPOINTER_NICE);
            // Syncing through any descriptor flushes the file's dirty pages; read-only suffices.
            let mut file = None;
            let mut conn = None;
            let mut every = IDLE;
            let mut last_log = 0;
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                if conn.is_none() {
                    conn = db.establish().ok();
                }
                if file.is_none() {
                    file = db.sqlite_path().and_then(|p| std::fs::File::open(p).ok());
                }
                let Some(c) = conn.as_mut() else { continue };
                let Ok(p) = pass(c) else {
                    conn = None;
                    continue;
                };
                progress.set(p.log, p.checkpointed);
                if worth_catching_up(p.log, p.checkpointed) {
                    if let Some(f) = &file {
                        let _ = f.sync_data();
                    }
                    catch_up.store(true, Ordering::Relaxed);
                }
                // Frames came in since the last look: writes are under way.
                every = if p.log != last_log { BUSY } else { IDLE };
                last_log = p.log;
            }
        });
    stop
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_long_wal_with_a_short_tail_is_caught_up_under_the_lock() {
        assert!(worth_catching_up(REWIND_AT_FRAMES, REWIND_AT_FRAMES - 1));
        assert!(worth_catching_up(50_000, 50_000 - CATCH_UP_FRAMES));
        // All copied while a writer was under way: it must be let finish, then rewind.
        assert!(worth_catching_up(50_000, 50_000));
        // Too short to be worth a writer's wait.
        assert!(!worth_catching_up(REWIND_AT_FRAMES - 1, 0));
        // Too much left to copy while writers wait.
        assert!(!worth_catching_up(50_000, 50_000 - CATCH_UP_FRAMES - 1));
        // Not in WAL mode.
        assert!(!worth_catching_up(-1, -1));
    }
}
