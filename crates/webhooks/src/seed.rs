//! Demo webhook events in bulk (`server seed`), as if delivered and verified: each has its own
//! signature (`t`, `v1`), which the replay guard keeps unique.

use storage::counts::Counted;
use storage::{Backend, DbConnection};

use crate::Error;

/// Inserts `count` events (`demo.event`, payload `{"n":N}`), `batch` per statement; `progress`
/// gets the rows committed so far. Returns `count`.
pub fn events(
    conn: &mut DbConnection,
    count: u64,
    batch: usize,
    progress: impl FnMut(u64),
) -> Result<u64, Error> {
    // A 64-digit hex `v1` per number: how to spell it is the one difference between backends.
    let v1 = match conn.backend() {
        Backend::Sqlite => "printf('%064x', k)",
        Backend::Postgres => "lpad(to_hex(k), 64, '0')",
    };
    let sql = format!(
        "INSERT INTO webhook_events (event_type, payload, delivered_at, signature_t, \
         signature_v1) SELECT 'demo.event', '{{\"n\":' || k || '}}', '2026-01-01T00:00:00Z', \
         '1767225600', {v1} FROM g"
    );
    let counted = Counted::table("webhook_events");
    Ok(storage::seed::generated_rows(
        conn, counted, count, batch, &sql, progress,
    )?)
}
