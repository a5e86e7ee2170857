/// Everything a token operation can refuse. Each variant carries the status and the message of
/// the `{"error": ...}` body the specification fixes for area D.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `X-User-Id` is missing or not an integer.
    #[error("unauthorized")]
    Unauthorized,
    /// The acting user is not the path user, or the token belongs to another user.
    #[error("forbidden")]
    Forbidden,
    #[error("user not found")]
    UserNotFound { id: i64 },
    #[error("token not found")]
    TokenNotFound,
    #[error("token already revoked")]
    AlreadyRevoked { id: i64 },
    /// The user holds `TOKEN_MAX_ACTIVE` active tokens already.
    #[error("too many active tokens")]
    TooManyActive { limit: u32 },
    #[error("invalid scope, must be read/write/admin")]
    InvalidScope,
    /// Any other invalid input; the message names the member and the rule.
    #[error("{0}")]
    Invalid(&'static str),
    #[error("the operating system's random source failed")]
    Entropy,
    #[cfg(feature = "db")]
    #[error("storage failure")]
    Storage(#[from] diesel::result::Error),
}

impl Error {
    /// The HTTP status of the answer.
    pub fn status(&self) -> u16 {
        match self {
            Error::Unauthorized => 401,
            Error::Forbidden => 403,
            Error::UserNotFound { .. } | Error::TokenNotFound => 404,
            Error::AlreadyRevoked { .. } | Error::TooManyActive { .. } => 409,
            Error::InvalidScope | Error::Invalid(_) => 422,
            Error::Entropy => 500,
            #[cfg(feature = "db")]
            Error::Storage(_) => 500,
        }
    }

    /// The `error` member of the body: fixed texts, never internals.
    pub fn message(&self) -> &'static str {
        match self {
            Error::Unauthorized => "unauthorized",
            Error::Forbidden => "forbidden",
            Error::UserNotFound { .. } => "user not found",
            Error::TokenNotFound => "token not found",
            Error::AlreadyRevoked { .. } => "token already revoked",
            Error::TooManyActive { .. } => {
                "too many active tokens: revoke one (or let one expire) before issuing another"
            }
            Error::InvalidScope => "invalid scope, must be read/write/admin",
            Error::Invalid(message) => message,
            Error::Entropy => "internal error",
            #[cfg(feature = "db")]
            Error::Storage(_) => "internal error",
        }
    }
}

/// Area D answers its refusals with the specification's `{"error": message}` body; the slug
/// only carries the status (and the problem of a 500, which never shows internals).
impl problem_details::ToProblem for Error {
    fn to_problem(&self) -> problem_details::Problem {
        use problem_details::{Problem, Slug};
        let slug = match self {
            Error::Unauthorized => Slug::Unauthorized,
            Error::Forbidden => Slug::Forbidden,
            Error::UserNotFound { .. } | Error::TokenNotFound => Slug::NotFound,
            Error::AlreadyRevoked { .. } | Error::TooManyActive { .. } => Slug::Conflict,
            Error::InvalidScope | Error::Invalid(_) => Slug::ValidationFailed,
            Error::Entropy => return Problem::internal(),
            #[cfg(feature = "db")]
            Error::Storage(_) => return Problem::internal(),
        };
        Problem::new(slug, self.message())
    }

    fn plain_error(&self) -> Option<&str> {
        (self.status() < 500).then(|| self.message())
    }
}

#[cfg(test)]
mod tests {
    use problem_details::ToProblem;

    use super::*;

    #[test]
    fn refusals_are_plain_bodies_with_their_status() {
        let refusals = [
            Error::Unauthorized,
            Error::Forbidden,
            Error::UserNotFound { id: 1 },
            Error::TokenNotFound,
            Error::AlreadyRevoked { id: 1 },
            Error::InvalidScope,
            Error::Invalid("name is required"),
        ];
        for err in refusals {
            assert_eq!(err.to_problem().status, err.status(), "{err}");
            assert_eq!(err.plain_error(), Some(err.message()));
        }
        let internal = Error::Entropy;
        assert_eq!(internal.to_problem().status, 500);
        assert_eq!(
            internal.plain_error(),
            None,
            "a 500 is a problem without internals"
        );
    }
}
