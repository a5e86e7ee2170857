/// Why a webhook delivery (or a verifier configuration) was rejected.
///
/// [`Error::detail`] gives the sentence a client sees in the problem document's `detail`.
/// No variant ever carries the expected signature.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The request had no `X-Webhook-Signature` header.
    #[error("Missing X-Webhook-Signature header.")]
    MissingHeader,

    /// The header did not follow the parsing rules (see the crate docs).
    #[error("Malformed X-Webhook-Signature header.")]
    MalformedHeader,

    /// `|now - t|` exceeded the tolerance. `age_seconds` is `now - t`: positive when the
    /// timestamp lies in the past, negative when it lies in the future (saturated to
    /// `±i64::MAX` for absurd timestamps).
    #[error("{}", describe_age(*age_seconds, *tolerance))]
    TimestampOutOfTolerance { age_seconds: i64, tolerance: i64 },

    /// The header was well formed and fresh, but `v1` matched neither secret.
    #[error("Signature mismatch.")]
    SignatureMismatch,

    /// No secret is configured, so nothing can be verified. This crate never returns it from
    /// [`Verifier::verify`](crate::Verifier::verify); a caller without a [`Verifier`](crate::Verifier)
    /// answers every delivery with it.
    #[error("Webhook secret is not configured.")]
    SecretNotConfigured,

    /// A secret given to [`Verifier::new`](crate::Verifier::new) or
    /// [`Verifier::with_previous`](crate::Verifier::with_previous) was empty or whitespace only.
    /// A configuration error, not a rejected delivery.
    #[error("Webhook secret must not be empty or whitespace only.")]
    EmptySecret,
}

impl Error {
    /// The client-facing sentence for the problem document's `detail` member.
    pub fn detail(&self) -> String {
        self.to_string()
    }

    /// A stable snake_case name for the variant (logs, metrics, test vectors).
    pub fn code(&self) -> &'static str {
        match self {
            Error::MissingHeader => "missing_header",
            Error::MalformedHeader => "malformed_header",
            Error::TimestampOutOfTolerance { .. } => "timestamp_out_of_tolerance",
            Error::SignatureMismatch => "signature_mismatch",
            Error::SecretNotConfigured => "secret_not_configured",
            Error::EmptySecret => "empty_secret",
        }
    }
}

fn describe_age(age_seconds: i64, tolerance: i64) -> String {
    let n = age_seconds.unsigned_abs();
    if age_seconds < 0 {
        format!("Webhook timestamp is {n} seconds in the future (tolerance: {tolerance}).")
    } else {
        format!("Webhook timestamp is {n} seconds old (tolerance: {tolerance}).")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_are_the_decided_texts() {
        assert_eq!(
            Error::MissingHeader.detail(),
            "Missing X-Webhook-Signature header."
        );
        assert_eq!(
            Error::MalformedHeader.detail(),
            "Malformed X-Webhook-Signature header."
        );
        assert_eq!(Error::SignatureMismatch.detail(), "Signature mismatch.");
        assert_eq!(
            Error::SecretNotConfigured.detail(),
            "Webhook secret is not configured."
        );
        assert_eq!(
            Error::TimestampOutOfTolerance {
                age_seconds: 301,
                tolerance: 300
            }
            .detail(),
            "Webhook timestamp is 301 seconds old (tolerance: 300)."
        );
        assert_eq!(
            Error::TimestampOutOfTolerance {
                age_seconds: -301,
                tolerance: 300
            }
            .detail(),
            "Webhook timestamp is 301 seconds in the future (tolerance: 300)."
        );
    }

    #[test]
    fn extreme_ages_do_not_overflow() {
        let e = Error::TimestampOutOfTolerance {
            age_seconds: i64::MIN,
            tolerance: 300,
        };
        assert_eq!(
            e.detail(),
            "Webhook timestamp is 9223372036854775808 seconds in the future (tolerance: 300)."
        );
        let e = Error::TimestampOutOfTolerance {
            age_seconds: i64::MAX,
            tolerance: 300,
        };
        assert!(e.detail().contains("9223372036854775807 seconds old"));
    }

    #[test]
    fn codes_are_distinct() {
        let all = [
            Error::MissingHeader,
            Error::MalformedHeader,
            Error::TimestampOutOfTolerance {
                age_seconds: 1,
                tolerance: 0,
            },
            Error::SignatureMismatch,
            Error::SecretNotConfigured,
            Error::EmptySecret,
        ];
        let mut codes: Vec<_> = all.iter().map(Error::code).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), all.len());
    }
}
