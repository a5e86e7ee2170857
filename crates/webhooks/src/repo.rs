//! Storage of received webhook events: plain functions over a connection.

use std::collections::{HashMap, HashSet};

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
/// original id is returned. [`record_batch`] with a batch of one.
pub fn record(conn: &mut DbConnection, delivery: &Delivery) -> Result<Recorded, Error> {
    let mut recorded = record_batch(conn, &[delivery])?;
    recorded
        .pop()
        .ok_or(Error::Storage(diesel::result::Error::NotFound))
}

/// Stores several verified deliveries in one transaction and answers each, in order, as
/// [`record`] would have one after another: a delivery whose `(t, v1)` is already stored, or
/// appears earlier in the batch, is a replay of that one.
///
/// Race-free across connections and server instances: `INSERT … ON CONFLICT (signature_t,
/// signature_v1) DO NOTHING` lets exactly one of several concurrent identical inserts through
/// (on PostgreSQL the others wait for it to commit, then skip), and the skipped ones read the
/// winner's id in the next statement, which sees every committed row.
pub fn record_batch(
    conn: &mut DbConnection,
    deliveries: &[&Delivery],
) -> Result<Vec<Recorded>, Error> {
    conn.transaction(|c| {
        let now = storage::timestamp::now_rfc3339();
        let values: Vec<_> = deliveries
            .iter()
            .map(|d| {
                (
                    webhook_events::event_type.eq(&d.event_type),
                    webhook_events::payload.eq(&d.payload),
                    webhook_events::delivered_at.eq(&now),
                    webhook_events::signature_t.eq(&d.signature_t),
                    webhook_events::signature_v1.eq(&d.signature_v1),
                )
            })
            .collect();
        let returning = (
            webhook_events::id,
            webhook_events::signature_t,
            webhook_events::signature_v1,
        );
        let inserted: Vec<(i64, String, String)> = match c {
            DbConnection::Postgresql(c) => diesel::insert_into(webhook_events::table)
                .values(&values)
                .on_conflict((webhook_events::signature_t, webhook_events::signature_v1))
                .do_nothing()
                .returning(returning)
                .get_results(c)?,
            // `OR IGNORE` rather than `ON CONFLICT (t, v1) DO NOTHING`: the only constraint a
            // bound row can break is the unique (t, v1) one, and with no constraint left that
            // could abort the statement half-way, SQLite skips the statement journal it
            // otherwise keeps for every page the multi-row insert touches.
            DbConnection::Sqlite(c) => diesel::insert_or_ignore_into(webhook_events::table)
                .values(&values)
                .returning(returning)
                .get_results(c)?,
        };
        let inserted: HashMap<Signature, i64> = inserted
            .into_iter()
            .map(|(id, t, v1)| ((t, v1), id))
            .collect();
        let skipped: Vec<Signature> = deliveries
            .iter()
            .map(|d| signature(d))
            .filter(|sig| !inserted.contains_key(sig))
            .collect();
        let stored = stored_ids(c, &skipped)?;
        let mut answered: HashSet<Signature> = HashSet::with_capacity(deliveries.len());
        deliveries
            .iter()
            .map(|d| {
                let sig = signature(d);
                if let Some(&id) = inserted.get(&sig) {
                    // The batch's first delivery with this signature is the stored one.
                    let replayed = !answered.insert(sig);
                    return Ok(Recorded { id, replayed });
                }
                let id = stored
                    .get(&sig)
                    .copied()
                    .ok_or(Error::Storage(diesel::result::Error::NotFound))?;
                Ok(Recorded { id, replayed: true })
            })
            .collect()
    })
}

/// `(t, v1)` of a delivery: what identifies an exact replay.
type Signature = (String, String);

fn signature(d: &Delivery) -> Signature {
    (d.signature_t.clone(), d.signature_v1.clone())
}

/// The ids of the stored events with these signatures.
fn stored_ids(
    conn: &mut DbConnection,
    signatures: &[Signature],
) -> Result<HashMap<Signature, i64>, Error> {
    if signatures.is_empty() {
        return Ok(HashMap::new());
    }
    // Both columns, so the lookup walks the unique (t, v1) index.
    let ts: Vec<&str> = signatures.iter().map(|(t, _)| t.as_str()).collect();
    let v1s: Vec<&str> = signatures.iter().map(|(_, v1)| v1.as_str()).collect();
    let rows: Vec<(i64, String, String)> = webhook_events::table
        .filter(webhook_events::signature_t.eq_any(&ts))
        .filter(webhook_events::signature_v1.eq_any(&v1s))
        .select((
            webhook_events::id,
            webhook_events::signature_t,
            webhook_events::signature_v1,
        ))
        .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|(id, t, v1)| ((t, v1), id))
        .filter(|(sig, _)| signatures.contains(sig))
        .collect())
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
