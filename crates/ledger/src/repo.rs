//! Repository functions over `&mut DbConnection`, the same Diesel code on SQLite and
//! PostgreSQL. They never open transactions: [`crate::service`] does. Events are only ever
//! inserted; nothing here updates or deletes one.

use std::collections::HashMap;

use diesel::prelude::*;
use pagination::Page;
use serde_json::{Map, Value};
use storage::DbConnection;

use crate::schema::{account_events, account_idempotency_keys, accounts};
use crate::{AGGREGATE_TYPE, Account, AccountState, Error, Event, EventType};

type AccountRow = (String, String, i64, bool, i64, String);
const ACCOUNT_COLUMNS: (
    accounts::account_id,
    accounts::owner,
    accounts::balance_cents,
    accounts::is_open,
    accounts::last_sequence,
    accounts::updated_at,
) = (
    accounts::account_id,
    accounts::owner,
    accounts::balance_cents,
    accounts::is_open,
    accounts::last_sequence,
    accounts::updated_at,
);

type EventRow = (i64, String, String, String, String, i64, String);
const EVENT_COLUMNS: (
    account_events::id,
    account_events::aggregate_id,
    account_events::aggregate_type,
    account_events::event_type,
    account_events::payload,
    account_events::sequence,
    account_events::occurred_at,
) = (
    account_events::id,
    account_events::aggregate_id,
    account_events::aggregate_type,
    account_events::event_type,
    account_events::payload,
    account_events::sequence,
    account_events::occurred_at,
);

fn to_account(
    (account_id, owner, balance_cents, is_open, last_sequence, updated_at): AccountRow,
) -> Account {
    Account {
        account_id,
        state: AccountState {
            owner,
            balance_cents,
            is_open,
            last_sequence,
            updated_at,
        },
    }
}

fn to_event(
    (id, aggregate_id, aggregate_type, event_type, payload, sequence, occurred_at): EventRow,
) -> Result<Event, Error> {
    let payload = match serde_json::from_str::<Value>(&payload) {
        Ok(Value::Object(map)) => map,
        _ => {
            return Err(Error::Corrupt {
                aggregate_id,
                sequence,
                reason: "payload is not a JSON object".into(),
            });
        }
    };
    Ok(Event {
        id,
        aggregate_id,
        aggregate_type,
        event_type,
        payload,
        sequence,
        occurred_at,
    })
}

/// The transaction's first statement for a batch of appends: locks the projection rows of
/// `ids` (sorted, so two batches never wait for each other in opposite orders) and returns
/// their states. On SQLite a no-op `UPDATE` takes the database's write lock (waiting up to
/// `busy_timeout`) before anything is read, so there is no stale snapshot to upgrade; on
/// PostgreSQL `SELECT … ORDER BY account_id FOR UPDATE` takes the rows' locks in id order.
/// From here to commit the batch's accounts change only through this transaction. Ids without
/// a row are simply absent from the map.
pub fn lock_accounts(
    conn: &mut DbConnection,
    ids: &[&str],
) -> Result<HashMap<String, AccountState>, Error> {
    let rows: Vec<AccountRow> = match conn {
        DbConnection::Postgresql(c) => accounts::table
            .filter(accounts::account_id.eq_any(ids))
            .order(accounts::account_id.asc())
            .select(ACCOUNT_COLUMNS)
            .for_update()
            .load(c)?,
        DbConnection::Sqlite(c) => diesel::update(accounts::table)
            .filter(accounts::account_id.eq_any(ids))
            .set(accounts::last_sequence.eq(accounts::last_sequence))
            .returning(ACCOUNT_COLUMNS)
            .get_results(c)?,
    };
    Ok(rows
        .into_iter()
        .map(|r| {
            let a = to_account(r);
            (a.account_id, a.state)
        })
        .collect())
}

/// Inserts a new projection row (the account must not exist: a duplicate is `AccountExists`).
pub fn insert_account(
    conn: &mut DbConnection,
    id: &str,
    state: &AccountState,
) -> Result<(), Error> {
    diesel::insert_into(accounts::table)
        .values((
            accounts::account_id.eq(id),
            accounts::owner.eq(&state.owner),
            accounts::balance_cents.eq(state.balance_cents),
            accounts::is_open.eq(state.is_open),
            accounts::last_sequence.eq(state.last_sequence),
            accounts::updated_at.eq(&state.updated_at),
        ))
        .execute(conn)
        .map_err(|e| {
            if storage::is_unique_violation(&e) {
                Error::AccountExists { id: id.to_owned() }
            } else {
                Error::Storage(e)
            }
        })?;
    Ok(())
}

/// Writes folded states to their projection rows, all in one statement: an upsert whose
/// insert never happens (the rows exist and the caller holds their locks), because a
/// multi-row `INSERT … ON CONFLICT DO UPDATE` is the one multi-row update Diesel writes the
/// same way for both backends.
pub fn save_projections(
    conn: &mut DbConnection,
    states: &[(&str, &AccountState)],
) -> Result<(), Error> {
    use diesel::upsert::excluded;
    if states.is_empty() {
        return Ok(());
    }
    let values: Vec<_> = states
        .iter()
        .map(|(id, state)| {
            (
                accounts::account_id.eq(*id),
                accounts::owner.eq(&state.owner),
                accounts::balance_cents.eq(state.balance_cents),
                accounts::is_open.eq(state.is_open),
                accounts::last_sequence.eq(state.last_sequence),
                accounts::updated_at.eq(&state.updated_at),
            )
        })
        .collect();
    storage::with_backend!(conn, |c| diesel::insert_into(accounts::table)
        .values(&values)
        .on_conflict(accounts::account_id)
        .do_update()
        .set((
            accounts::owner.eq(excluded(accounts::owner)),
            accounts::balance_cents.eq(excluded(accounts::balance_cents)),
            accounts::is_open.eq(excluded(accounts::is_open)),
            accounts::last_sequence.eq(excluded(accounts::last_sequence)),
            accounts::updated_at.eq(excluded(accounts::updated_at)),
        ))
        .execute(c))?;
    Ok(())
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
            .returning(EVENT_COLUMNS)
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

pub fn get_account(conn: &mut DbConnection, id: &str) -> Result<Option<Account>, Error> {
    Ok(accounts::table
        .find(id)
        .select(ACCOUNT_COLUMNS)
        .first::<AccountRow>(conn)
        .optional()?
        .map(to_account))
}

/// One page of projections ordered by `account_id`, and the total count.
pub fn list_accounts(conn: &mut DbConnection, page: Page) -> Result<(Vec<Account>, i64), Error> {
    let rows: Vec<AccountRow> = accounts::table
        .select(ACCOUNT_COLUMNS)
        .order(accounts::account_id.asc())
        .limit(page.limit)
        .offset(page.offset)
        .load(conn)?;
    let total: i64 = accounts::table.count().get_result(conn)?;
    Ok((rows.into_iter().map(to_account).collect(), total))
}

/// Account ids after `after` (exclusive), ascending, at most `limit`.
pub fn account_ids_after(
    conn: &mut DbConnection,
    after: Option<&str>,
    limit: i64,
) -> Result<Vec<String>, Error> {
    let mut q = accounts::table
        .select(accounts::account_id)
        .order(accounts::account_id.asc())
        .limit(limit)
        .into_boxed();
    if let Some(after) = after {
        q = q.filter(accounts::account_id.gt(after.to_owned()));
    }
    Ok(q.load(conn)?)
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
    q.load::<EventRow>(conn)?
        .into_iter()
        .map(to_event)
        .collect()
}

pub fn count_events(conn: &mut DbConnection, aggregate_id: &str) -> Result<i64, Error> {
    Ok(account_events::table
        .filter(account_events::aggregate_id.eq(aggregate_id))
        .count()
        .get_result(conn)?)
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

/// `(fingerprint, aggregate_id, sequence)` recorded for an idempotency key.
pub type KeyRecord = (String, String, i64);

/// The records of those of `keys` that were used before.
pub fn find_keys(
    conn: &mut DbConnection,
    keys: &[&str],
) -> Result<HashMap<String, KeyRecord>, Error> {
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    let rows: Vec<(String, String, String, i64)> = account_idempotency_keys::table
        .filter(account_idempotency_keys::idempotency_key.eq_any(keys))
        .select((
            account_idempotency_keys::idempotency_key,
            account_idempotency_keys::fingerprint,
            account_idempotency_keys::aggregate_id,
            account_idempotency_keys::sequence,
        ))
        .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|(key, fingerprint, aggregate_id, sequence)| {
            (key, (fingerprint, aggregate_id, sequence))
        })
        .collect())
}

pub fn find_key(conn: &mut DbConnection, key: &str) -> Result<Option<KeyRecord>, Error> {
    Ok(find_keys(conn, &[key])?.remove(key))
}

/// A key to record with the event it produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewKey<'a> {
    pub key: &'a str,
    pub fingerprint: &'a str,
    pub aggregate_id: &'a str,
    pub sequence: i64,
}

/// Records idempotency keys with the events they produced. A unique violation means another
/// request with one of these keys committed first; the caller retries and then finds it.
pub fn insert_keys(
    conn: &mut DbConnection,
    keys: &[NewKey<'_>],
    created_at: &str,
) -> Result<(), diesel::result::Error> {
    if keys.is_empty() {
        return Ok(());
    }
    let values: Vec<_> = keys
        .iter()
        .map(|k| {
            (
                account_idempotency_keys::idempotency_key.eq(k.key),
                account_idempotency_keys::fingerprint.eq(k.fingerprint),
                account_idempotency_keys::aggregate_id.eq(k.aggregate_id),
                account_idempotency_keys::sequence.eq(k.sequence),
                account_idempotency_keys::created_at.eq(created_at),
            )
        })
        .collect();
    storage::with_backend!(conn, |c| diesel::insert_into(
        account_idempotency_keys::table
    )
    .values(&values)
    .execute(c))
    .map(|_| ())
}
