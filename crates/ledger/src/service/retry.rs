//! Transactions retried while the database reports contention, and the answers of
//! idempotency keys seen before.

use std::time::Duration;

use storage::DbConnection;

use crate::{CallerKey, Error, Event, repo};

use super::Recorded;

/// How many times a transaction is tried when the database reports contention. SQLite already
/// waits up to `busy_timeout` (5 s) inside each attempt.
pub const MAX_ATTEMPTS: u32 = 12;

/// Why a transaction ended early.
pub(super) enum TxError {
    Fail(Error),
    /// Another request with the same idempotency key committed first: retry, then replay.
    KeyRace(diesel::result::Error),
    /// The idempotency key was seen before with this very request: answer as then.
    Replay(Box<Event>),
}

impl From<Error> for TxError {
    fn from(e: Error) -> Self {
        TxError::Fail(e)
    }
}

impl From<diesel::result::Error> for TxError {
    fn from(e: diesel::result::Error) -> Self {
        TxError::Fail(Error::Storage(e))
    }
}

/// Lock contention (SQLite's busy lock) or PostgreSQL's deadlock and serialization failures
/// (`storage::Fault::is_conflict`): the transaction did nothing and may be retried.
pub fn is_transient(e: &diesel::result::Error) -> bool {
    use diesel::result::Error as E;
    match e {
        E::DatabaseError(_, info) if sqlite_busy(info.message()) => true,
        E::RollbackErrorOnCommit { commit_error, .. } => is_transient(commit_error),
        _ => storage::Fault::is_conflict(e),
    }
}

fn sqlite_busy(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("database is locked")
        || m.contains("database table is locked")
        || m.contains("database is busy")
}

/// Runs `attempt` until it succeeds, fails for a reason other than contention, or
/// [`MAX_ATTEMPTS`] is reached (then [`Error::Busy`], a 503). A `Replay` ends it too; the
/// caller turns it into its answer.
/// Transactions run again after contention, since the process started (`ledger_retries_total`).
pub static RETRIES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub(super) fn with_retries<T>(
    mut attempt: impl FnMut() -> Result<T, TxError>,
) -> Result<T, TxError> {
    let mut last = String::new();
    for n in 0..MAX_ATTEMPTS {
        match attempt() {
            Err(TxError::Fail(Error::Storage(e))) if is_transient(&e) => last = e.to_string(),
            Err(TxError::KeyRace(e)) => last = e.to_string(),
            done => return done,
        }
        RETRIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        backoff(n);
    }
    Err(TxError::Fail(Error::Busy { last }))
}

/// Exponential backoff with jitter, 1 ms doubling up to 64 ms.
pub(super) fn backoff(attempt: u32) {
    use std::hash::{BuildHasher, Hasher};
    let cap = 1u64 << attempt.min(6);
    let jitter = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
        % (cap * 1000);
    std::thread::sleep(Duration::from_micros(cap * 500 + jitter / 2));
}

pub(super) fn key_error(e: diesel::result::Error) -> TxError {
    if storage::is_unique_violation(&e) {
        TxError::KeyRace(e)
    } else {
        TxError::Fail(Error::Storage(e))
    }
}

/// The event an idempotency key produced, when the key was used with this same request;
/// `IdempotencyKeyReused` when it was used with another one.
pub(super) fn earlier(conn: &mut DbConnection, key: &CallerKey) -> Result<Option<Event>, Error> {
    match repo::find_key(conn, key)? {
        Some(record) => stored_replay(conn, &record).map(Some),
        None => Ok(None),
    }
}

/// The event `record` names, when the key was recorded with this same request;
/// `IdempotencyKeyReused` when it was recorded with another one.
pub(super) fn stored_replay(
    conn: &mut DbConnection,
    record: &repo::KeyRecord,
) -> Result<Event, Error> {
    let repo::KeyRecord::Made {
        aggregate_id,
        sequence,
    } = record
    else {
        return Err(Error::IdempotencyKeyReused);
    };
    repo::get_event(conn, aggregate_id, *sequence)?.ok_or_else(|| Error::Corrupt {
        aggregate_id: aggregate_id.clone(),
        sequence: *sequence,
        reason: "the event of an idempotency key is missing".into(),
    })
}

/// What a batch comes to in one transaction: an outcome per job, in the batch's order.
type BatchOutcomes = Result<Vec<Result<Recorded, Error>>, TxError>;

/// Runs `attempt` over `batch` in one transaction, retried while the database reports
/// contention; the outcomes in the order of the batch. A batch that fails for another reason (a
/// storage error) is run again one job per transaction, so that one bad job cannot fail its
/// neighbours.
pub(super) fn in_one_transaction<J>(
    conn: &mut DbConnection,
    batch: &[J],
    attempt: fn(&mut DbConnection, &[J]) -> BatchOutcomes,
) -> Vec<Result<Recorded, Error>> {
    match with_retries(|| storage::savepoint(conn, |c| attempt(c, batch))) {
        Ok(outcomes) => outcomes,
        Err(TxError::Fail(Error::Busy { last })) => batch
            .iter()
            .map(|_| Err(Error::Busy { last: last.clone() }))
            .collect(),
        Err(e) if batch.len() == 1 => vec![finish(Err(e))],
        Err(_) => batch
            .iter()
            .flat_map(|one| in_one_transaction(conn, std::slice::from_ref(one), attempt))
            .collect(),
    }
}

/// The answer of a single-command write: a replay is the earlier event.
pub(super) fn finish(outcome: Result<Recorded, TxError>) -> Result<Recorded, Error> {
    match outcome {
        Ok(r) => Ok(r),
        Err(TxError::Replay(event)) => Ok(Recorded {
            event: *event,
            replayed: true,
        }),
        Err(TxError::Fail(e)) => Err(e),
        Err(TxError::KeyRace(e)) => Err(Error::Storage(e)),
    }
}

#[cfg(test)]
mod tests {
    use diesel::result::{DatabaseErrorKind as Kind, Error as E};
    use storage::fault::database_error as db;

    use super::is_transient;

    #[test]
    fn contention_is_transient_and_nothing_else() {
        assert!(is_transient(&db(Kind::Unknown, "database is locked")));
        assert!(is_transient(&db(Kind::Unknown, "deadlock detected")));
        assert!(is_transient(&db(Kind::SerializationFailure, "x")));
        assert!(is_transient(&E::RollbackErrorOnCommit {
            rollback_error: Box::new(E::BrokenTransactionManager),
            commit_error: Box::new(db(Kind::Unknown, "could not serialize access")),
        }));
        assert!(!is_transient(&db(
            Kind::Unknown,
            "canceling statement due to lock timeout"
        )));
        assert!(!is_transient(&db(Kind::UniqueViolation, "duplicate key")));
        assert!(!is_transient(&E::NotFound));
    }
}
