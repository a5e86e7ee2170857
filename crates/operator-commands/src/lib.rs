//! The one-shot operator commands, each a function over an open store or database URLs: the
//! `server` binary only parses its command line and calls them. Each prints its report on
//! standard output and returns an error (exit 1) when the work failed or did not verify.

mod progress;

use std::path::Path;

use anyhow::Context;
use storage::{DbConnection, Store};

pub use progress::bar;

/// How many demo rows `seed` adds to each table (each run adds to what the tables hold).
#[derive(Debug, Clone, Copy, Default)]
pub struct SeedCounts {
    pub notes: u64,
    pub tags: u64,
    /// All on the oldest note (made first when there is none).
    pub comments: u64,
    pub accounts: u64,
    pub articles: u64,
    pub versioned_notes: u64,
    pub webhook_events: u64,
}

/// Rows per INSERT statement when the caller names none.
pub const SEED_BATCH: usize = articles::service::SEED_BATCH;

/// One table's seed: connection, rows, rows per statement, progress (rows committed so far).
type SeedFn = fn(&mut DbConnection, u64, usize, &mut dyn FnMut(u64)) -> anyhow::Result<u64>;

impl SeedCounts {
    fn plan(&self) -> [(&'static str, u64, SeedFn); 7] {
        [
            ("notes", self.notes, |c, n, b, p| {
                Ok(notes::seed::notes(c, n, b, p)?)
            }),
            ("tags", self.tags, |c, n, b, p| {
                Ok(notes::seed::tags(c, n, b, p)?)
            }),
            ("comments", self.comments, |c, n, b, p| {
                Ok(notes::seed::comments(c, n, b, p)?)
            }),
            ("accounts", self.accounts, |c, n, b, p| {
                Ok(ledger::seed::accounts(c, n, b, p)?)
            }),
            ("articles", self.articles, |c, n, b, p| {
                Ok(articles::service::seed(c, n, b, p)?)
            }),
            ("versioned notes", self.versioned_notes, |c, n, b, p| {
                Ok(versioned_notes::seed::notes(c, n, b, p)?)
            }),
            ("webhook events", self.webhook_events, |c, n, b, p| {
                Ok(webhooks::seed::events(c, n, b, p)?)
            }),
        ]
    }
}

/// Seeds each table in turn (batched multi-row inserts), each with its progress bar and a line
/// when it is done; then empties the SQLite WAL so the server starts on a settled file.
pub fn seed(store: &Store, counts: SeedCounts, batch: usize) -> anyhow::Result<()> {
    let mut conn = store.checkout()?;
    for (what, count, seed) in counts.plan() {
        if count == 0 {
            continue;
        }
        let started = std::time::Instant::now();
        let bar = bar(what, count);
        let inserted = seed(&mut conn, count, batch, &mut |done| bar.set_position(done))
            .with_context(|| format!("seeding {what} failed"))?;
        bar.finish_and_clear();
        println!(
            "inserted {inserted} {what} in {:.2} s",
            started.elapsed().as_secs_f64()
        );
    }
    if !storage::seed::settle(&mut conn)? {
        log::warn!("the WAL could not be emptied: readers held it; the server will copy it");
    }
    Ok(())
}

/// Replays every account and prints the report; `Ok(false)` when a projection differs.
pub fn ledger_check(store: &Store) -> anyhow::Result<bool> {
    let mut conn = store.checkout()?;
    let accounts = storage::counts::Counted::table("accounts");
    let accounts = storage::counts::total(&mut conn, accounts)?;
    let bar = bar("accounts checked", accounts.unsigned_abs());
    let report = ledger::check::check_all_with_progress(&mut conn, |n| bar.set_position(n))?;
    bar.finish_and_clear();
    print!("{report}");
    Ok(report.is_consistent())
}

/// Copies every table from `from` (SQLite) into the empty `to` (PostgreSQL) and verifies the
/// copy; all or nothing.
pub fn migrate_data(from: &str, to: &str) -> anyhow::Result<()> {
    let (mut source, mut target) = data_migration::connect(from, to)?;
    let mut current: Option<(&str, indicatif::ProgressBar)> = None;
    let outcome = data_migration::migrate(&mut source, &mut target, |p| {
        if current.as_ref().is_none_or(|(table, _)| *table != p.table) {
            current = Some((p.table, bar(p.table, p.total)));
        }
        if let Some((_, b)) = &current {
            b.set_position(p.rows);
        }
        if p.done {
            if let Some((_, b)) = current.take() {
                b.finish_and_clear();
            }
            log::info!("{}: {} rows copied", p.table, p.rows);
        }
    });
    match outcome {
        Ok(report) => {
            print!("{report}");
            println!("migrate-data: copied and verified; committed");
            Ok(())
        }
        Err(data_migration::Error::Unverified(report)) => {
            print!("{report}");
            anyhow::bail!("migrate-data: the copy does not match its source; nothing was written")
        }
        Err(err) => Err(anyhow::Error::new(err).context("migrate-data")),
    }
}

/// A verified, synced online copy of the SQLite database at `url` into the new file `to`.
pub fn backup(url: &str, to: &Path) -> anyhow::Result<()> {
    print!("{}", data_migration::backup::backup(url, to)?);
    println!("backup: verified and synced");
    Ok(())
}

/// Replaces the SQLite database at `url` with the verified backup `from`, keeping the replaced
/// file beside it.
pub fn restore(from: &Path, url: &str) -> anyhow::Result<()> {
    let restored = data_migration::backup::restore(from, url)?;
    print!("{}", restored.report);
    match restored.previous.as_deref().map(Path::display) {
        Some(kept) => println!("restore: done; the replaced database is kept as {kept}"),
        None => println!("restore: done"),
    }
    Ok(())
}
