#![doc = include_str!("../README.md")]

mod error;
mod model;
#[cfg(feature = "db")]
mod recorder;
#[cfg(feature = "db")]
pub mod repo;
#[cfg(feature = "db")]
pub mod schema;
#[cfg(feature = "db")]
pub mod seed;

pub use error::Error;

/// A page of `GET /webhook/events` stops before its items pass this many bytes (one item is
/// always served): payloads are kept as delivered, up to `MAX_BODY_BYTES` each, so 100 of them
/// in one page could take 100 MiB. `next_offset` leads to the rest.
pub const LIST_PAGE_MAX_BYTES: usize = 1_048_576;
pub use model::{BadSecret, Clock, Delivery, Intake, Recorded, WebhookEvent, parse_body};
#[cfg(feature = "db")]
pub use recorder::Recorder;
/// The request header a delivery's signature arrives in.
pub use webhook_verify::HEADER_NAME as SIGNATURE_HEADER;
