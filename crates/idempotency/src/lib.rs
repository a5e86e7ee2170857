//! `Idempotency-Key` for every create: a retry of a request with the same key and body gets
//! the first answer back and writes nothing; the same key with another request is refused.
//!
//! The first answer (status, `Location`, body) is recorded in the transaction that wrote what it
//! answers, so there is never a key without its write or a write without its key. Keys belong
//! to a caller (who counts as one is the service's choice) and are kept for a while
//! ([`DEFAULT_TTL`], measured so that a step of the wall clock expires nothing: [`Expiry`]);
//! [`repo::prune`] deletes older ones, and an older one found before it is pruned counts as
//! unused.
//!
//! Two requests with one key at once: on PostgreSQL the second's insert of the key waits for
//! the first transaction, then fails as a unique violation; [`Error::InProgress`] tells the
//! caller to run it again, and the second run finds the first's answer. A SQLite writer is
//! alone, so the second finds it directly.
//!
//! Token issuance does not use this: replaying it would mean storing the raw token.

mod expiry;
mod key;
#[cfg(feature = "db")]
pub mod repo;
#[cfg(feature = "db")]
pub mod schema;

use std::time::Duration;

use problem_details::{FieldError, FieldErrorCode, Problem, Slug, ToProblem};
#[cfg(feature = "db")]
use storage::DbConnection;

pub use expiry::{Clock, Expiry};
pub use key::{InvalidKey, KEY_MAX, Key, Scope};

/// How long a key is kept by default: a day, as most payment APIs do.
pub const DEFAULT_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// An answer as first sent: what a retry with the same key gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// [`Answer::BY_REFERENCE`] for a record its owner renders itself.
    pub status: u16,
    pub location: Option<String>,
    /// The JSON body, as sent (or the reference its owner renders the answer from).
    pub body: String,
}

impl Answer {
    /// The status of a record that answers by reference: `body` names what the request made,
    /// and its owner renders the answer from that (the ledger's keys name the event they
    /// made), so no HTTP status or `Location` is stored.
    pub const BY_REFERENCE: u16 = 0;

    /// A record that answers by reference (see [`Answer::BY_REFERENCE`]).
    pub fn by_reference(body: String) -> Self {
        Answer {
            status: Answer::BY_REFERENCE,
            location: None,
            body,
        }
    }
}

/// What a keyed request came to: its own answer, or the first one replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub answer: Answer,
    pub replayed: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum Error<E> {
    /// The operation itself failed: nothing is recorded, and the key stays unused.
    #[error("{0}")]
    Operation(#[source] E),
    #[error("this Idempotency-Key was already used with a different request")]
    Reused,
    /// Another request with this key committed while this one ran: run it again to get the
    /// other's answer.
    #[error("another request with this Idempotency-Key is under way")]
    InProgress,
    #[cfg(feature = "db")]
    #[error("idempotency key storage")]
    Storage(#[from] diesel::result::Error),
}

impl<E: ToProblem> ToProblem for Error<E> {
    fn to_problem(&self) -> Problem {
        match self {
            Error::Operation(e) => e.to_problem(),
            Error::Reused => Problem::new(
                Slug::IdempotencyKeyReused,
                "This Idempotency-Key was already used with a different request; nothing was \
                 written.",
            ),
            Error::InProgress => Problem::new(
                Slug::RequestInProgress,
                "Another request with this Idempotency-Key is under way; retry with the same \
                 key for its answer.",
            ),
            #[cfg(feature = "db")]
            Error::Storage(_) => Problem::internal(),
        }
    }

    fn plain_error(&self) -> Option<&str> {
        match self {
            Error::Operation(e) => e.plain_error(),
            _ => None,
        }
    }
}

impl ToProblem for InvalidKey {
    fn to_problem(&self) -> Problem {
        Problem::validation(vec![FieldError::new(
            "Idempotency-Key",
            FieldErrorCode::Invalid,
            self.to_string(),
        )])
    }
}

/// A key as one caller sent it, with the cut-off (RFC 3339) before which its record has
/// expired: what [`once`] runs under, and what a write that records its keys itself carries
/// (the ledger's batches, which answer many callers in one transaction; [`repo::find_many`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerKey {
    pub caller: String,
    pub key: Key,
    pub not_before: String,
    /// The ledger still recognises this very request in a record made since this cut-off,
    /// even past `not_before` ([`Expiry::same_request_since`]).
    pub same_request_since: String,
}

impl CallerKey {
    /// `caller`'s `key`, whose records count for `ttl` from now (by a fresh [`Expiry`]; a
    /// server keeps one and asks it: [`Expiry::key`]).
    pub fn new(caller: impl Into<String>, key: Key, ttl: Duration) -> Self {
        Expiry::new(ttl).key(caller, key)
    }
}

impl Expiry {
    /// `caller`'s `key`, with the cut-offs of now.
    pub fn key(&self, caller: impl Into<String>, key: Key) -> CallerKey {
        CallerKey {
            caller: caller.into(),
            key,
            not_before: self.not_before(),
            same_request_since: self.same_request_since(),
        }
    }
}

/// The caller of records kept from before keys belonged to callers (the ledger's, moved by
/// migration 12): [`repo::find_many`] finds them for any caller until they expire.
pub const ANYONE: &str = "*";

/// Runs `operation` once per caller's `key`: with a record of this very request, answers as
/// then (`replayed`) without running it; with a record of another request, [`Error::Reused`];
/// otherwise runs it and records its answer as made at `now`, in the caller's transaction.
#[cfg(feature = "db")]
pub fn once<E>(
    conn: &mut DbConnection,
    key: &CallerKey,
    now: &str,
    operation: impl FnOnce(&mut DbConnection) -> Result<Answer, E>,
) -> Result<Outcome, Error<E>> {
    if repo::find(conn, key)?.is_some() {
        return replay(conn, key);
    }
    let answer = operation(conn).map_err(Error::Operation)?;
    match repo::record(conn, &key.caller, &key.key, &answer, now) {
        Ok(()) => Ok(Outcome {
            answer,
            replayed: false,
        }),
        Err(e) if storage::is_unique_violation(&e) => Err(Error::InProgress),
        Err(e) => Err(Error::Storage(e)),
    }
}

/// The first answer to `key`, replayed: what a request gets when another one with its key
/// committed first (after [`once`] answered [`Error::InProgress`], run on a fresh read).
/// [`Error::Reused`] when that one was another request; still [`Error::InProgress`] when its
/// record is not visible yet.
#[cfg(feature = "db")]
pub fn replay<E>(conn: &mut DbConnection, key: &CallerKey) -> Result<Outcome, Error<E>> {
    match repo::find(conn, key)? {
        Some(stored) if key.key.matches(&stored.fingerprint) => Ok(Outcome {
            answer: stored.answer,
            replayed: true,
        }),
        Some(_) => Err(Error::Reused),
        None => Err(Error::InProgress),
    }
}

/// Deletes expired keys in the background: every [`Pruner::EVERY`] (or every TTL, when
/// shorter), through the store's write path; the ledger's records (by reference) only after
/// [`Expiry::same_request_since`]. Stops when dropped.
#[cfg(feature = "db")]
pub struct Pruner {
    _stop: std::sync::mpsc::Sender<()>,
}

#[cfg(feature = "db")]
impl Pruner {
    pub const EVERY: Duration = Duration::from_secs(300);

    pub fn start(store: storage::Store, expiry: Expiry) -> Pruner {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let every = Pruner::EVERY.min(expiry.ttl()).max(Duration::from_secs(1));
        let _ = std::thread::Builder::new()
            .name("idempotency-prune".into())
            .spawn(move || {
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(every)
                {
                    let cut = (expiry.not_before(), expiry.same_request_since());
                    // A failed pass (the database is down) is tried again next time.
                    let _ = store.write(|c| repo::prune(c, &cut.0, &cut.1));
                }
            });
        Pruner { _stop: stop }
    }
}
