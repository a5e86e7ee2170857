//! Opening an account: one, or a batch in one transaction (the group commit's unit).

use std::borrow::Borrow;
use std::collections::HashSet;

use diesel::Connection;
use storage::DbConnection;

use crate::fold::apply;
use crate::{AccountState, CallerKey, Change, Error, Event, EventType, Fact, OpenAccount, repo};

use super::Recorded;
use super::append::new_key;
use super::retry::{
    TxError, earlier, finish, in_one_transaction, key_error, stored_replay, with_retries,
};

/// One account to open in a batch ([`super::Appender::open`]): `input`, optionally under a
/// caller's idempotency key, recording `audit` with it when given.
#[derive(Debug, Clone, PartialEq)]
pub struct Open {
    pub input: OpenAccount,
    pub key: Option<CallerKey>,
    pub audit: Option<audit::Action>,
}

/// Opens several accounts in one transaction; one outcome per job, in the order given, each
/// as [`open_account`] would answer it alone: an id opened before (or earlier in the batch)
/// is `AccountExists`, a key seen before replays (or is `IdempotencyKeyReused`). Accepted
/// jobs write together: one multi-row insert of the accounts, one of their `AccountOpened`
/// events, one commit. On PostgreSQL each open alone is five round trips and a statement
/// trigger; a batch shares them (`POST /accounts` ran at 0.55x of `POST /users` one at a time).
///
/// A batch that fails for a reason other than contention is run again job by job, so that
/// one bad job cannot fail its neighbours.
pub fn open_batch<O: Borrow<Open>>(
    conn: &mut DbConnection,
    batch: &[O],
) -> Vec<Result<Recorded, Error>> {
    in_one_transaction(conn, batch, attempt_opens::<O>)
}

/// What a job of a batch comes to before the accounts are written.
enum Plan {
    /// The `n`th account the batch tries to open.
    Fresh(usize),
    /// Same key and request as the `n`th fresh account of this batch: the same answer.
    SameAs(usize),
    Answered(Result<Recorded, Error>),
}

fn attempt_opens<O: Borrow<Open>>(
    c: &mut DbConnection,
    batch: &[O],
) -> Result<Vec<Result<Recorded, Error>>, TxError> {
    let jobs: Vec<&Open> = batch.iter().map(Borrow::borrow).collect();
    let keys: Vec<&CallerKey> = jobs.iter().filter_map(|j| j.key.as_ref()).collect();
    let mut stored_keys = repo::find_keys(c, &keys)?.into_iter();
    let now = storage::timestamp::now_sql();

    let mut fresh: Vec<(&Open, AccountState)> = Vec::with_capacity(jobs.len());
    let mut plans = Vec::with_capacity(jobs.len());
    for job in &jobs {
        let stored_key = job.key.as_ref().and_then(|_| stored_keys.next().flatten());
        let same_key = |(other, _): &(&Open, AccountState)| {
            matches!((&job.key, &other.key), (Some(a), Some(b))
                if a.caller == b.caller && a.key.key() == b.key.key())
        };
        let plan = if let Some(n) = fresh.iter().position(same_key) {
            match fresh[n].0.key.as_ref().map(|k| k.key.fingerprint())
                == job.key.as_ref().map(|k| k.key.fingerprint())
            {
                true => Plan::SameAs(n),
                false => Plan::Answered(Err(Error::IdempotencyKeyReused)),
            }
        } else if let Some(record) = stored_key {
            Plan::Answered(replay(stored_replay(c, &record)))
        } else if fresh
            .iter()
            .any(|(other, _)| other.input.account_id == job.input.account_id)
        {
            let id = job.input.account_id.clone();
            Plan::Answered(Err(Error::AccountExists { id }))
        } else {
            fresh.push((job, opened(&job.input, &now)));
            Plan::Fresh(fresh.len() - 1)
        };
        plans.push(plan);
    }

    // In id order, as appends lock their accounts: two batches opening the same ids at once
    // (two writers, two servers) then wait for each other in one order, never in a circle.
    let mut rows: Vec<_> = fresh
        .iter()
        .map(|(job, state)| (job.input.account_id.as_str(), state, job.input.owner_id))
        .collect();
    rows.sort_unstable_by_key(|(id, _, _)| *id);
    let inserted: HashSet<String> = repo::insert_accounts(c, &rows)?.into_iter().collect();
    let payloads: Vec<serde_json::Map<String, serde_json::Value>> = fresh
        .iter()
        .map(|(job, _)| {
            let mut payload = serde_json::Map::new();
            payload.insert("owner".into(), job.input.owner.clone().into());
            payload
        })
        .collect();
    let new_events: Vec<repo::NewEvent> = fresh
        .iter()
        .zip(&payloads)
        .filter(|((job, _), _)| inserted.contains(&job.input.account_id))
        .map(|((job, _), payload)| repo::NewEvent {
            aggregate_id: &job.input.account_id,
            event_type: EventType::AccountOpened,
            payload,
            sequence: 1,
        })
        .collect();
    let mut stored = match new_events.is_empty() {
        true => Vec::new(),
        false => repo::insert_events(c, &new_events, &now)?,
    }
    .into_iter();
    let (mut new_keys, mut audited) = (Vec::new(), Vec::new());
    let mut came = Vec::with_capacity(fresh.len());
    for (job, _) in &fresh {
        let id = &job.input.account_id;
        let outcome = if inserted.contains(id) {
            let event = stored.next().ok_or_else(|| Error::Corrupt {
                aggregate_id: id.clone(),
                sequence: 1,
                reason: "the insert returned fewer events than accounts".into(),
            })?;
            if let Some(key) = &job.key {
                new_keys.push(new_key(key, id, 1));
            }
            if let Some(action) = &job.audit {
                audited.push((action, format!("/accounts/{id}")));
            }
            Came::Opened(event)
        } else {
            // A concurrent request with the same key may have opened it: answer as it did.
            match job.key.as_ref().map(|key| earlier(c, key)) {
                Some(Ok(Some(event))) => Came::Replayed(event),
                Some(Err(Error::IdempotencyKeyReused)) => Came::Reused,
                Some(Err(e)) => return Err(e.into()),
                Some(Ok(None)) | None => Came::Exists(id.clone()),
            }
        };
        came.push(outcome);
    }
    repo::insert_keys(c, &new_keys).map_err(key_error)?;
    let writes: Vec<_> = audited
        .iter()
        .map(|(a, r)| (*a, Some(r.as_str())))
        .collect();
    audit::record_all(c, &writes)?;

    Ok(plans
        .into_iter()
        .map(|plan| match plan {
            Plan::Fresh(n) => came[n].clone().answer(false),
            Plan::SameAs(n) => came[n].clone().answer(true),
            Plan::Answered(outcome) => outcome,
        })
        .collect())
}

/// What became of an account a batch tried to open.
#[derive(Clone)]
enum Came {
    Opened(Event),
    /// Opened by an earlier request with the same key and body.
    Replayed(Event),
    Exists(String),
    /// The key was used before with another request.
    Reused,
}

impl Came {
    /// The answer; `again` for a second job of the batch with the same key (a replay).
    fn answer(self, again: bool) -> Result<Recorded, Error> {
        match self {
            Came::Opened(event) => Ok(Recorded {
                event,
                replayed: again,
            }),
            Came::Replayed(event) => replay(Ok(event)),
            Came::Exists(id) => Err(Error::AccountExists { id }),
            Came::Reused => Err(Error::IdempotencyKeyReused),
        }
    }
}

/// A replay of `event` (or the reason there is none).
fn replay(event: Result<Event, Error>) -> Result<Recorded, Error> {
    event.map(|event| Recorded {
        event,
        replayed: true,
    })
}

/// The state of `input`'s account once opened at `now`.
fn opened(input: &OpenAccount, now: &str) -> AccountState {
    apply(
        AccountState::default(),
        &Fact {
            sequence: 1,
            occurred_at: now.to_owned(),
            change: Change::Opened {
                owner: input.owner.clone(),
            },
        },
    )
}

/// Opens an account: the projection row and its `AccountOpened` event (sequence 1), both or
/// neither. An existing id is `AccountExists` and nothing is written.
pub fn open_account(
    conn: &mut DbConnection,
    input: &OpenAccount,
    key: Option<&CallerKey>,
) -> Result<Recorded, Error> {
    let id = input.account_id.as_str();
    let outcome = with_retries(|| {
        if let Some(key) = key
            && let Some(event) = earlier(conn, key)?
        {
            return Err(TxError::Replay(Box::new(event)));
        }
        let open = |c: &mut DbConnection| -> Result<Recorded, TxError> {
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
            repo::insert_account(c, id, &state, input.owner_id)?;
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
                repo::insert_keys(c, &[new_key(key, id, 1)]).map_err(key_error)?;
            }
            Ok(Recorded {
                event,
                replayed: false,
            })
        };
        // Inside the caller's transaction, without a key, nothing here fails after a write
        // (an existing id writes nothing), so no savepoint is needed: it cost two round trips
        // of the six `POST /accounts` made on PostgreSQL. A key's insert can meet a concurrent
        // request's key, after which the transaction must still be usable: a savepoint then.
        let outcome = if key.is_none() && storage::in_transaction(conn) {
            open(conn)
        } else {
            conn.transaction::<_, TxError, _>(open)
        };
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
