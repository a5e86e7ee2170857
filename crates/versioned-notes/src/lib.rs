#![doc = include_str!("../README.md")]

pub mod deprecation;
mod error;
mod model;
pub mod repo;
pub mod schema;
pub mod seed;
pub mod tally;

pub use deprecation::{DeprecationForm, caller};
pub use error::Error;
pub use model::{
    CallerUsage, NOTE_BODY_MAX, NOTE_TITLE_MAX, NoteInput, TAG_MAX, TAGS_MAX, VersionedNote,
};
