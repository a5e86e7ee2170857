//! Repository functions over `&mut DbConnection`, the same Diesel code on SQLite and
//! PostgreSQL. They never open transactions: [`crate::service`] does. Events are only ever
//! inserted; nothing here updates or deletes one.

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

/// The transaction's first statement for an append: bumps the counter and returns the state
/// with `last_sequence` already the new event's sequence. On SQLite it takes the database's
/// write lock (waiting up to `busy_timeout`), on PostgreSQL the row's lock, so appends to one
/// account are serialized from here to commit. `None` when the account does not exist.
pub fn bump_sequence(conn: &mut DbConnection, id: &str) -> Result<Option<AccountState>, Error> {
    let row = diesel::update(accounts::table.find(id))
        .set(accounts::last_sequence.eq(accounts::last_sequence + 1))
        .returning(ACCOUNT_COLUMNS)
        .get_result::<AccountRow>(conn)
        .optional()?;
    Ok(row.map(|r| to_account(r).state))
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

/// Writes the folded state to the projection row.
pub fn save_projection(
    conn: &mut DbConnection,
    id: &str,
    state: &AccountState,
) -> Result<(), Error> {
    diesel::update(accounts::table.find(id))
        .set((
            accounts::owner.eq(&state.owner),
            accounts::balance_cents.eq(state.balance_cents),
            accounts::is_open.eq(state.is_open),
            accounts::last_sequence.eq(state.last_sequence),
            accounts::updated_at.eq(&state.updated_at),
        ))
        .execute(conn)?;
    Ok(())
}

/// Appends one event (the unique `(aggregate_id, sequence)` pair is the last line of defence).
pub fn insert_event(
    conn: &mut DbConnection,
    aggregate_id: &str,
    event_type: EventType,
    payload: &Map<String, Value>,
    sequence: i64,
    occurred_at: &str,
) -> Result<Event, Error> {
    let text = Value::Object(payload.clone()).to_string();
    let row = diesel::insert_into(account_events::table)
        .values((
            account_events::aggregate_id.eq(aggregate_id),
            account_events::aggregate_type.eq(AGGREGATE_TYPE),
            account_events::event_type.eq(event_type.as_str()),
            account_events::payload.eq(&text),
            account_events::sequence.eq(sequence),
            account_events::occurred_at.eq(occurred_at),
        ))
        .returning(EVENT_COLUMNS)
        .get_result::<EventRow>(conn)?;
    to_event(row)
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
pub fn find_key(
    conn: &mut DbConnection,
    key: &str,
) -> Result<Option<(String, String, i64)>, Error> {
    Ok(account_idempotency_keys::table
        .find(key)
        .select((
            account_idempotency_keys::fingerprint,
            account_idempotency_keys::aggregate_id,
            account_idempotency_keys::sequence,
        ))
        .first(conn)
        .optional()?)
}

/// Records an idempotency key with the event it produced. A unique violation means another
/// request with this key committed first; the caller retries and then finds it.
pub fn insert_key(
    conn: &mut DbConnection,
    key: &str,
    fingerprint: &str,
    aggregate_id: &str,
    sequence: i64,
    created_at: &str,
) -> Result<(), diesel::result::Error> {
    diesel::insert_into(account_idempotency_keys::table)
        .values((
            account_idempotency_keys::idempotency_key.eq(key),
            account_idempotency_keys::fingerprint.eq(fingerprint),
            account_idempotency_keys::aggregate_id.eq(aggregate_id),
            account_idempotency_keys::sequence.eq(sequence),
            account_idempotency_keys::created_at.eq(created_at),
        ))
        .execute(conn)
        .map(|_| ())
}
