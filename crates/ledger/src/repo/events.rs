//! The event log: inserted (never updated or deleted) and read.

use crate::schema::{account_events, accounts};
use crate::{AGGREGATE_TYPE, Error, Event, EventType};
use diesel::prelude::*;
use serde_json::{Map, Value};
use std::collections::HashMap;
use storage::DbConnection;

/// The columns an event is read with. Its account is the one the query filters on and its type
/// the only one the table allows, so neither is read back from every row.
type EventColumns = (
    account_events::id,
    account_events::event_type,
    account_events::payload,
    account_events::sequence,
    account_events::occurred_at,
);

const EVENT_COLUMNS: EventColumns = (
    account_events::id,
    account_events::event_type,
    account_events::payload,
    account_events::sequence,
    account_events::occurred_at,
);

/// An event row in [`EVENT_COLUMNS`] order.
#[derive(Queryable)]
struct EventRow {
    id: i64,
    event_type: String,
    payload: String,
    sequence: i64,
    occurred_at: String,
}

impl EventRow {
    fn into_event(self, aggregate_id: &str) -> Result<Event, Error> {
        let sequence = self.sequence;
        Event::from_stored(
            self.id,
            aggregate_id.to_owned(),
            self.event_type,
            self.payload,
            sequence,
            self.occurred_at,
        )
        .map_err(|reason| Error::Corrupt {
            aggregate_id: aggregate_id.to_owned(),
            sequence,
            reason,
        })
    }
}

fn into_events(rows: Vec<EventRow>, aggregate_id: &str) -> Result<Vec<Event>, Error> {
    rows.into_iter()
        .map(|row| row.into_event(aggregate_id))
        .collect()
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
    // One event (an account's opening, an append alone in its batch) as a single-row insert:
    // Diesel prepares that statement once per connection, while a multi-row one, whose text
    // depends on the number of rows, is parsed and planned again on every call.
    let rows: Vec<(String, EventRow)> = match values.as_slice() {
        [one] => storage::with_backend!(conn, |c| diesel::insert_into(account_events::table)
            .values(*one)
            .returning((account_events::aggregate_id, EVENT_COLUMNS))
            .get_results(c))?,
        _ => storage::with_backend!(conn, |c| diesel::insert_into(account_events::table)
            .values(&values)
            .returning((account_events::aggregate_id, EVENT_COLUMNS))
            .get_results(c))?,
    };
    // RETURNING promises no row order: put the rows back in the order they were given.
    let mut by_key: HashMap<(String, i64), Event> = HashMap::with_capacity(rows.len());
    for (aggregate_id, row) in rows {
        let event = row.into_event(&aggregate_id)?;
        by_key.insert((aggregate_id, event.sequence), event);
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
        .select(EVENT_COLUMNS)
        .filter(account_events::aggregate_id.eq(aggregate_id.to_owned()))
        .filter(account_events::sequence.gt(after))
        .order(account_events::sequence.asc())
        .limit(limit)
        .into_boxed();
    if let Some(max) = up_to {
        q = q.filter(account_events::sequence.le(max));
    }
    into_events(q.load::<EventRow>(conn)?, aggregate_id)
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
        .select((EVENT_COLUMNS, last_sequence))
        .filter(account_events::aggregate_id.eq(aggregate_id.to_owned()))
        .filter(account_events::sequence.gt(after))
        .order(account_events::sequence.asc())
        .limit(limit)
        .load(conn)?;
    let count = rows.first().and_then(|(_, n)| *n);
    let events = rows
        .into_iter()
        .map(|(row, _)| row.into_event(aggregate_id))
        .collect::<Result<_, _>>()?;
    Ok((events, count))
}

pub fn get_event(
    conn: &mut DbConnection,
    aggregate_id: &str,
    sequence: i64,
) -> Result<Option<Event>, Error> {
    account_events::table
        .select(EVENT_COLUMNS)
        .filter(account_events::aggregate_id.eq(aggregate_id))
        .filter(account_events::sequence.eq(sequence))
        .first::<EventRow>(conn)
        .optional()?
        .map(|row| row.into_event(aggregate_id))
        .transpose()
}

/// The event with id `id`, if there is one.
pub fn event_by_id(conn: &mut DbConnection, id: i64) -> Result<Option<Event>, Error> {
    let found: Option<(String, EventRow)> = account_events::table
        .find(id)
        .select((account_events::aggregate_id, EVENT_COLUMNS))
        .first(conn)
        .optional()?;
    found
        .map(|(aggregate_id, row)| row.into_event(&aggregate_id))
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
