//! The use cases: each write runs in one transaction, retried when the database reports lock
//! contention, so the event insert and the projection update happen both or neither and a
//! client never sees a failure caused only by concurrency.
//!
//! By concern: [`retry`] (transactions retried on contention, idempotency replays), opening an
//! account (`open`), appending events in group-committed batches (`append`), and the reads
//! (`read`).

mod append;
mod open;
mod read;
mod retry;
mod transfer;

pub use append::{Append, Appender, Job, append, append_batch};
pub use open::{Open, open_account, open_batch};
pub use read::{
    EventsPage, STREAM_BATCH, feed_position, get_account, list_accounts, list_events,
    stream_events, stream_feed,
};
pub use retry::{MAX_ATTEMPTS, RETRIES, is_transient};
pub use transfer::{Transferred, transfer};

use crate::Event;

/// The event a write produced, or (`replayed`) the event an earlier request with the same
/// `Idempotency-Key` and body produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub event: Event,
    pub replayed: bool,
}
