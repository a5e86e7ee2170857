use problem_details::{FieldError, Problem, Slug, ToProblem};

/// Why a webhook delivery was refused, or why storage failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The signature did not verify (or no secret is configured): 401 `invalid-signature`,
    /// `detail` from [`webhook_verify::Error::detail`]. Never carries the expected signature.
    #[error("webhook signature rejected: {0}")]
    Signature(#[from] webhook_verify::Error),
    /// The signature verified, but the body is not a JSON object with a string `event_type`:
    /// 400 `invalid-body`.
    #[error("invalid webhook body: {reason}")]
    InvalidBody { reason: &'static str },
    /// `event_type` is a string that cannot be stored (it contains U+0000): 422, like every
    /// text input with NUL.
    #[error("invalid event_type")]
    Validation(Vec<FieldError>),
    #[cfg(feature = "db")]
    #[error("webhook events storage failure")]
    Storage(#[from] diesel::result::Error),
    /// The storage layer could not run or commit the delivery's transaction: 503 or 507 by its
    /// fault (the server reads it from the source chain; the cause goes to the log only).
    #[cfg(feature = "db")]
    #[error("webhook events transaction failed")]
    Store(#[from] storage::StoreError),
}

impl Error {
    /// The refusal's name in metrics: what failed, never a detail.
    pub fn outcome(&self) -> &'static str {
        use webhook_verify::Error as Why;
        match self {
            Error::Signature(Why::MissingHeader) => "missing_header",
            Error::Signature(Why::MalformedHeader) => "malformed_header",
            Error::Signature(Why::TimestampOutOfTolerance { .. }) => "stale_timestamp",
            Error::Signature(Why::SignatureMismatch) => "signature_mismatch",
            Error::Signature(_) => "no_secret",
            Error::InvalidBody { .. } => "invalid_body",
            Error::Validation(_) => "invalid_event_type",
            #[cfg(feature = "db")]
            Error::Storage(_) | Error::Store(_) => "storage",
        }
    }
}

impl ToProblem for Error {
    fn to_problem(&self) -> Problem {
        match self {
            Error::Signature(e) => Problem::new(Slug::InvalidSignature, e.detail()),
            Error::InvalidBody { reason } => Problem::new(Slug::InvalidBody, *reason),
            Error::Validation(errors) => Problem::validation(errors.clone()),
            #[cfg(feature = "db")]
            Error::Storage(_) | Error::Store(_) => Problem::internal(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_failures_are_401_invalid_signature_with_the_reason() {
        let p = Error::from(webhook_verify::Error::SignatureMismatch).to_problem();
        assert_eq!(p.status, 401);
        assert_eq!(p.slug, Slug::InvalidSignature);
        assert_eq!(p.title, "Invalid webhook signature.");
        assert_eq!(p.detail, "Signature mismatch.");
        let p = Error::from(webhook_verify::Error::SecretNotConfigured).to_problem();
        assert_eq!(p.detail, "Webhook secret is not configured.");
    }

    #[test]
    fn invalid_body_is_400_with_the_spec_title() {
        let p = Error::InvalidBody { reason: "x." }.to_problem();
        assert_eq!(p.status, 400);
        assert_eq!(p.slug, Slug::InvalidBody);
        assert_eq!(p.title, "event_type (string) is required.");
        assert_eq!(p.detail, "x.");
    }

    #[cfg(feature = "db")]
    #[test]
    fn storage_is_an_opaque_500() {
        let p = Error::Storage(diesel::result::Error::NotFound).to_problem();
        assert_eq!(p.status, 500);
        assert!(!p.detail.contains("NotFound"));
    }
}
