use problem_details::{FieldError, Problem, ToProblem};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid input")]
    Validation(Vec<FieldError>),
    #[cfg(feature = "db")]
    #[error("articles storage failure")]
    Storage(#[from] diesel::result::Error),
}

impl ToProblem for Error {
    fn to_problem(&self) -> Problem {
        match self {
            Error::Validation(errors) => Problem::validation(errors.clone()),
            #[cfg(feature = "db")]
            Error::Storage(_) => Problem::internal(),
        }
    }
}
