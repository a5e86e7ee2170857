//! Demo rows in bulk (`server seed`, the benchmark's 1,000,000-row tables): numbered rows
//! inserted by multi-row statements and committed a few dozen statements at a time, so a
//! million rows cost a few dozen commits (fsyncs), not a million, and an interrupted seed keeps
//! what it committed.

use diesel::{Connection, RunQueryDsl};

use crate::DbConnection;
use crate::counts::Counted;

/// Statements per transaction.
pub const BATCHES_PER_TRANSACTION: u64 = 50;
/// The largest batch a caller may ask for (rows per statement).
pub const MAX_BATCH: usize = 5_000;

/// Inserts the rows numbered `first ..= first + count - 1` by calling `insert(conn, from, to)`
/// for consecutive runs of at most `batch` numbers, committing every
/// [`BATCHES_PER_TRANSACTION`] calls. `progress` gets the number of rows committed so far
/// after each commit. Returns `count`.
pub fn in_batches<E: From<diesel::result::Error>>(
    conn: &mut DbConnection,
    first: u64,
    count: u64,
    batch: usize,
    mut insert: impl FnMut(&mut DbConnection, u64, u64) -> Result<(), E>,
    mut progress: impl FnMut(u64),
) -> Result<u64, E> {
    let batch = batch.clamp(1, MAX_BATCH) as u64;
    let per_transaction = batch * BATCHES_PER_TRANSACTION;
    let mut done = 0u64;
    while done < count {
        let end = count.min(done + per_transaction);
        conn.transaction(|c| -> Result<(), E> {
            let mut next = done;
            while next < end {
                let last = end.min(next + batch);
                insert(c, first + next, first + last - 1)?;
                next = last;
            }
            Ok(())
        })?;
        done = end;
        progress(done);
    }
    Ok(done)
}

/// Ends a bulk load: on SQLite, copies the loaded WAL into the database file and empties the
/// WAL (`wal_checkpoint(TRUNCATE)`), tried up to three times while readers hold it back.
///
/// Left behind, a seed's WAL (58 MiB seen after the benchmark's tables) is copied by a live
/// server's background checkpointer, which runs at the lowest CPU priority, so that copy and
/// its writeback would overlap whatever the server does next (the benchmark's timed runs).
/// PostgreSQL needs nothing here: its own checkpointer spreads the writeback by design.
/// Returns whether the WAL is empty (always true on PostgreSQL).
pub fn settle(conn: &mut DbConnection) -> diesel::QueryResult<bool> {
    match conn {
        DbConnection::Postgresql(_) => Ok(true),
        DbConnection::Sqlite(_) => {
            // A reader's snapshot (another process, or a pool connection being set up) holds
            // the WAL for moments: retry for up to 2 s, which outlasts such moments on a
            // loaded machine.
            let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
            loop {
                if crate::checkpoint::truncate(conn)? {
                    return Ok(true);
                }
                if std::time::Instant::now() >= until {
                    return Ok(false);
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
    }
}

/// One statement that inserts rows the database generates itself: `insert_select` is an
/// `INSERT … SELECT … FROM g` whose `g(k)` holds the numbers `from ..= to` (a recursive CTE,
/// the same SQL on both backends). Returns how many rows it inserted.
pub fn generated(
    conn: &mut DbConnection,
    from: u64,
    to: u64,
    insert_select: &str,
) -> diesel::QueryResult<usize> {
    diesel::sql_query(format!(
        "WITH RECURSIVE g(k) AS (SELECT CAST({from} AS BIGINT) UNION ALL \
         SELECT k + 1 FROM g WHERE k < {to}) {insert_select}"
    ))
    .execute(conn)
}

/// The number after the rows `what` counts: where a seed run starts numbering, so that a second
/// run adds rows distinct from the first one's.
pub fn next_number(conn: &mut DbConnection, what: Counted) -> diesel::QueryResult<u64> {
    Ok(u64::try_from(crate::counts::total(conn, what)?).unwrap_or(0) + 1)
}

/// Seeds `count` rows of one table, numbered after what `counted` counts, through
/// [`generated`] statements of `batch` rows ([`in_batches`]). Returns `count`.
pub fn generated_rows(
    conn: &mut DbConnection,
    counted: Counted,
    count: u64,
    batch: usize,
    insert_select: &str,
    progress: impl FnMut(u64),
) -> diesel::QueryResult<u64> {
    let first = next_number(conn, counted)?;
    in_batches(
        conn,
        first,
        count,
        batch,
        |c, from, to| generated(c, from, to, insert_select).map(drop),
        progress,
    )
}
