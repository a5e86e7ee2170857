//! Idempotency keys and the events they produced.

use crate::Error;
use crate::schema::account_idempotency_keys;
use diesel::prelude::*;
use std::collections::HashMap;
use storage::DbConnection;

/// What an idempotency key was recorded with: the request's fingerprint and the event it
/// produced.
#[derive(Debug, Clone, PartialEq, Eq, Queryable)]
pub struct KeyRecord {
    pub fingerprint: String,
    pub aggregate_id: String,
    pub sequence: i64,
}

/// The records of those of `keys` that were used before.
pub fn find_keys(
    conn: &mut DbConnection,
    keys: &[&str],
) -> Result<HashMap<String, KeyRecord>, Error> {
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    let rows: Vec<(String, KeyRecord)> = account_idempotency_keys::table
        .filter(account_idempotency_keys::idempotency_key.eq_any(keys))
        .select((
            account_idempotency_keys::idempotency_key,
            (
                account_idempotency_keys::fingerprint,
                account_idempotency_keys::aggregate_id,
                account_idempotency_keys::sequence,
            ),
        ))
        .load(conn)?;
    Ok(rows.into_iter().collect())
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
