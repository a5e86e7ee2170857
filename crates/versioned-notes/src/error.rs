use problem_details::{FieldError, Problem, ToProblem};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid input")]
    Validation(Vec<FieldError>),
    #[error("note {id} does not exist")]
    NotFound { id: i64 },
    #[error("the stored tags of note {id} are not a JSON array of strings")]
    CorruptTags {
        id: i64,
        #[source]
        source: serde_json::Error,
    },
    #[cfg(feature = "db")]
    #[error("versioned notes storage failure")]
    Storage(#[from] diesel::result::Error),
}

impl ToProblem for Error {
    fn to_problem(&self) -> Problem {
        match self {
            Error::Validation(errors) => Problem::validation(errors.clone()),
            Error::NotFound { id } => Problem::not_found("Note", id),
            Error::CorruptTags { .. } => Problem::internal(),
            #[cfg(feature = "db")]
            Error::Storage(_) => Problem::internal(),
        }
    }
}
