//! The feed of every account's events in commit order (`GET /events/stream`).
//!
//! On SQLite one writer at a time hands out ids, so id order is commit order. On PostgreSQL an
//! id is handed out at the insert, and a transaction holding a lower id may commit after one
//! holding a higher id: a reader going by id would pass over it for good. Each event there
//! records its transaction's id (`tx`, migration 000014); the feed orders by `(tx, id)` and
//! serves only transactions older than the oldest one still running
//! (`pg_snapshot_xmin(pg_current_snapshot())`). Those have all ended, so no event can appear
//! before a position once it has been served. The price: an event waits until every
//! transaction older than its own has ended, which is milliseconds unless a session sits idle
//! inside a transaction (operators watch for that anyway: it also holds back vacuum).

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};

use crate::{Error, Event, FeedPosition};
use storage::DbConnection;

#[derive(QueryableByName)]
struct FeedRow {
    #[diesel(sql_type = BigInt)]
    tx: i64,
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = Text)]
    aggregate_id: String,
    #[diesel(sql_type = Text)]
    event_type: String,
    #[diesel(sql_type = Text)]
    payload: String,
    #[diesel(sql_type = BigInt)]
    sequence: i64,
    #[diesel(sql_type = Text)]
    occurred_at: String,
}

const POSTGRES: &str = "SELECT tx, id, aggregate_id, event_type, payload, sequence, occurred_at \
     FROM account_events \
     WHERE (tx, id) > ($1, $2) \
       AND tx < pg_snapshot_xmin(pg_current_snapshot())::text::bigint \
     ORDER BY tx, id LIMIT $3";

const SQLITE: &str = "SELECT 0 AS tx, id, aggregate_id, event_type, payload, sequence, occurred_at \
     FROM account_events WHERE id > ? ORDER BY id LIMIT ?";

/// Up to `limit` events after `after`, in feed order, each with its position.
pub fn feed_after(
    conn: &mut DbConnection,
    after: FeedPosition,
    limit: i64,
) -> Result<Vec<(FeedPosition, Event)>, Error> {
    let rows: Vec<FeedRow> = match conn {
        DbConnection::Postgresql(c) => diesel::sql_query(POSTGRES)
            .bind::<BigInt, _>(after.tx)
            .bind::<BigInt, _>(after.id)
            .bind::<BigInt, _>(limit)
            .load(c)?,
        // A position from PostgreSQL (tx > 0) names no SQLite event; its id still orders.
        DbConnection::Sqlite(c) => diesel::sql_query(SQLITE)
            .bind::<BigInt, _>(after.id)
            .bind::<BigInt, _>(limit)
            .load(c)?,
    };
    rows.into_iter()
        .map(|row| {
            let position = FeedPosition {
                tx: row.tx,
                id: row.id,
            };
            let (aggregate_id, sequence) = (row.aggregate_id.clone(), row.sequence);
            Event::from_stored(
                row.id,
                row.aggregate_id,
                row.event_type,
                row.payload,
                row.sequence,
                row.occurred_at,
            )
            .map(|event| (position, event))
            .map_err(|reason| Error::Corrupt {
                aggregate_id,
                sequence,
                reason,
            })
        })
        .collect()
}
