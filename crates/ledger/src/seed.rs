//! Demo accounts in bulk (`server seed`): each one as the service opens it, the projection row
//! and its `AccountOpened` event (sequence 1), so `ledger-check` replays them as consistent.

use storage::DbConnection;
use storage::counts::Counted;
use storage::seed::{generated, in_batches, next_number};

use crate::Error;

/// When every demo account was opened (the ledger's timestamp form).
const OPENED_AT: &str = "2026-01-01 00:00:00";

/// Opens `count` accounts ("demo-N", owner "Demo owner N", balance 0), `batch` per statement;
/// `progress` gets the accounts committed so far. Returns `count`.
pub fn accounts(
    conn: &mut DbConnection,
    count: u64,
    batch: usize,
    progress: impl FnMut(u64),
) -> Result<u64, Error> {
    let first = next_number(conn, Counted::table("accounts"))?;
    let accounts = format!(
        "INSERT INTO accounts (account_id, owner, balance_cents, is_open, last_sequence, \
         updated_at) SELECT 'demo-' || k, 'Demo owner ' || k, 0, TRUE, 1, '{OPENED_AT}' FROM g"
    );
    let events = format!(
        "INSERT INTO account_events (aggregate_id, aggregate_type, event_type, payload, \
         sequence, occurred_at) SELECT 'demo-' || k, 'account', 'AccountOpened', \
         '{{\"owner\":\"Demo owner ' || k || '\"}}', 1, '{OPENED_AT}' FROM g"
    );
    in_batches(
        conn,
        first,
        count,
        batch,
        |c, from, to| -> Result<(), Error> {
            generated(c, from, to, &accounts)?;
            generated(c, from, to, &events)?;
            Ok(())
        },
        progress,
    )
}
