//! The event log: inserted (never updated or deleted) and read.

use crate::schema::{account_events, accounts};
use crate::{AGGREGATE_TYPE, Error, Event, EventType};
use diesel::prelude::*;
use serde_json::{Map, Value};
use std::collections::HashMap;
use storage::DbConnection;

/// An event row, every column in table order (`account_events::all_columns`).
#[derive(Queryable)]
struct EventRow {
    id: i64,
    aggregate_id: String,
    aggregate_type: String,
    event_type: String,
    payload: String,
    sequence: i64,
    occurred_at: String,
}

fn to_event(row: EventRow) -> Result<Event, Error> {
    let payload = match serde_json::from_str::<Value>(&row.payload) {
        Ok(Value::Object(map)) => map,
        _ => {
            return Err(Error::Corrupt {
                aggregate_id: row.aggregate_id,
                sequence: row.sequence,
                reason: "payload is not a JSON object".into(),
            });
        }
    };
    Ok(Event {
        id: row.id,
        aggregate_id: row.aggregate_id,
        aggregate_type: row.aggregate_type,
        event_type: row.event_type,
        payload,
        sequence: row.sequence,
        occurred_at: row.occurred_at,
    })
}

/// An event to insert: the sequence is decided by the caller under the account's lock.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent<'a> {
    pub aggregate_id: &'a str,
    pub event_type: EventType,
    pub payload: &'a Map<String, Value>,
    pub sequence: i64,
}

/// Appends one event (the unique `(aggregate_id, sequence)` pair is the last line of defence).
pub fn insert_event(
    conn: &mut DbConnection,
    event: &NewEvent<'_>,
    occurred_at: &str,
) -> Result<Event, Error> {
    let mut stored = insert_events(conn, std::slice::from_ref(event), occurred_at)?;
    stored.pop().ok_or(Error::Corrupt {
        aggregate_id: event.aggregate_id.to_owned(),
        sequence: event.sequence,
        reason: "the insert returned no row".into(),
    })
}

/// Appends events with one multi-row `INSERT … RETURNING`, returned in the order given.
pub fn insert_events(
    conn: &mut DbConnection,
    events: &[NewEvent<'_>],
    occurred_at: &str,
) -> Result<Vec<Event>, Error> {
    let texts: Vec<String> = events
        .iter()
        .map(|e| Value::Object(e.payload.clone()).to_string())
        .collect();
    let values: Vec<_> = events
        .iter()
        .zip(&texts)
        .map(|(e, text)| {
            (
                account_events::aggregate_id.eq(e.aggregate_id),
                account_events::aggregate_type.eq(AGGREGATE_TYPE),
                account_events::event_type.eq(e.event_type.as_str()),
                account_events::payload.eq(text.as_str()),
                account_events::sequence.eq(e.sequence),
                account_events::occurred_at.eq(occurred_at),
            )
        })
        .collect();
    let rows: Vec<EventRow> =
        storage::with_backend!(conn, |c| diesel::insert_into(account_events::table)
            .values(&values)
            .returning(account_events::all_columns)
            .get_results(c))?;
    // RETURNING promises no row order: put the rows back in the order they were given.
    let mut by_key: HashMap<(String, i64), Event> = HashMap::with_capacity(rows.len());
    for row in rows {
        let event = to_event(row)?;
        by_key.insert((event.aggregate_id.clone(), event.sequence), event);
    }
    events
        .iter()
        .map(|e| {
            by_key
                .remove(&(e.aggregate_id.to_owned(), e.sequence))
                .ok_or_else(|| Error::Corrupt {
                    aggregate_id: e.aggregate_id.to_owned(),
                    sequence: e.sequence,
                    reason: "the insert returned no row for this event".into(),
                })
        })
        .collect()
}

/// Events of one account with a sequence above `after` and at most `up_to` (when given),
/// ascending, at most `limit`.
pub fn events(
    conn: &mut DbConnection,
    aggregate_id: &str,
    after: i64,
    up_to: Option<i64>,
    limit: i64,
) -> Result<Vec<Event>, Error> {
    let mut q = account_events::table
        .select(account_events::all_columns)
        .filter(account_events::aggregate_id.eq(aggregate_id.to_owned()))
        .filter(account_events::sequence.gt(after))
        .order(account_events::sequence.asc())
        .limit(limit)
        .into_boxed();
    if let Some(max) = up_to {
        q = q.filter(account_events::sequence.le(max));
    }
    q.load::<EventRow>(conn)?
        .into_iter()
        .map(to_event)
        .collect()
}

/// The first `limit` events after sequence `after`, ascending, with the account's
/// `last_sequence` (its number of events: sequences run 1, 2, 3… without gaps) read in the same
/// statement; the count is `None` when the page is empty.
pub fn events_and_count(
    conn: &mut DbConnection,
    aggregate_id: &str,
    after: i64,
    limit: i64,
) -> Result<(Vec<Event>, Option<i64>), Error> {
    let last_sequence = accounts::table
        .filter(accounts::account_id.eq(aggregate_id.to_owned()))
        .select(accounts::last_sequence)
        .single_value();
    let rows: Vec<(EventRow, Option<i64>)> = account_events::table
        .select((account_events::all_columns, last_sequence))
        .filter(account_events::aggregate_id.eq(aggregate_id.to_owned()))
        .filter(account_events::sequence.gt(after))
        .order(account_events::sequence.asc())
        .limit(limit)
        .load(conn)?;
    let count = rows.first().and_then(|(_, n)| *n);
    let events = rows
        .into_iter()
        .map(|(row, _)| to_event(row))
        .collect::<Result<_, _>>()?;
    Ok((events, count))
}

pub fn get_event(
    conn: &mut DbConnection,
    aggregate_id: &str,
    sequence: i64,
) -> Result<Option<Event>, Error> {
    account_events::table
        .select(account_events::all_columns)
        .filter(account_events::aggregate_id.eq(aggregate_id))
        .filter(account_events::sequence.eq(sequence))
        .first::<EventRow>(conn)
        .optional()?
        .map(to_event)
        .transpose()
}

/// Events whose aggregate has no projection row (the foreign key forbids them; the check
/// counts them anyway).
pub fn count_orphan_events(conn: &mut DbConnection) -> Result<i64, Error> {
    use diesel::dsl::{exists, not};
    Ok(account_events::table
        .filter(not(exists(
            accounts::table.filter(accounts::account_id.eq(account_events::aggregate_id)),
        )))
        .count()
        .get_result(conn)?)
}
