//! Demo versioned notes in bulk (`server seed`), numbered after those the table counts.

use storage::DbConnection;
use storage::counts::Counted;

use crate::Error;

/// Inserts `count` notes ("Demo versioned note N", tagged `demo`), `batch` per statement;
/// `progress` gets the rows committed so far. Returns `count`.
pub fn notes(
    conn: &mut DbConnection,
    count: u64,
    batch: usize,
    progress: impl FnMut(u64),
) -> Result<u64, Error> {
    let sql = "INSERT INTO versioned_notes (title, body, tags, created_at, updated_at) \
               SELECT 'Demo versioned note ' || k, 'The body of demo note ' || k || '.', \
               '[\"demo\"]', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z' FROM g";
    let counted = Counted::table("versioned_notes");
    Ok(storage::seed::generated_rows(
        conn, counted, count, batch, sql, progress,
    )?)
}
