//! The use cases: each write runs in one transaction, retried when the database reports lock
//! contention, so the event insert and the projection update happen both or neither and a
//! client never sees a failure caused only by concurrency.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::time::Duration;

use diesel::Connection;
use pagination::{Cursor, CursorPage, Page};
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
/// [`MAX_ATTEMPTS`] is reached (then [`Error::Busy`], a 503). A `Replay` ends it too; the
/// caller turns it into its answer.
fn with_retries<T>(mut attempt: impl FnMut() -> Result<T, TxError>) -> Result<T, TxError> {
    let mut last = String::new();
    for n in 0..MAX_ATTEMPTS {
        match attempt() {
            Err(TxError::Fail(Error::Storage(e))) if is_transient(&e) => last = e.to_string(),
            Err(TxError::KeyRace(e)) => last = e.to_string(),
            done => return done,
        }
        backoff(n);
    }
    Err(TxError::Fail(Error::Busy { last }))
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
    match repo::find_key(conn, &key.key)? {
        Some(record) => stored_replay(conn, key, &record).map(Some),
        None => Ok(None),
    }
}

/// The event `record` names, when `key` was recorded with this same request;
/// `IdempotencyKeyReused` when it was recorded with another one.
fn stored_replay(
    conn: &mut DbConnection,
    key: &IdempotencyKey,
    (fingerprint, aggregate_id, sequence): &repo::KeyRecord,
) -> Result<Event, Error> {
    if *fingerprint != key.fingerprint {
        return Err(Error::IdempotencyKeyReused);
    }
    repo::get_event(conn, aggregate_id, *sequence)?.ok_or_else(|| Error::Corrupt {
        aggregate_id: aggregate_id.clone(),
        sequence: *sequence,
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
    let outcome = with_retries(|| {
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
            let event = repo::insert_event(
                c,
                &repo::NewEvent {
                    aggregate_id: id,
                    event_type: EventType::AccountOpened,
                    payload: &payload,
                    sequence: 1,
                },
                &now,
            )?;
            if let Some(key) = key {
                repo::insert_keys(c, &[new_key(key, id, 1)], &now).map_err(key_error)?;
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
    });
    finish(outcome)
}

/// Group commit for appends ([`storage::GroupCommit`] running [`append_batch`]): one per
/// process, shared by every request. Appends to one account are serialized by its lock, so
/// without it a hot account gets one disk flush per event.
pub struct Appender(storage::GroupCommit<Append, Result<Recorded, Error>>);

impl Appender {
    pub fn new(store: storage::Store) -> Self {
        Appender(storage::GroupCommit::new(
            store,
            |conn, jobs| append_batch(conn, &jobs),
            |e| Err(Error::Store(e)),
        ))
    }

    /// Appends `job` in the next shared transaction; resolves once it has committed (or the
    /// command was refused).
    pub async fn append(&self, job: Append) -> Result<Recorded, Error> {
        self.0.submit(job).await
    }

    /// [`Appender::append`] for a plain thread.
    pub fn append_blocking(&self, job: Append) -> Result<Recorded, Error> {
        self.0.submit_blocking(job)
    }
}

/// One command of a batch: append `command` to `account_id`, optionally under an idempotency
/// key.
#[derive(Debug, Clone, PartialEq)]
pub struct Append {
    pub account_id: String,
    pub command: AppendEvent,
    pub key: Option<IdempotencyKey>,
}

/// Appends one event to an account: [`append_batch`] with a batch of one.
pub fn append(
    conn: &mut DbConnection,
    account_id: &str,
    command: &AppendEvent,
    key: Option<&IdempotencyKey>,
) -> Result<Recorded, Error> {
    let job = Append {
        account_id: account_id.to_owned(),
        command: command.clone(),
        key: key.cloned(),
    };
    let mut outcomes = append_batch(conn, &[job]);
    outcomes
        .pop()
        .unwrap_or_else(|| unreachable!("one outcome per command"))
}

/// Appends several commands in one transaction, in the order given; returns one outcome per
/// command, in that order. Each command is checked against the state the commands before it
/// left (so two withdrawals in one batch cannot both spend the same money), and one refused
/// command (404, 409, 422) writes nothing and does not affect the others. Everything accepted
/// commits together: one lock round, one multi-row event insert, one multi-row projection
/// upsert, one commit — which is what lets many concurrent appends share one disk flush.
///
/// If the batch fails for a reason that is not contention (a storage error), each command is
/// retried on its own so that one bad command cannot fail its neighbours.
pub fn append_batch<A: Borrow<Append>>(
    conn: &mut DbConnection,
    batch: &[A],
) -> Vec<Result<Recorded, Error>> {
    match with_retries(|| conn.transaction(|c| attempt_batch(c, batch))) {
        Ok(outcomes) => outcomes,
        Err(TxError::Fail(Error::Busy { last })) => batch
            .iter()
            .map(|_| Err(Error::Busy { last: last.clone() }))
            .collect(),
        Err(e) if batch.len() == 1 => vec![finish(Err(e))],
        Err(_) => batch
            .iter()
            .flat_map(|one| append_batch(conn, std::slice::from_ref(one)))
            .collect(),
    }
}

/// What a command of a batch comes to, before the batch's rows are written.
enum Plan {
    /// The `n`th new event of the batch.
    New(usize),
    /// Same key and request as the `n`th new event of this batch: the same answer.
    ReplayNew(usize),
    /// Same key and request as a stored event.
    ReplayStored(Box<Event>),
    Refused(Error),
}

fn attempt_batch<A: Borrow<Append>>(
    c: &mut DbConnection,
    batch: &[A],
) -> Result<Vec<Result<Recorded, Error>>, TxError> {
    let jobs: Vec<&Append> = batch.iter().map(Borrow::borrow).collect();
    let mut ids: Vec<&str> = jobs
        .iter()
        .map(|j| j.account_id.as_str())
        .filter(|id| is_valid_account_id(id))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut states = repo::lock_accounts(c, &ids)?;
    let keys: Vec<&str> = jobs
        .iter()
        .filter_map(|j| j.key.as_ref().map(|k| k.key.as_str()))
        .collect();
    let stored_keys = repo::find_keys(c, &keys)?;
    let now = storage::timestamp::now_sql();

    let mut new_events: Vec<repo::NewEvent> = Vec::with_capacity(jobs.len());
    let mut new_keys: Vec<repo::NewKey> = Vec::new();
    let mut plans: Vec<Plan> = Vec::with_capacity(jobs.len());
    for job in &jobs {
        let plan = match states.get_mut(&job.account_id) {
            None => Plan::Refused(Error::AccountNotFound {
                id: job.account_id.clone(),
            }),
            Some(state) => plan_one(
                c,
                job,
                state,
                &stored_keys,
                &mut new_keys,
                &mut new_events,
                &now,
            )?,
        };
        plans.push(plan);
    }

    let stored = if new_events.is_empty() {
        Vec::new()
    } else {
        repo::insert_events(c, &new_events, &now)?
    };
    let mut written: Vec<&str> = new_events.iter().map(|e| e.aggregate_id).collect();
    written.sort_unstable();
    written.dedup();
    let folded: Vec<(&str, &AccountState)> = written.iter().map(|id| (*id, &states[*id])).collect();
    repo::save_projections(c, &folded)?;
    repo::insert_keys(c, &new_keys, &now).map_err(key_error)?;

    Ok(plans
        .into_iter()
        .map(|plan| match plan {
            Plan::New(n) => Ok(Recorded {
                event: stored[n].clone(),
                replayed: false,
            }),
            Plan::ReplayNew(n) => Ok(Recorded {
                event: stored[n].clone(),
                replayed: true,
            }),
            Plan::ReplayStored(event) => Ok(Recorded {
                event: *event,
                replayed: true,
            }),
            Plan::Refused(e) => Err(e),
        })
        .collect())
}

/// Checks one command of a batch against its account's `state` (already folded over the
/// batch's earlier commands) and, when accepted, folds it in and queues its event and key.
fn plan_one<'a>(
    c: &mut DbConnection,
    job: &'a Append,
    state: &mut AccountState,
    stored_keys: &HashMap<String, repo::KeyRecord>,
    new_keys: &mut Vec<repo::NewKey<'a>>,
    new_events: &mut Vec<repo::NewEvent<'a>>,
    now: &str,
) -> Result<Plan, TxError> {
    if let Some(key) = &job.key {
        if let Some(earlier) = new_keys.iter().find(|k| k.key == key.key) {
            if earlier.fingerprint != key.fingerprint {
                return Ok(Plan::Refused(Error::IdempotencyKeyReused));
            }
            let n = new_events
                .iter()
                .position(|e| {
                    e.aggregate_id == earlier.aggregate_id && e.sequence == earlier.sequence
                })
                .unwrap_or_else(|| unreachable!("a batch key names one of the batch's events"));
            return Ok(Plan::ReplayNew(n));
        }
        if let Some(record) = stored_keys.get(&key.key) {
            return match stored_replay(c, key, record) {
                Ok(event) => Ok(Plan::ReplayStored(Box::new(event))),
                Err(Error::IdempotencyKeyReused) => Ok(Plan::Refused(Error::IdempotencyKeyReused)),
                Err(e) => Err(e.into()),
            };
        }
    }
    if let Err(e) = decide(&job.account_id, state, &job.command) {
        return Ok(Plan::Refused(e));
    }
    let sequence = state.last_sequence + 1;
    *state = apply(
        std::mem::take(state),
        &Fact {
            sequence,
            occurred_at: now.to_owned(),
            change: job.command.change.clone(),
        },
    );
    new_events.push(repo::NewEvent {
        aggregate_id: &job.account_id,
        event_type: job.command.change.event_type(),
        payload: &job.command.payload,
        sequence,
    });
    if let Some(key) = &job.key {
        new_keys.push(new_key(key, &job.account_id, sequence));
    }
    Ok(Plan::New(new_events.len() - 1))
}

fn new_key<'a>(key: &'a IdempotencyKey, aggregate_id: &'a str, sequence: i64) -> repo::NewKey<'a> {
    repo::NewKey {
        key: &key.key,
        fingerprint: &key.fingerprint,
        aggregate_id,
        sequence,
    }
}

/// The answer of a single-command write: a replay is the earlier event.
fn finish(outcome: Result<Recorded, TxError>) -> Result<Recorded, Error> {
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

/// One page of an account's events (sequence ascending, at most `limit` and about
/// [`crate::model::EVENTS_PAGE_MAX_BYTES`]) and the count of all its events. An unknown account
/// simply has none. `next_cursor` is the `after_sequence` of the next page.
pub fn list_events(
    conn: &mut DbConnection,
    account_id: &str,
    page: EventsPage,
) -> Result<(CursorPage<Event>, i64), Error> {
    let cursor = Cursor {
        limit: page.limit,
        after: Some(page.after_sequence),
    };
    if !is_valid_account_id(account_id) {
        return Ok((CursorPage::from_rows(Vec::new(), cursor, |e| e.sequence), 0));
    }
    let rows = repo::events(conn, account_id, page.after_sequence, None, page.limit + 1)?;
    let items = CursorPage::from_rows(rows, cursor, |e: &Event| e.sequence).within_bytes(
        crate::model::EVENTS_PAGE_MAX_BYTES,
        Event::encoded_len,
        |e| e.sequence,
    );
    let total = repo::count_events(conn, account_id)?;
    Ok((items, total))
}
