//! Idempotency keys and the events they produced, in the shared `idempotency_keys` table
//! (crates/idempotency): one mechanism for every create. A ledger record answers by reference
//! — the account and sequence of the event the key made, which never changes — so a replay
//! serves the event as stored and a batch records its keys without rendering answers.

use idempotency::{Answer, CallerKey};
use serde::{Deserialize, Serialize};
use storage::DbConnection;

use crate::Error;

/// What an idempotency key was recorded with, measured against the request at hand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyRecord {
    /// This very request made the event at `sequence` of `aggregate_id`.
    Made { aggregate_id: String, sequence: i64 },
    /// The key came with another request (another body, or another route's create).
    Other,
}

/// The body of a ledger record: the event a key made (migration 12 writes the same for the keys
/// it carried over).
#[derive(Serialize, Deserialize)]
struct Reference<'a> {
    aggregate_id: std::borrow::Cow<'a, str>,
    sequence: i64,
}

/// The records of `keys`, in order (`None` for a key not used before, or expired).
pub fn find_keys(
    conn: &mut DbConnection,
    keys: &[&CallerKey],
) -> Result<Vec<Option<KeyRecord>>, Error> {
    idempotency::repo::find_many(conn, keys)?
        .into_iter()
        .zip(keys)
        .map(|(stored, want)| stored.map(|s| record_of(s, want)).transpose())
        .collect()
}

pub fn find_key(conn: &mut DbConnection, key: &CallerKey) -> Result<Option<KeyRecord>, Error> {
    Ok(find_keys(conn, &[key])?.pop().flatten())
}

fn record_of(stored: idempotency::repo::Stored, want: &CallerKey) -> Result<KeyRecord, Error> {
    if !want.key.matches(&stored.fingerprint) {
        return Ok(KeyRecord::Other);
    }
    // Same fingerprint, so the same ledger route: the record is a reference.
    let reference: Reference = serde_json::from_str(&stored.answer.body).map_err(|e| {
        corrupt(format!(
            "an idempotency record names no event ({e}): {}",
            stored.answer.body
        ))
    })?;
    Ok(KeyRecord::Made {
        aggregate_id: reference.aggregate_id.into_owned(),
        sequence: reference.sequence,
    })
}

fn corrupt(reason: String) -> Error {
    Error::Corrupt {
        aggregate_id: String::new(),
        sequence: 0,
        reason,
    }
}

/// A key to record with the event it produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewKey<'a> {
    pub key: &'a CallerKey,
    pub aggregate_id: &'a str,
    pub sequence: i64,
}

/// Records idempotency keys with the events they produced. A unique violation means another
/// request with one of these keys committed first; the caller retries and then finds it.
pub fn insert_keys(conn: &mut DbConnection, keys: &[NewKey<'_>]) -> diesel::QueryResult<()> {
    let answers: Vec<Answer> = keys
        .iter()
        .map(|k| {
            Answer::by_reference(
                serde_json::to_string(&Reference {
                    aggregate_id: k.aggregate_id.into(),
                    sequence: k.sequence,
                })
                // A string and a number: serializing them cannot fail.
                .unwrap_or_default(),
            )
        })
        .collect();
    let rows: Vec<_> = keys
        .iter()
        .zip(&answers)
        .map(|(k, answer)| (k.key.caller.as_str(), &k.key.key, answer))
        .collect();
    idempotency::repo::record_many(conn, &rows, &storage::timestamp::now_rfc3339())
}
