use problem_details::{Problem, Slug, ToProblem};

/// Why a credential was refused (or a verifier could not be made). The texts name the reason
/// only: never the secret, the presented key or the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// No API key is configured, so none can be accepted.
    #[error("No API key is configured on this service.")]
    NoApiKeyConfigured,
    /// The request carried no API key.
    #[error("The API key header is missing.")]
    MissingApiKey,
    /// The presented key matches no configured key.
    #[error("The API key is not valid.")]
    UnknownApiKey,

    /// The JWT secret is missing or shorter than [`crate::MIN_SECRET_BYTES`].
    #[error("Bearer tokens cannot be verified: the signing secret is not configured.")]
    WeakSecret,
    /// No `Authorization: Bearer …` header.
    #[error("A bearer token is required.")]
    MissingToken,
    /// Not three base64url parts of JSON objects, or too long.
    #[error("The bearer token is malformed.")]
    MalformedToken,
    /// `alg` is not `HS256` (`none`, `RS256`, …), or a critical extension is requested.
    #[error("The bearer token's algorithm is not accepted; only HS256 is.")]
    UnsupportedAlgorithm,
    /// The signature does not match.
    #[error("The bearer token's signature is invalid.")]
    BadSignature,
    /// `exp` lies in the past (beyond the leeway).
    #[error("The bearer token has expired.")]
    Expired,
    /// `nbf` lies in the future (beyond the leeway).
    #[error("The bearer token is not valid yet.")]
    NotYetValid,
}

impl Error {
    /// True for the errors of the bearer (JWT) scheme, whose 401 carries
    /// `WWW-Authenticate: Bearer`.
    pub fn is_bearer(self) -> bool {
        !matches!(
            self,
            Error::NoApiKeyConfigured | Error::MissingApiKey | Error::UnknownApiKey
        )
    }
}

impl ToProblem for Error {
    fn to_problem(&self) -> Problem {
        Problem::new(Slug::Unauthorized, self.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_is_a_401() {
        for e in [Error::MissingApiKey, Error::BadSignature, Error::WeakSecret] {
            let p = e.to_problem();
            assert_eq!((p.status, p.slug), (401, Slug::Unauthorized));
        }
        assert!(Error::Expired.is_bearer());
        assert!(!Error::UnknownApiKey.is_bearer());
    }
}
