use std::fmt;

/// Every problem type this service answers with. The slug is the last segment of the `type` URI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Slug {
    BadRequest,
    InvalidBody,
    Unauthorized,
    InvalidSignature,
    Forbidden,
    NotFound,
    MethodNotAllowed,
    RequestTimeout,
    Conflict,
    PayloadTooLarge,
    UnsupportedMediaType,
    ValidationFailed,
    InsufficientFunds,
    AccountClosed,
    TooManyRequests,
    InternalServerError,
    ServiceUnavailable,
    StorageUnavailable,
    StorageDamaged,
    InsufficientStorage,
    IdempotencyKeyReused,
    RequestInProgress,
    PreconditionFailed,
}

impl Slug {
    pub const ALL: [Slug; 23] = [
        Slug::BadRequest,
        Slug::InvalidBody,
        Slug::Unauthorized,
        Slug::InvalidSignature,
        Slug::Forbidden,
        Slug::NotFound,
        Slug::MethodNotAllowed,
        Slug::RequestTimeout,
        Slug::Conflict,
        Slug::PayloadTooLarge,
        Slug::UnsupportedMediaType,
        Slug::ValidationFailed,
        Slug::InsufficientFunds,
        Slug::AccountClosed,
        Slug::TooManyRequests,
        Slug::InternalServerError,
        Slug::ServiceUnavailable,
        Slug::StorageUnavailable,
        Slug::StorageDamaged,
        Slug::InsufficientStorage,
        Slug::IdempotencyKeyReused,
        Slug::RequestInProgress,
        Slug::PreconditionFailed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Slug::BadRequest => "bad-request",
            Slug::InvalidBody => "invalid-body",
            Slug::Unauthorized => "unauthorized",
            Slug::InvalidSignature => "invalid-signature",
            Slug::Forbidden => "forbidden",
            Slug::NotFound => "not-found",
            Slug::MethodNotAllowed => "method-not-allowed",
            Slug::RequestTimeout => "request-timeout",
            Slug::Conflict => "conflict",
            Slug::PayloadTooLarge => "payload-too-large",
            Slug::UnsupportedMediaType => "unsupported-media-type",
            Slug::ValidationFailed => "validation-failed",
            Slug::InsufficientFunds => "insufficient-funds",
            Slug::AccountClosed => "account-closed",
            Slug::TooManyRequests => "too-many-requests",
            Slug::InternalServerError => "internal-server-error",
            Slug::ServiceUnavailable => "service-unavailable",
            Slug::StorageUnavailable => "storage-unavailable",
            Slug::StorageDamaged => "storage-damaged",
            Slug::InsufficientStorage => "insufficient-storage",
            Slug::IdempotencyKeyReused => "idempotency-key-reused",
            Slug::RequestInProgress => "request-in-progress",
            Slug::PreconditionFailed => "precondition-failed",
        }
    }

    pub fn parse(s: &str) -> Option<Slug> {
        Slug::ALL.into_iter().find(|slug| slug.as_str() == s)
    }

    /// The HTTP status this problem type is always answered with.
    pub fn status(self) -> u16 {
        match self {
            Slug::BadRequest | Slug::InvalidBody => 400,
            Slug::Unauthorized | Slug::InvalidSignature => 401,
            Slug::Forbidden => 403,
            Slug::NotFound => 404,
            Slug::MethodNotAllowed => 405,
            Slug::RequestTimeout => 408,
            Slug::Conflict | Slug::AccountClosed | Slug::RequestInProgress => 409,
            Slug::PreconditionFailed => 412,
            Slug::PayloadTooLarge => 413,
            Slug::UnsupportedMediaType => 415,
            Slug::ValidationFailed | Slug::InsufficientFunds | Slug::IdempotencyKeyReused => 422,
            Slug::TooManyRequests => 429,
            Slug::InternalServerError => 500,
            Slug::ServiceUnavailable | Slug::StorageUnavailable | Slug::StorageDamaged => 503,
            Slug::InsufficientStorage => 507,
        }
    }

    /// The short, stable summary of the problem type (RFC 9457 `title`).
    pub fn title(self) -> &'static str {
        match self {
            Slug::BadRequest => "Bad request.",
            Slug::InvalidBody => "event_type (string) is required.",
            Slug::Unauthorized => "Authentication required.",
            Slug::InvalidSignature => "Invalid webhook signature.",
            Slug::Forbidden => "Forbidden.",
            Slug::NotFound => "Resource not found.",
            Slug::MethodNotAllowed => "Method not allowed.",
            Slug::RequestTimeout => "Request timeout.",
            Slug::Conflict => "Conflict.",
            Slug::PayloadTooLarge => "Payload too large.",
            Slug::UnsupportedMediaType => "Unsupported media type.",
            Slug::ValidationFailed => "Validation failed.",
            Slug::InsufficientFunds => "Insufficient funds.",
            Slug::AccountClosed => "Account closed.",
            Slug::TooManyRequests => "Too many requests.",
            Slug::InternalServerError => "Internal server error.",
            Slug::ServiceUnavailable => "Service unavailable.",
            Slug::StorageUnavailable => "Storage unavailable.",
            Slug::StorageDamaged => "Stored data damaged.",
            Slug::InsufficientStorage => "Insufficient storage.",
            Slug::IdempotencyKeyReused => "Idempotency key reused.",
            Slug::RequestInProgress => "Request in progress.",
            Slug::PreconditionFailed => "Precondition failed.",
        }
    }

    /// A paragraph for the human-readable page served at `/problems/{slug}`.
    pub fn description(self) -> &'static str {
        match self {
            Slug::BadRequest => "The request was malformed and could not be processed.",
            Slug::InvalidBody => {
                "A webhook delivery had a valid signature, but its body was not a JSON object \
                 with a string event_type member."
            }
            Slug::Unauthorized => {
                "The request lacks valid credentials for this resource. See the WWW-Authenticate \
                 header for the expected scheme."
            }
            Slug::InvalidSignature => {
                "The X-Webhook-Signature header was missing, malformed, outside the 300-second \
                 tolerance window, or did not match the body. The detail names the reason."
            }
            Slug::Forbidden => "The credentials are valid but do not allow this operation.",
            Slug::NotFound => "The addressed resource does not exist.",
            Slug::MethodNotAllowed => {
                "The resource exists but does not support this method. The Allow header lists \
                 the methods it does support."
            }
            Slug::RequestTimeout => {
                "The request (its head and its body) did not arrive within the server's request \
                 timeout (REQUEST_TIMEOUT, 30 seconds by default). Nothing was processed and the \
                 connection is closed; send the request again, at once and in full."
            }
            Slug::Conflict => {
                "The request conflicts with the current state of the resource, for example a \
                 duplicate unique value or a stale expected sequence."
            }
            Slug::PayloadTooLarge => {
                "The request body is larger than the configured limit (member max_bytes)."
            }
            Slug::UnsupportedMediaType => {
                "The request body must be sent as application/json (or a +json type), without \
                 a Content-Encoding: a body with any other or no Content-Type, or a compressed \
                 one, is refused before it is read."
            }
            Slug::ValidationFailed => {
                "One or more inputs are invalid. The errors member lists every invalid field with \
                 a message and a machine-readable code."
            }
            Slug::InsufficientFunds => "A withdrawal was larger than the account's balance.",
            Slug::AccountClosed => "The account is closed and accepts no further events.",
            Slug::TooManyRequests => {
                "The client sent too many requests. Retry after the number of seconds in the \
                 Retry-After header."
            }
            Slug::InternalServerError => {
                "The server failed unexpectedly. The response carries no internals; quote the \
                 X-Request-Id header when reporting it."
            }
            Slug::ServiceUnavailable => {
                "A dependency of the service is unavailable, busy or too slow (the database is \
                 unreachable, a lock or statement timeout ran out). Nothing was written. Retry \
                 after the number of seconds in the Retry-After header."
            }
            Slug::StorageUnavailable => {
                "The database refuses writes: its files are read-only or immutable, the \
                 operating system reported an I/O error, or the files at the configured path \
                 were replaced or deleted under the running server. Nothing was written. The \
                 service accepts writes again without a restart once the files are writable \
                 (replaced files need a restart). Retry after the Retry-After header."
            }
            Slug::StorageDamaged => {
                "The database holds damaged data: a page that fails SQLite's check, a stored \
                 value that does not decode, or a WAL whose committed frames SQLite's recovery \
                 would discard. Nothing damaged is served as data. An operator decides what \
                 happens next (restore a backup, or accept the loss); until then the answer \
                 stays the same, so retrying soon does not help."
            }
            Slug::InsufficientStorage => {
                "The database's disk is full. Nothing was written. The service accepts writes \
                 again without a restart once space is freed; retry after the Retry-After \
                 header."
            }
            Slug::IdempotencyKeyReused => {
                "This Idempotency-Key was already used by the same caller with a different \
                 request (another route or another body). Nothing was written. Use a fresh key \
                 for a new request; keys are kept for 24 hours by default."
            }
            Slug::PreconditionFailed => {
                "The resource changed since the version named in If-Match (its ETag is now \
                 another), or If-Match named no version it has. Nothing was written. Read it \
                 again (GET answers its current ETag) and decide on the edit anew."
            }
            Slug::RequestInProgress => {
                "Another request with this Idempotency-Key is still being processed. Nothing \
                 was written by this one; retry it with the same key to get the first answer."
            }
        }
    }
}

impl fmt::Display for Slug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_round_trip_and_are_unique() {
        for slug in Slug::ALL {
            assert_eq!(Slug::parse(slug.as_str()), Some(slug));
        }
        let mut names: Vec<_> = Slug::ALL.iter().map(|s| s.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Slug::ALL.len());
    }

    #[test]
    fn statuses_match_the_spec_table() {
        assert_eq!(Slug::BadRequest.status(), 400);
        assert_eq!(Slug::InvalidBody.status(), 400);
        assert_eq!(Slug::Unauthorized.status(), 401);
        assert_eq!(Slug::InvalidSignature.status(), 401);
        assert_eq!(Slug::NotFound.status(), 404);
        assert_eq!(Slug::PayloadTooLarge.status(), 413);
        assert_eq!(Slug::ValidationFailed.status(), 422);
        assert_eq!(Slug::TooManyRequests.status(), 429);
        assert_eq!(Slug::InternalServerError.status(), 500);
        assert_eq!(Slug::IdempotencyKeyReused.status(), 422);
        assert_eq!(Slug::RequestInProgress.status(), 409);
        assert_eq!(Slug::PreconditionFailed.status(), 412);
    }

    #[test]
    fn spec_titles_are_exact() {
        assert_eq!(Slug::InvalidSignature.title(), "Invalid webhook signature.");
        assert_eq!(
            Slug::InvalidBody.title(),
            "event_type (string) is required."
        );
    }

    #[test]
    fn unknown_slug_does_not_parse() {
        assert_eq!(Slug::parse("teapot"), None);
    }
}
