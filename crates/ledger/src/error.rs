use problem_details::{FieldError, Problem, Slug, ToProblem};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid input")]
    Validation(Vec<FieldError>),
    #[error("account {id} does not exist")]
    AccountNotFound { id: String },
    #[error("account {id} exists already")]
    AccountExists { id: String },
    #[error("account {id} is closed")]
    AccountClosed { id: String },
    #[error("withdrawal of {amount_cents} above the balance of {balance_cents}")]
    InsufficientFunds {
        balance_cents: i64,
        amount_cents: i64,
    },
    #[error("expected sequence {expected}, the account is at {actual}")]
    SequenceMismatch { expected: i64, actual: i64 },
    #[error("the idempotency key was used for another request")]
    IdempotencyKeyReused,
    #[error("the ledger stayed busy through every retry: {last}")]
    Busy { last: String },
    #[error("stored event {aggregate_id}#{sequence} is unreadable: {reason}")]
    Corrupt {
        aggregate_id: String,
        sequence: i64,
        reason: String,
    },
    #[cfg(feature = "db")]
    #[error("ledger storage failure")]
    Storage(#[from] diesel::result::Error),
    /// The storage layer could not run or commit the append's transaction: 503 or 507 by its
    /// fault (the server reads it from the source chain).
    #[cfg(feature = "db")]
    #[error("ledger transaction failed")]
    Store(#[from] storage::StoreError),
}

impl ToProblem for Error {
    fn to_problem(&self) -> Problem {
        match self {
            Error::Validation(errors) => Problem::validation(errors.clone()),
            Error::AccountNotFound { id } => Problem::not_found("Account", id),
            Error::AccountExists { id } => Problem::new(
                Slug::Conflict,
                format!("Account {id} exists already; nothing was written."),
            ),
            Error::AccountClosed { id } => Problem::new(
                Slug::AccountClosed,
                format!("Account {id} is closed and accepts no further events."),
            ),
            Error::InsufficientFunds {
                balance_cents,
                amount_cents,
            } => Problem::new(
                Slug::InsufficientFunds,
                format!(
                    "A withdrawal of {amount_cents} cents exceeds the balance of \
                     {balance_cents} cents; nothing was written."
                ),
            )
            .with_extension("balance_cents", *balance_cents)
            .with_extension("amount_cents", *amount_cents),
            Error::SequenceMismatch { expected, actual } => Problem::new(
                Slug::Conflict,
                format!(
                    "expected_sequence is {expected} but the account's last sequence is \
                     {actual}; nothing was written."
                ),
            )
            .with_extension("last_sequence", *actual),
            Error::IdempotencyKeyReused => Problem::new(
                Slug::IdempotencyKeyReused,
                "This Idempotency-Key was already used with a different request; nothing was \
                 written.",
            ),
            Error::Busy { .. } => Problem::new(
                Slug::ServiceUnavailable,
                "The ledger is busy; retry shortly.",
            ),
            Error::Corrupt { .. } => Problem::new(
                Slug::StorageDamaged,
                "A stored event of this account is damaged; nothing damaged is served.",
            ),
            #[cfg(feature = "db")]
            Error::Storage(_) | Error::Store(_) => Problem::internal(),
        }
    }
}
