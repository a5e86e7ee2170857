//! [`ClientError`] and the typed [`Problem`] of an RFC 9457 error response.

use std::fmt;
use std::time::Duration;

use problem_details::{FieldErrorCode, Slug};
use serde_json::{Map, Value};

use crate::types::HealthReport;

/// Everything a call can fail with. No variant carries a raw serde error or a credential.
///
/// ```no_run
/// use client::{ClientError, NoteInput, Slug};
/// # async fn run(api: client::Client) -> Result<(), ClientError> {
/// match api.notes().create(&NoteInput::new("", "")).await {
///     Ok(note) => println!("made {}", note.id),
///     Err(e) if e.is(Slug::ValidationFailed) => println!("fix: {:?}", e.problem().map(|p| &p.errors)),
///     Err(ClientError::Transport { .. }) => println!("the service is unreachable"),
///     Err(e) => return Err(e),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The request could not be sent or no response arrived (connection refused or reset,
    /// DNS, TLS, timeout), after the retries the policy allows.
    #[error("{operation}: transport error: {source}")]
    Transport {
        operation: &'static str,
        #[source]
        source: reqwest::Error,
    },
    /// A response arrived but is not what the API describes: not JSON, HTML, truncated, a
    /// wrong type, a missing field, an unexpected success status… `reason` says where.
    #[error("{operation}: invalid response: {reason}")]
    InvalidResponse {
        operation: &'static str,
        reason: String,
    },
    /// The service answered with a problem document (4xx/5xx).
    #[error("{0}")]
    Api(Box<Problem>),
    /// A route of users and tokens (area D) refused the request with the `{"error": "…"}`
    /// body the service specification fixes for them (`user not found`, `token already
    /// revoked`, …). What the shared layers answer there (413, 415, 503) stays [`Api`](Self::Api).
    #[error("{operation}: {status} {error}")]
    Refused {
        operation: &'static str,
        status: u16,
        error: String,
        request_id: Option<String>,
    },
    /// An error status whose body is not a problem document (a proxy's HTML page, say).
    #[error("{operation}: unexpected HTTP status {status}")]
    UnexpectedStatus {
        operation: &'static str,
        status: u16,
        content_type: Option<String>,
    },
    /// The reply came from another service than the one the client was built to expect.
    #[error("{operation}: expected service {expected:?}, but {actual:?} answered")]
    ServiceMismatch {
        operation: &'static str,
        expected: String,
        actual: String,
    },
    /// `GET /health` answered 503 and the caller did not accept a degraded service.
    #[error("health: the service is degraded (database: {})", .0.db.as_str())]
    Degraded(HealthReport),
    /// The client was configured wrongly (an unusable base URL or header value).
    #[error("invalid client configuration: {0}")]
    Config(String),
    /// An argument cannot be sent as given (an idempotency key with spaces, an account id that
    /// is not a path segment); nothing was sent.
    #[error("invalid input: {0}")]
    InvalidInput(String),
}

impl ClientError {
    /// The problem document, when the service answered with one.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) {
    /// if let Err(e) = api.notes().get(42).await {
    ///     println!("{:?}", e.problem().map(|p| (&p.detail, &p.request_id)));
    /// }
    /// # }
    /// ```
    pub fn problem(&self) -> Option<&Problem> {
        match self {
            ClientError::Api(p) => Some(p),
            _ => None,
        }
    }

    /// The HTTP status of the answer, when there was one.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) {
    /// let err = api.notes().get(42).await.unwrap_err();
    /// assert_eq!(err.status(), Some(404));
    /// # }
    /// ```
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Api(p) => Some(p.status),
            ClientError::UnexpectedStatus { status, .. } | ClientError::Refused { status, .. } => {
                Some(*status)
            }
            ClientError::Degraded(_) => Some(503),
            _ => None,
        }
    }

    /// True when the service answered with this problem type.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) {
    /// let err = api.notes().get(42).await.unwrap_err();
    /// assert!(err.is(client::Slug::NotFound));
    /// # }
    /// ```
    pub fn is(&self, slug: Slug) -> bool {
        self.problem()
            .is_some_and(|p| p.kind == ProblemKind::Known(slug))
    }

    pub(crate) fn invalid(operation: &'static str, reason: impl Into<String>) -> Self {
        ClientError::InvalidResponse {
            operation,
            reason: reason.into(),
        }
    }
}

/// The problem type: the slug at the end of `type`, typed when this client knows it (every
/// [`Slug`] the service sends).
///
/// ```
/// use client::{ProblemKind, Slug};
/// let kind = ProblemKind::from_type_uri("http://127.0.0.1:8080/problems/precondition-failed");
/// assert_eq!(kind, ProblemKind::Known(Slug::PreconditionFailed));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProblemKind {
    Known(Slug),
    /// A slug this client does not know (a newer server), or a `type` that is not a URI
    /// ending in a slug (`about:blank`).
    Other(String),
}

impl ProblemKind {
    /// From a `type` URI: its last path segment.
    ///
    /// ```
    /// use client::ProblemKind;
    /// assert_eq!(ProblemKind::from_type_uri("about:blank"), ProblemKind::Other("about:blank".into()));
    /// ```
    pub fn from_type_uri(uri: &str) -> Self {
        let slug = uri.trim_end_matches('/').rsplit('/').next().unwrap_or(uri);
        Slug::parse(slug).map_or_else(|| ProblemKind::Other(slug.to_owned()), ProblemKind::Known)
    }
}

/// The `code` of one entry of a 422's `errors`.
///
/// ```
/// use client::{FieldCode, FieldErrorCode};
/// assert_eq!(FieldCode::parse("too_long"), FieldCode::Known(FieldErrorCode::TooLong));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldCode {
    Known(FieldErrorCode),
    Other(String),
}

const FIELD_CODES: [FieldErrorCode; 5] = [
    FieldErrorCode::Required,
    FieldErrorCode::TooLong,
    FieldErrorCode::Invalid,
    FieldErrorCode::OutOfRange,
    FieldErrorCode::InvalidType,
];

impl FieldCode {
    /// A wire code, typed when this client knows it.
    ///
    /// ```
    /// assert_eq!(client::FieldCode::parse("new_code"), client::FieldCode::Other("new_code".into()));
    /// ```
    pub fn parse(code: &str) -> Self {
        FIELD_CODES
            .into_iter()
            .find(|c| c.as_str() == code)
            .map_or_else(|| FieldCode::Other(code.to_owned()), FieldCode::Known)
    }
}

/// One invalid field of a 422 `validation-failed` problem.
///
/// ```no_run
/// # async fn run(api: client::Client) {
/// let err = api.tags().create(&client::TagInput::new(" ")).await.unwrap_err();
/// for e in &err.problem().unwrap().errors {
///     println!("{}: {} ({:?})", e.field, e.message, e.code);
/// }
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
    pub code: FieldCode,
}

/// An RFC 9457 problem document, validated and typed.
///
/// ```no_run
/// # async fn run(api: client::Client) {
/// if let Err(client::ClientError::Api(problem)) = api.notes().get(42).await {
///     eprintln!("{} (quote request id {:?})", problem.detail, problem.request_id);
/// }
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// The operation that received it (the OpenAPI `operationId`).
    pub operation: &'static str,
    pub kind: ProblemKind,
    /// The `type` member as sent.
    pub type_uri: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// Every invalid field (422 only; empty otherwise).
    pub errors: Vec<FieldError>,
    /// Other members (for example `max_bytes` on a 413).
    pub extensions: Map<String, Value>,
    /// The `X-Request-Id` of the response, to quote when reporting it.
    pub request_id: Option<String>,
    /// `Retry-After` (429, 503), when sent.
    pub retry_after: Option<Duration>,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let slug = match &self.kind {
            ProblemKind::Known(s) => s.as_str(),
            ProblemKind::Other(s) => s.as_str(),
        };
        write!(
            f,
            "{}: {} {slug}: {}",
            self.operation, self.status, self.detail
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_codes_parse() {
        assert_eq!(
            ProblemKind::from_type_uri("http://x/problems/not-found"),
            ProblemKind::Known(Slug::NotFound)
        );
        assert_eq!(
            ProblemKind::from_type_uri("https://x/problems/teapot/"),
            ProblemKind::Other("teapot".into())
        );
        assert_eq!(
            ProblemKind::from_type_uri("about:blank"),
            ProblemKind::Other("about:blank".into())
        );
        assert_eq!(
            FieldCode::parse("too_long"),
            FieldCode::Known(FieldErrorCode::TooLong)
        );
        assert_eq!(FieldCode::parse("weird"), FieldCode::Other("weird".into()));
    }

    #[test]
    fn every_slug_round_trips_through_its_type_uri() {
        for slug in Slug::ALL {
            for uri in [
                format!("http://127.0.0.1:8080/problems/{slug}"),
                format!("https://api.example/base/problems/{slug}/"),
            ] {
                assert_eq!(ProblemKind::from_type_uri(&uri), ProblemKind::Known(slug));
            }
            assert_eq!(Slug::parse(slug.as_str()), Some(slug));
        }
    }

    /// Every slug docs/errors.md says the service sends is one this client types.
    #[test]
    fn every_documented_slug_is_known() {
        let table = include_str!("../../../docs/errors.md");
        let documented: Vec<&str> = table
            .lines()
            .filter_map(|line| line.strip_prefix("| ")?.split(" | ").nth(1))
            .filter_map(|cell| cell.strip_prefix('`')?.strip_suffix('`'))
            .collect();
        assert!(documented.len() >= 19, "{documented:?}");
        for slug in documented {
            assert!(Slug::parse(slug).is_some(), "{slug} is not a known Slug");
        }
    }
}
