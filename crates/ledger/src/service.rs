//! The use cases: each write runs in one transaction, retried when the database reports lock
//! contention, so the event insert and the projection update happen both or neither and a
//! client never sees a failure caused only by concurrency.

use std::time::Duration;

use diesel::Connection;
use pagination::Page;
use storage::DbConnection;

use crate::fold::{apply, decide};
use crate::{
    Account, AccountState, AppendEvent, Change, Error, Event, EventType, Fact, IdempotencyKey,
    OpenAccount, is_valid_account_id, repo,
};

/// How many times a transaction is tried when the database reports contention. SQLite already
/// waits up to `busy_timeout` (5 s) inside each attempt.
pub const MAX_ATTEMPTS: u32 = 12;

/// The event a write produced, or (`replayed`) the event an earlier request with the same
/// `Idempotency-Key` and body produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub event: Event,
    pub replayed: bool,
}

/// Why a transaction ended early.
enum TxError {
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

/// Lock contention or a serialization failure: the transaction did nothing and may be retried.
pub fn is_transient(e: &diesel::result::Error) -> bool {
    use diesel::result::{DatabaseErrorKind as Kind, Error as E};
    match e {
        E::DatabaseError(Kind::SerializationFailure, _) => true,
        E::DatabaseError(_, info) => {
            let m = info.message().to_ascii_lowercase();
            m.contains("database is locked")
                || m.contains("database table is locked")
                || m.contains("database is busy")
                || m.contains("deadlock detected")
                || m.contains("could not serialize")
        }
        E::RollbackErrorOnCommit { commit_error, .. } => is_transient(commit_error),
        _ => false,
    }
}

/// Runs `attempt` until it succeeds, fails for a reason other than contention, or
/// [`MAX_ATTEMPTS`] is reached (then [`Error::Busy`], a 503).
fn with_retries(
    conn: &mut DbConnection,
    mut attempt: impl FnMut(&mut DbConnection) -> Result<Recorded, TxError>,
) -> Result<Recorded, Error> {
    let mut last = String::new();
    for n in 0..MAX_ATTEMPTS {
        match attempt(conn) {
            Ok(r) => return Ok(r),
            Err(TxError::Replay(event)) => {
                return Ok(Recorded {
                    event: *event,
                    replayed: true,
                });
            }
            Err(TxError::Fail(Error::Storage(e))) if is_transient(&e) => last = e.to_string(),
            Err(TxError::KeyRace(e)) => last = e.to_string(),
            Err(TxError::Fail(e)) => return Err(e),
        }
        backoff(n);
    }
    Err(Error::Busy { last })
}

/// Exponential backoff with jitter, 1 ms doubling up to 64 ms.
fn backoff(attempt: u32) {
    use std::hash::{BuildHasher, Hasher};
    let cap = 1u64 << attempt.min(6);
    let jitter = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
        % (cap * 1000);
    std::thread::sleep(Duration::from_micros(cap * 500 + jitter / 2));
}

fn key_error(e: diesel::result::Error) -> TxError {
    if storage::is_unique_violation(&e) {
        TxError::KeyRace(e)
    } else {
        TxError::Fail(Error::Storage(e))
    }
}

/// The event an idempotency key produced, when the key was used with this same request;
/// `IdempotencyKeyReused` when it was used with another one.
fn earlier(conn: &mut DbConnection, key: &IdempotencyKey) -> Result<Option<Event>, Error> {
    let Some((fingerprint, aggregate_id, sequence)) = repo::find_key(conn, &key.key)? else {
        return Ok(None);
    };
    if fingerprint != key.fingerprint {
        return Err(Error::IdempotencyKeyReused);
    }
    repo::get_event(conn, &aggregate_id, sequence)?
        .map(Some)
        .ok_or(Error::Corrupt {
            aggregate_id,
            sequence,
            reason: "the event of an idempotency key is missing".into(),
        })
}

/// Opens an account: the projection row and its `AccountOpened` event (sequence 1), both or
/// neither. An existing id is `AccountExists` and nothing is written.
pub fn open_account(
    conn: &mut DbConnection,
    input: &OpenAccount,
    key: Option<&IdempotencyKey>,
) -> Result<Recorded, Error> {
    let id = input.account_id.as_str();
    with_retries(conn, |conn| {
        if let Some(key) = key
            && let Some(event) = earlier(conn, key)?
        {
            return Err(TxError::Replay(Box::new(event)));
        }
        let outcome = conn.transaction::<_, TxError, _>(|c| {
            let now = storage::timestamp::now_sql();
            let change = Change::Opened {
                owner: input.owner.clone(),
            };
            let state = apply(
                AccountState::default(),
                &Fact {
                    sequence: 1,
                    occurred_at: now.clone(),
                    change,
                },
            );
            // The first statement writes, so on SQLite it waits for the write lock.
            repo::insert_account(c, id, &state)?;
            let mut payload = serde_json::Map::new();
            payload.insert("owner".into(), input.owner.clone().into());
            let event = repo::insert_event(c, id, EventType::AccountOpened, &payload, 1, &now)?;
            if let Some(key) = key {
                repo::insert_key(c, &key.key, &key.fingerprint, id, 1, &now).map_err(key_error)?;
            }
            Ok(Recorded {
                event,
                replayed: false,
            })
        });
        match outcome {
            // A concurrent request with the same key may have opened it: answer as it did.
            Err(TxError::Fail(Error::AccountExists { id })) => match key {
                Some(key) => match earlier(conn, key)? {
                    Some(event) => Err(TxError::Replay(Box::new(event))),
                    None => Err(Error::AccountExists { id }.into()),
                },
                None => Err(Error::AccountExists { id }.into()),
            },
            other => other,
        }
    })
}

/// Appends one event to an account, in one transaction whose first statement bumps the
/// projection's counter (the write lock on SQLite, the row lock on PostgreSQL). The command is
/// then checked against the state under that lock; the event and the folded projection are
/// written together, or nothing is (any `Err` rolls back, the bump included).
pub fn append(
    conn: &mut DbConnection,
    account_id: &str,
    command: &AppendEvent,
    key: Option<&IdempotencyKey>,
) -> Result<Recorded, Error> {
    let not_found = || Error::AccountNotFound {
        id: account_id.to_owned(),
    };
    if !is_valid_account_id(account_id) {
        return Err(not_found());
    }
    with_retries(conn, |conn| {
        conn.transaction::<_, TxError, _>(|c| {
            let current = repo::bump_sequence(c, account_id)?.ok_or_else(not_found)?;
            let sequence = current.last_sequence;
            let state = AccountState {
                last_sequence: sequence - 1,
                ..current
            };
            if let Some(key) = key
                && let Some(event) = earlier(c, key)?
            {
                return Err(TxError::Replay(Box::new(event)));
            }
            decide(account_id, &state, command)?;
            let now = storage::timestamp::now_sql();
            let event = repo::insert_event(
                c,
                account_id,
                command.change.event_type(),
                &command.payload,
                sequence,
                &now,
            )?;
            let next = apply(
                state,
                &Fact {
                    sequence,
                    occurred_at: now.clone(),
                    change: command.change.clone(),
                },
            );
            repo::save_projection(c, account_id, &next)?;
            if let Some(key) = key {
                repo::insert_key(c, &key.key, &key.fingerprint, account_id, sequence, &now)
                    .map_err(key_error)?;
            }
            Ok(Recorded {
                event,
                replayed: false,
            })
        })
    })
}

/// The projection of one account (an id of the wrong form cannot exist: not found).
pub fn get_account(conn: &mut DbConnection, account_id: &str) -> Result<Account, Error> {
    let found = if is_valid_account_id(account_id) {
        repo::get_account(conn, account_id)?
    } else {
        None
    };
    found.ok_or_else(|| Error::AccountNotFound {
        id: account_id.to_owned(),
    })
}

pub fn list_accounts(conn: &mut DbConnection, page: Page) -> Result<(Vec<Account>, i64), Error> {
    repo::list_accounts(conn, page)
}

/// `after_sequence` (≥ 0, default 0) and `limit` (1 ..= 1,000, default 1,000) of an event list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventsPage {
    pub after_sequence: i64,
    pub limit: i64,
}

impl EventsPage {
    pub fn parse(after_sequence: Option<&str>, limit: Option<&str>) -> Result<Self, Error> {
        use problem_details::{FieldError, FieldErrorCode};
        let mut errors = Vec::new();
        let after = match pagination::parse_int("after_sequence", after_sequence) {
            Ok(Some(a)) if a < 0 => {
                errors.push(FieldError::new(
                    "after_sequence",
                    FieldErrorCode::OutOfRange,
                    "after_sequence must be at least 0",
                ));
                0
            }
            Ok(a) => a.unwrap_or(0),
            Err(e) => {
                errors.push(e);
                0
            }
        };
        let max = crate::EVENTS_LIMIT_MAX;
        let limit = match pagination::parse_int("limit", limit) {
            Ok(Some(l)) if !(1..=max).contains(&l) => {
                errors.push(FieldError::new(
                    "limit",
                    FieldErrorCode::OutOfRange,
                    format!("limit must be between 1 and {max}"),
                ));
                max
            }
            Ok(l) => l.unwrap_or(max),
            Err(e) => {
                errors.push(e);
                max
            }
        };
        if errors.is_empty() {
            Ok(EventsPage {
                after_sequence: after,
                limit,
            })
        } else {
            Err(Error::Validation(errors))
        }
    }
}

impl Default for EventsPage {
    fn default() -> Self {
        EventsPage {
            after_sequence: 0,
            limit: crate::EVENTS_LIMIT_MAX,
        }
    }
}

/// One page of an account's events (sequence ascending) and the count of all its events. An
/// unknown account simply has none.
pub fn list_events(
    conn: &mut DbConnection,
    account_id: &str,
    page: EventsPage,
) -> Result<(Vec<Event>, i64), Error> {
    if !is_valid_account_id(account_id) {
        return Ok((Vec::new(), 0));
    }
    let items = repo::events(conn, account_id, page.after_sequence, None, page.limit)?;
    let total = repo::count_events(conn, account_id)?;
    Ok((items, total))
}
