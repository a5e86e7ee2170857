use problem_details::{FieldError, Problem, Slug, ToProblem};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid input")]
    Validation(Vec<FieldError>),
    #[error("note {id} does not exist")]
    NoteNotFound { id: i64 },
    #[error("tag {id} does not exist")]
    TagNotFound { id: i64 },
    #[error("comment {id} does not exist under note {note_id}")]
    CommentNotFound { note_id: i64, id: i64 },
    #[error("a tag named {name:?} already exists")]
    DuplicateTagName { name: String },
    #[error(transparent)]
    Denied(#[from] ownership::Denied),
    #[cfg(feature = "db")]
    #[error("notes storage failure")]
    Storage(#[from] diesel::result::Error),
}

impl ToProblem for Error {
    fn to_problem(&self) -> Problem {
        match self {
            Error::Validation(errors) => Problem::validation(errors.clone()),
            Error::NoteNotFound { id } => Problem::not_found("Note", id),
            Error::TagNotFound { id } => Problem::not_found("Tag", id),
            Error::CommentNotFound { note_id, id } => Problem::new(
                Slug::NotFound,
                format!("Comment {id} does not exist under note {note_id}."),
            ),
            Error::DuplicateTagName { name } => Problem::new(
                Slug::Conflict,
                format!("A tag named {name:?} already exists."),
            ),
            Error::Denied(denied) => denied.to_problem(),
            #[cfg(feature = "db")]
            Error::Storage(_) => Problem::internal(),
        }
    }
}
