//! Storage of received webhook events. Plain functions over a connection; the caller decides
//! about transactions (none is needed here: one insert, or one insert and one lookup).

use diesel::prelude::*;
use pagination::Page;
use storage::DbConnection;

use crate::schema::webhook_events;
use crate::{Delivery, Error, Recorded, WebhookEvent};

type Row = (i64, String, String, String);
const COLUMNS: (
    webhook_events::id,
    webhook_events::event_type,
    webhook_events::payload,
    webhook_events::delivered_at,
) = (
    webhook_events::id,
    webhook_events::event_type,
    webhook_events::payload,
    webhook_events::delivered_at,
);

fn to_event((id, event_type, payload, delivered_at): Row) -> WebhookEvent {
    WebhookEvent {
        id,
        event_type,
        payload,
        delivered_at,
    }
}

/// Stores a verified delivery, unless the same `(t, v1)` — and therefore, `v1` being an HMAC
/// over `t` and the body, the same body — is already stored; then nothing is written and the
/// original id is returned.
///
/// Race-free without a transaction: the unique index on `(signature_t, signature_v1)` lets
/// exactly one of several concurrent identical inserts through; the others fail with a unique
/// violation and read the winner's id. (No transaction is open, so on PostgreSQL the failed
/// insert does not poison the lookup.)
pub fn record(conn: &mut DbConnection, delivery: &Delivery) -> Result<Recorded, Error> {
    let inserted = diesel::insert_into(webhook_events::table)
        .values((
            webhook_events::event_type.eq(&delivery.event_type),
            webhook_events::payload.eq(&delivery.payload),
            webhook_events::delivered_at.eq(storage::timestamp::now_rfc3339()),
            webhook_events::signature_t.eq(&delivery.signature_t),
            webhook_events::signature_v1.eq(&delivery.signature_v1),
        ))
        .returning(webhook_events::id)
        .get_result::<i64>(conn);
    match inserted {
        Ok(id) => Ok(Recorded {
            id,
            replayed: false,
        }),
        Err(e) if storage::is_unique_violation(&e) => {
            let id = webhook_events::table
                .filter(webhook_events::signature_t.eq(&delivery.signature_t))
                .filter(webhook_events::signature_v1.eq(&delivery.signature_v1))
                .select(webhook_events::id)
                .first::<i64>(conn)?;
            Ok(Recorded { id, replayed: true })
        }
        Err(e) => Err(e.into()),
    }
}

/// One page of events, newest first (id descending), and the total count.
pub fn list(conn: &mut DbConnection, page: Page) -> Result<(Vec<WebhookEvent>, i64), Error> {
    let rows: Vec<Row> = webhook_events::table
        .select(COLUMNS)
        .order(webhook_events::id.desc())
        .limit(page.limit)
        .offset(page.offset)
        .load(conn)?;
    let total = count(conn)?;
    Ok((rows.into_iter().map(to_event).collect(), total))
}

/// How many events are stored.
pub fn count(conn: &mut DbConnection) -> Result<i64, Error> {
    Ok(webhook_events::table.count().get_result(conn)?)
}
