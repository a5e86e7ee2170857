//! The stored first answers, by caller and key.

use diesel::prelude::*;
use storage::DbConnection;

use crate::schema::idempotency_keys;
use crate::{Answer, Key};

/// A key's record: the fingerprint of the request it came with and the answer it got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub fingerprint: String,
    pub answer: Answer,
}

type Row = (String, i64, Option<String>, String, String);

/// The record of `caller`'s `key`, unless it was made before `not_before` (RFC 3339 text);
/// such an expired record is deleted, so the key can be used afresh.
pub fn find(
    conn: &mut DbConnection,
    caller: &str,
    key: &str,
    not_before: &str,
) -> QueryResult<Option<Stored>> {
    let of_key = idempotency_keys::table
        .filter(idempotency_keys::caller.eq(caller))
        .filter(idempotency_keys::idempotency_key.eq(key));
    let row: Option<Row> = of_key
        .select((
            idempotency_keys::fingerprint,
            idempotency_keys::status,
            idempotency_keys::location,
            idempotency_keys::body,
            idempotency_keys::created_at,
        ))
        .first(conn)
        .optional()?;
    match row {
        Some((_, _, _, _, created_at)) if created_at.as_str() < not_before => {
            diesel::delete(of_key).execute(conn)?;
            Ok(None)
        }
        Some((fingerprint, status, location, body, _)) => Ok(Some(Stored {
            fingerprint,
            answer: Answer {
                status: u16::try_from(status).unwrap_or(500),
                location,
                body,
            },
        })),
        None => Ok(None),
    }
}

/// Records `caller`'s `key` with its answer. A unique violation means another request with
/// this key committed first.
pub fn record(
    conn: &mut DbConnection,
    caller: &str,
    key: &Key,
    answer: &Answer,
    created_at: &str,
) -> QueryResult<()> {
    let values = (
        idempotency_keys::caller.eq(caller),
        idempotency_keys::idempotency_key.eq(key.key()),
        idempotency_keys::fingerprint.eq(key.fingerprint()),
        idempotency_keys::status.eq(i64::from(answer.status)),
        idempotency_keys::location.eq(answer.location.as_deref()),
        idempotency_keys::body.eq(&answer.body),
        idempotency_keys::created_at.eq(created_at),
    );
    storage::with_backend!(conn, |c| diesel::insert_into(idempotency_keys::table)
        .values(values)
        .execute(c))
    .map(|_| ())
}

/// Deletes the records made before `not_before`; returns how many.
pub fn prune(conn: &mut DbConnection, not_before: &str) -> QueryResult<usize> {
    diesel::delete(idempotency_keys::table.filter(idempotency_keys::created_at.lt(not_before)))
        .execute(conn)
}

/// How many records are kept.
pub fn count(conn: &mut DbConnection) -> QueryResult<i64> {
    idempotency_keys::table.count().get_result(conn)
}
