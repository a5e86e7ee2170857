#![doc = include_str!("../README.md")]

pub mod deprecation;
mod error;
mod model;
#[cfg(feature = "db")]
pub mod repo;
#[cfg(feature = "db")]
pub mod schema;
#[cfg(feature = "db")]
pub mod seed;
pub mod tally;
#[cfg(feature = "db")]
mod usage;

pub use deprecation::{DeprecationForm, caller};
pub use error::Error;
pub use model::{
    CallerUsage, NOTE_BODY_MAX, NOTE_TITLE_MAX, NoteInput, TAG_MAX, TAGS_MAX, VersionedNote,
};
#[cfg(feature = "db")]
pub use usage::UsageRecorder;
