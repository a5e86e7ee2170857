//! Appending events: one command, or a batch in one transaction (the group commit's unit).

use std::borrow::Borrow;

use storage::DbConnection;

use ownership::Actor;

use crate::fold::{apply, decide};
use crate::{AccountState, AppendEvent, CallerKey, Error, Event, Fact, is_valid_account_id, repo};

use super::Recorded;
use super::open::{Open, open_batch};
use super::retry::{TxError, in_one_transaction, key_error, stored_replay};

/// Group commit for appends and openings ([`storage::GroupCommit`] running [`append_batch`]
/// and [`open_batch`]): one per process, shared by every request. Appends to one account are
/// serialized by its lock, so without it a hot account gets one disk flush per event; an
/// opening alone is five round trips and a commit on PostgreSQL.
pub struct Appender(storage::GroupCommit<Job, Result<Recorded, Error>>);

/// A job of the ledger's group commit.
pub enum Job {
    Append(Append),
    Open(Open),
}

impl Appender {
    pub fn new(store: storage::Store) -> Self {
        Appender(storage::GroupCommit::new("ledger", store, run_batch, |e| {
            Err(Error::Store(e))
        }))
    }

    /// Appends `job` in the next shared transaction; resolves once it has committed (or the
    /// command was refused).
    pub async fn append(&self, job: Append) -> Result<Recorded, Error> {
        self.0.submit(Job::Append(job)).await
    }

    /// [`Appender::append`] for a plain thread.
    pub fn append_blocking(&self, job: Append) -> Result<Recorded, Error> {
        self.0.submit_blocking(Job::Append(job))
    }

    /// Opens an account in the next shared transaction (see [`open_batch`]).
    pub async fn open(&self, job: Open) -> Result<Recorded, Error> {
        self.0.submit(Job::Open(job)).await
    }

    /// [`Appender::open`] for a plain thread.
    pub fn open_blocking(&self, job: Open) -> Result<Recorded, Error> {
        self.0.submit_blocking(Job::Open(job))
    }
}

/// A batch of the group commit: its openings, then its appends, each kind in a savepoint of the
/// batch's transaction (a batch holds jobs sent at the same time, so either order is one they
/// could have run in); the outcomes in the order of the jobs.
fn run_batch(conn: &mut DbConnection, jobs: Vec<Job>) -> Vec<Result<Recorded, Error>> {
    let (mut opens, mut appends, mut order) = (Vec::new(), Vec::new(), Vec::new());
    for job in jobs {
        match job {
            Job::Open(open) => {
                order.push(true);
                opens.push(open);
            }
            Job::Append(append) => {
                order.push(false);
                appends.push(append);
            }
        }
    }
    let mut opened = match opens.is_empty() {
        true => Vec::new(),
        false => open_batch(conn, &opens),
    }
    .into_iter();
    let mut appended = match appends.is_empty() {
        true => Vec::new(),
        false => append_batch(conn, &appends),
    }
    .into_iter();
    order
        .into_iter()
        .map(|open| {
            let next = match open {
                true => opened.next(),
                false => appended.next(),
            };
            next.unwrap_or_else(|| unreachable!("one outcome per job"))
        })
        .collect()
}

/// One command of a batch: append `command` to `account_id`, optionally under a caller's
/// idempotency key, for `actor` (an account of another user does not exist for it), recording
/// `audit` with the event when given.
#[derive(Debug, Clone, PartialEq)]
pub struct Append {
    pub account_id: String,
    pub command: AppendEvent,
    pub key: Option<CallerKey>,
    pub actor: Actor,
    pub audit: Option<audit::Action>,
}

/// Appends one event to an account: [`append_batch`] with a batch of one, with no ownership
/// rule and no audit row (the operator's and the tools' way).
pub fn append(
    conn: &mut DbConnection,
    account_id: &str,
    command: &AppendEvent,
    key: Option<&CallerKey>,
) -> Result<Recorded, Error> {
    let job = Append {
        account_id: account_id.to_owned(),
        command: command.clone(),
        key: key.cloned(),
        actor: Actor::Unidentified,
        audit: None,
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
    in_one_transaction(conn, batch, attempt_batch::<A>)
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
    let repo::Locked { mut states, owners } = repo::lock_accounts(c, &ids)?;
    let keys: Vec<&CallerKey> = jobs.iter().filter_map(|j| j.key.as_ref()).collect();
    let mut stored_keys = repo::find_keys(c, &keys)?.into_iter();
    let now = storage::timestamp::now_sql();

    let mut new_events: Vec<repo::NewEvent> = Vec::with_capacity(jobs.len());
    let mut new_keys: Vec<repo::NewKey> = Vec::new();
    let mut plans: Vec<Plan> = Vec::with_capacity(jobs.len());
    for job in &jobs {
        let stored_key = job.key.as_ref().and_then(|_| stored_keys.next().flatten());
        let visible = owners
            .get(&job.account_id)
            .is_some_and(|owner| job.actor.sees(*owner));
        let plan = match states.get_mut(&job.account_id) {
            Some(state) if visible => plan_one(
                c,
                job,
                state,
                stored_key.as_ref(),
                &mut new_keys,
                &mut new_events,
                &now,
            )?,
            // Unknown, or another user's: its existence is private.
            _ => Plan::Refused(Error::AccountNotFound {
                id: job.account_id.clone(),
            }),
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
    repo::insert_keys(c, &new_keys).map_err(key_error)?;
    let audited: Vec<(&audit::Action, String)> = jobs
        .iter()
        .zip(&plans)
        .filter_map(|(job, plan)| match (&job.audit, plan) {
            (Some(action), Plan::New(n)) => {
                let path = action.path.trim_end_matches('/');
                Some((action, format!("{path}/{}", stored[*n].sequence)))
            }
            _ => None,
        })
        .collect();
    let writes: Vec<_> = audited
        .iter()
        .map(|(a, r)| (*a, Some(r.as_str())))
        .collect();
    audit::record_all(c, &writes)?;

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
    stored_key: Option<&repo::KeyRecord>,
    new_keys: &mut Vec<repo::NewKey<'a>>,
    new_events: &mut Vec<repo::NewEvent<'a>>,
    now: &str,
) -> Result<Plan, TxError> {
    if let Some(key) = &job.key {
        let same =
            |k: &&repo::NewKey| k.key.caller == key.caller && k.key.key.key() == key.key.key();
        if let Some(earlier) = new_keys.iter().find(same) {
            if earlier.key.key.fingerprint() != key.key.fingerprint() {
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
        if let Some(record) = stored_key {
            return match stored_replay(c, record) {
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

pub(super) fn new_key<'a>(
    key: &'a CallerKey,
    aggregate_id: &'a str,
    sequence: i64,
) -> repo::NewKey<'a> {
    repo::NewKey {
        key,
        aggregate_id,
        sequence,
    }
}
