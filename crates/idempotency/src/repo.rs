//! The stored first answers, by caller and key.

use diesel::prelude::*;
use storage::DbConnection;

use crate::schema::idempotency_keys;
use crate::{ANYONE, Answer, CallerKey, Key};

/// A key's record: the fingerprint of the request it came with and the answer it got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub fingerprint: String,
    pub answer: Answer,
}

/// A record as stored.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = idempotency_keys)]
struct Row {
    id: i64,
    caller: String,
    idempotency_key: String,
    fingerprint: String,
    status: i64,
    location: Option<String>,
    body: String,
    created_at: String,
}

impl Row {
    /// Whether this record has expired for `want`: made before its TTL, unless it answers by
    /// reference (the ledger's) for this very request and is within
    /// [`CallerKey::same_request_since`].
    fn expired_for(&self, want: &CallerKey) -> bool {
        if self.created_at >= want.not_before {
            return false;
        }
        let same_request =
            self.status == i64::from(Answer::BY_REFERENCE) && want.key.matches(&self.fingerprint);
        !(same_request && self.created_at >= want.same_request_since)
    }

    fn stored(self) -> Stored {
        Stored {
            fingerprint: self.fingerprint,
            answer: Answer {
                status: u16::try_from(self.status).unwrap_or(500),
                location: self.location,
                body: self.body,
            },
        }
    }
}

/// The record of a caller's key, unless it has expired (made before the key's `not_before`,
/// with the ledger's exception: [`CallerKey::same_request_since`]); such an expired record is
/// deleted, so the key can be used afresh.
pub fn find(conn: &mut DbConnection, key: &CallerKey) -> QueryResult<Option<Stored>> {
    let of_key = idempotency_keys::table
        .filter(idempotency_keys::caller.eq(&key.caller))
        .filter(idempotency_keys::idempotency_key.eq(key.key.key()));
    let row: Option<Row> = of_key.select(Row::as_select()).first(conn).optional()?;
    match row {
        Some(row) if row.expired_for(key) => {
            diesel::delete(of_key).execute(conn)?;
            Ok(None)
        }
        Some(row) => Ok(Some(row.stored())),
        None => Ok(None),
    }
}

/// [`find`] for many keys in one query: the record of each of `keys`, in order. A record of
/// [`ANYONE`] counts for every caller (one of the caller's own wins); expired records are
/// deleted, as [`find`] does.
pub fn find_many(conn: &mut DbConnection, keys: &[&CallerKey]) -> QueryResult<Vec<Option<Stored>>> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let raw: Vec<&str> = keys.iter().map(|k| k.key.key()).collect();
    let mut callers: Vec<&str> = keys.iter().map(|k| k.caller.as_str()).collect();
    callers.push(ANYONE);
    let rows: Vec<Row> = idempotency_keys::table
        .filter(idempotency_keys::idempotency_key.eq_any(&raw))
        .filter(idempotency_keys::caller.eq_any(&callers))
        .select(Row::as_select())
        .load(conn)?;
    let mut expired = Vec::new();
    let found = keys
        .iter()
        .map(|want| {
            let of = |caller: &str| {
                rows.iter()
                    .find(|r| r.caller == caller && r.idempotency_key == want.key.key())
            };
            let row = of(&want.caller).or_else(|| of(ANYONE))?;
            if row.expired_for(want) {
                expired.push(row.id);
                return None;
            }
            Some(row.clone().stored())
        })
        .collect();
    if !expired.is_empty() {
        diesel::delete(idempotency_keys::table.filter(idempotency_keys::id.eq_any(&expired)))
            .execute(conn)?;
    }
    Ok(found)
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
    record_many(conn, &[(caller, key, answer)], created_at)
}

/// [`record`] for many keys in one statement: each `(caller, key, answer)`.
pub fn record_many(
    conn: &mut DbConnection,
    keys: &[(&str, &Key, &Answer)],
    created_at: &str,
) -> QueryResult<()> {
    if keys.is_empty() {
        return Ok(());
    }
    let values: Vec<_> = keys
        .iter()
        .map(|(caller, key, answer)| {
            (
                idempotency_keys::caller.eq(*caller),
                idempotency_keys::idempotency_key.eq(key.key()),
                idempotency_keys::fingerprint.eq(key.fingerprint()),
                idempotency_keys::status.eq(i64::from(answer.status)),
                idempotency_keys::location.eq(answer.location.as_deref()),
                idempotency_keys::body.eq(&answer.body),
                idempotency_keys::created_at.eq(created_at),
            )
        })
        .collect();
    storage::with_backend!(conn, |c| diesel::insert_into(idempotency_keys::table)
        .values(&values)
        .execute(c))
    .map(|_| ())
}

/// Deletes the records made before `not_before`, but those that answer by reference (the
/// ledger's) only when made before `same_request_since`; returns how many.
pub fn prune(
    conn: &mut DbConnection,
    not_before: &str,
    same_request_since: &str,
) -> QueryResult<usize> {
    let made = idempotency_keys::created_at;
    let answered = idempotency_keys::status.ne(i64::from(Answer::BY_REFERENCE));
    diesel::delete(
        idempotency_keys::table.filter(
            made.lt(same_request_since)
                .or(made.lt(not_before).and(answered)),
        ),
    )
    .execute(conn)
}

/// How many records are kept.
pub fn count(conn: &mut DbConnection) -> QueryResult<i64> {
    idempotency_keys::table.count().get_result(conn)
}
