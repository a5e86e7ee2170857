use problem_details::{FieldError, Problem, Slug, ToProblem};

/// Why an endpoint request was refused, or why storage failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid webhook endpoint")]
    Validation(Vec<FieldError>),
    /// Unknown, or another user's (whose endpoints do not exist for this one).
    #[error("webhook endpoint {id} not found")]
    NotFound { id: String },
    /// A rotation while the previous one's old secret still signs: it would end that grace at
    /// once, and receivers still on the old secret would reject deliveries.
    #[error("webhook endpoint {id}: the previous rotation's grace still lasts")]
    RotationInGrace { id: String },
    /// The owner has `limit` endpoints already (`WEBHOOK_ENDPOINTS_PER_OWNER`).
    #[error("too many webhook endpoints")]
    TooMany { limit: i64 },
    /// No `WEBHOOK_SIGNING_KEY`: no endpoint secret can be made, so none is registered.
    #[error("no webhook signing key is configured")]
    NoSigningKey,
    /// The dispatcher could not start or run a task (the cause, for the log).
    #[error("webhook dispatcher: {0}")]
    Internal(String),
    #[cfg(feature = "db")]
    #[error("webhook endpoints storage failure")]
    Storage(#[from] diesel::result::Error),
    #[cfg(feature = "db")]
    #[error("webhook endpoints transaction failed")]
    Store(#[from] storage::StoreError),
    #[cfg(feature = "db")]
    #[error("reading the account events failed")]
    Ledger(#[from] ledger::Error),
}

impl ToProblem for Error {
    fn to_problem(&self) -> Problem {
        match self {
            Error::Validation(errors) => Problem::validation(errors.clone()),
            Error::NotFound { id } => Problem::not_found("Webhook endpoint", id),
            Error::RotationInGrace { id } => Problem::new(
                Slug::Conflict,
                format!(
                    "Webhook endpoint {id} was rotated less than a grace period ago and its old \
                     secret still signs; rotate again once that has ended."
                ),
            ),
            Error::TooMany { limit } => Problem::new(
                Slug::Conflict,
                format!(
                    "This owner has {limit} webhook endpoints, the most allowed; delete one \
                     before registering another."
                ),
            ),
            Error::NoSigningKey => Problem::new(
                Slug::ServiceUnavailable,
                "Outbound webhooks are off: the operator has set no WEBHOOK_SIGNING_KEY.",
            ),
            Error::Internal(_) => Problem::internal(),
            #[cfg(feature = "db")]
            Error::Storage(_) | Error::Store(_) | Error::Ledger(_) => Problem::internal(),
        }
    }
}
