#![doc = include_str!("../README.md")]

mod error;
mod model;
pub mod repo;
pub mod schema;
pub mod seed;

pub use error::Error;
pub use model::{
    COMMENT_BODY_MAX, Comment, CommentInput, NOTE_BODY_MAX, NOTE_TITLE_MAX, Note, NoteInput,
    TAG_NAME_MAX, Tag, TagInput,
};
