//! The feed of every account's events in commit order (`GET /events/stream`).
//!
//! On SQLite one writer at a time hands out ids, so id order is commit order. On PostgreSQL an
//! id is handed out at the insert, and a transaction holding a lower id may commit after one
//! holding a higher id: a reader going by id would pass over it for good. Each event there
//! records a transaction number `tx` (migration 000014's trigger): its transaction's id, or
//! the account's previous event's `tx` when that is higher, so that an account's events never
//! go down in `tx` (a transaction can hold an older id than the one it waited for on the
//! account's lock). The feed orders by `(tx, id)` and serves only values below the oldest
//! transaction still running in the statement's snapshot ([`SETTLED`]): an event's `tx` is
//! at least its own transaction's id, so those have all ended, and any later insert gets a
//! `tx` at least that horizon; no event can appear before a position once it has been served,
//! and each account's events come in sequence order. Transactions that `pg_stat_activity`
//! shows in another database of the cluster are left out of the horizon (they cannot write
//! here); one it cannot place (another role's session, without `pg_read_all_stats`) counts.
//! The price: an event waits until every transaction of this database older than its number
//! has ended, milliseconds unless a session sits idle inside a transaction (operators watch
//! for that anyway: it also holds back vacuum).

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text};

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

/// The numbers the feed may serve: below the oldest transaction still running in the
/// statement's own snapshot (so consistent with what it sees), leaving out transactions known
/// to run in another database of the cluster (they cannot write this table, and a long one
/// there would hold this feed back; `backend_xid` is the 32-bit id, so it is compared without
/// the epoch); without any, below the next transaction id.
const SETTLED: &str = "tx < COALESCE(\
     (SELECT min(x::text::bigint) FROM pg_snapshot_xip(pg_current_snapshot()) AS x \
      WHERE (x::text::bigint & 4294967295) NOT IN (SELECT backend_xid::text::bigint FROM pg_stat_activity \
        WHERE backend_xid IS NOT NULL AND datname IS DISTINCT FROM current_database())), \
     pg_snapshot_xmax(pg_current_snapshot())::text::bigint)";

/// Only the events of `owner`'s accounts, when an owner is given.
const OWNED: &str = "aggregate_id IN (SELECT account_id FROM accounts WHERE owner_id = ";

/// Up to `limit` events after `after`, in feed order, each with its position.
pub fn feed_after(
    conn: &mut DbConnection,
    after: FeedPosition,
    limit: i64,
) -> Result<Vec<(FeedPosition, Event)>, Error> {
    feed_of(conn, after, None, limit)
}

/// [`feed_after`], only the events of the accounts `owner` owns when an owner is given.
pub fn feed_of(
    conn: &mut DbConnection,
    after: FeedPosition,
    owner: Option<i64>,
    limit: i64,
) -> Result<Vec<(FeedPosition, Event)>, Error> {
    let rows: Vec<FeedRow> = match conn {
        DbConnection::Postgresql(c) => diesel::sql_query(format!(
            "SELECT tx, id, aggregate_id, event_type, payload, sequence, occurred_at \
             FROM account_events WHERE (tx, id) > ($1, $2) AND {SETTLED} \
             AND ($3::bigint IS NULL OR {OWNED}$3)) ORDER BY tx, id LIMIT $4"
        ))
        .bind::<BigInt, _>(after.tx)
        .bind::<BigInt, _>(after.id)
        .bind::<Nullable<BigInt>, _>(owner)
        .bind::<BigInt, _>(limit)
        .load(c)?,
        // A position from PostgreSQL (tx > 0) names no SQLite event; its id still orders.
        DbConnection::Sqlite(c) => diesel::sql_query(format!(
            "SELECT 0 AS tx, id, aggregate_id, event_type, payload, sequence, occurred_at \
             FROM account_events WHERE id > ?1 AND (?2 IS NULL OR {OWNED}?2)) \
             ORDER BY id LIMIT ?3"
        ))
        .bind::<BigInt, _>(after.id)
        .bind::<Nullable<BigInt>, _>(owner)
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

#[derive(QueryableByName)]
struct Head {
    #[diesel(sql_type = BigInt)]
    tx: i64,
    #[diesel(sql_type = BigInt)]
    id: i64,
}

/// The feed's last position now (the start when it is empty): what a reader starting now
/// has already seen.
pub fn feed_head(conn: &mut DbConnection) -> Result<FeedPosition, Error> {
    let head: Option<Head> = match conn {
        DbConnection::Postgresql(c) => diesel::sql_query(format!(
            "SELECT tx, id FROM account_events WHERE {SETTLED} ORDER BY tx DESC, id DESC LIMIT 1"
        ))
        .get_result(c)
        .optional()?,
        DbConnection::Sqlite(c) => {
            diesel::sql_query("SELECT 0 AS tx, id FROM account_events ORDER BY id DESC LIMIT 1")
                .get_result(c)
                .optional()?
        }
    };
    Ok(head.map_or(FeedPosition::START, |h| FeedPosition { tx: h.tx, id: h.id }))
}

/// [`feed_of`] and [`feed_head`] from one snapshot: a batch, and the feed's last position as
/// that batch saw it. When the batch is shorter than `limit`, nothing of `owner`'s lies between
/// its last event and that head, so a reader may move on to the head (and never scan the
/// others' events again).
pub fn feed_batch(
    conn: &mut DbConnection,
    after: FeedPosition,
    owner: Option<i64>,
    limit: i64,
) -> Result<(Vec<(FeedPosition, Event)>, FeedPosition), Error> {
    use diesel::connection::Connection;
    conn.transaction(|c| {
        if let DbConnection::Postgresql(pg) = c {
            diesel::sql_query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                .execute(pg)?;
        }
        let batch = feed_of(c, after, owner, limit)?;
        let head = feed_head(c)?;
        Ok((batch, head))
    })
}
