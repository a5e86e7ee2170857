#![doc = include_str!("../README.md")]

#[cfg(feature = "db")]
pub mod check;
mod error;
pub mod fold;
mod model;
#[cfg(feature = "db")]
pub mod repo;
#[cfg(feature = "db")]
pub mod schema;
#[cfg(feature = "db")]
pub mod seed;
#[cfg(feature = "db")]
pub mod service;

pub use error::Error;
pub use fold::{apply, decide, replay};
pub use model::{
    ACCOUNT_ID_MAX, AGGREGATE_TYPE, AMOUNT_MAX, Account, AccountState, AppendEvent, CallerKey,
    Change, EVENTS_LIMIT_MAX, EVENTS_PAGE_MAX_BYTES, Event, EventType, Fact, FeedPosition,
    IDEMPOTENCY_KEY_MAX, IdempotencyKey, OWNER_MAX, OpenAccount, PAYLOAD_MAX_BYTES, Precondition,
    PreconditionFailed, Transfer, is_valid_account_id,
};
#[cfg(feature = "db")]
pub use service::{Append, Appender, EventsPage, Open, Recorded};
