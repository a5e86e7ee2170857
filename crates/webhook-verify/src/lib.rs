#![doc = include_str!("../README.md")]

mod error;
mod header;
mod sign;
mod verify;

pub use error::Error;
pub use header::{HEADER_NAME, MAX_TIMESTAMP_DIGITS, SignatureHeader};
pub use sign::{header, sign};
pub use verify::{DEFAULT_TOLERANCE_SECONDS, SecretUsed, Verified, Verifier};
