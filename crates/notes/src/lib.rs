#![doc = include_str!("../README.md")]

mod error;
mod model;
#[cfg(feature = "db")]
pub mod repo;
#[cfg(feature = "db")]
pub mod schema;
#[cfg(feature = "db")]
pub mod seed;

pub use error::Error;
pub use model::{
    COMMENT_BODY_MAX, Comment, CommentInput, NOTE_BODY_MAX, NOTE_TITLE_MAX, Note, NoteInput,
    TAG_NAME_MAX, Tag, TagInput,
};
