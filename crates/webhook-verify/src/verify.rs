use std::fmt;

use constant_time_eq::constant_time_eq;

use crate::sign::signature_hex;
use crate::{Error, SignatureHeader};

/// The spec's freshness window: `|now - t| <= 300` seconds, in either direction.
pub const DEFAULT_TOLERANCE_SECONDS: u32 = 300;

/// Checks `X-Webhook-Signature` headers against a current and an optional previous secret.
///
/// Its `Debug` output never shows a secret.
#[derive(Clone)]
pub struct Verifier {
    current: Secret,
    previous: Option<Secret>,
    tolerance: u32,
}

/// What a successful verification established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The header's `t`, in unix seconds.
    pub timestamp: i64,
    /// The header's `t` digits exactly as sent (what the signed string starts with; leading
    /// zeros are kept).
    pub timestamp_text: String,
    /// The header's `v1`, as received (lowercase hex). With the timestamp and the body it
    /// identifies an exact replay.
    pub signature: String,
    /// Which secret the signature matched.
    pub secret: SecretUsed,
}

/// Which configured secret a signature matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretUsed {
    Current,
    Previous,
}

impl Verifier {
    /// A verifier for `secret`, with the default tolerance of 300 seconds and no previous
    /// secret. The secret is used byte for byte (never trimmed); an empty or whitespace-only
    /// one is [`Error::EmptySecret`].
    pub fn new(secret: impl Into<Vec<u8>>) -> Result<Self, Error> {
        Ok(Self {
            current: Secret::new(secret.into())?,
            previous: None,
            tolerance: DEFAULT_TOLERANCE_SECONDS,
        })
    }

    /// Also accepts signatures made with `secret` (the one being rotated out). Empty or
    /// whitespace-only is [`Error::EmptySecret`].
    pub fn with_previous(mut self, secret: impl Into<Vec<u8>>) -> Result<Self, Error> {
        self.previous = Some(Secret::new(secret.into())?);
        Ok(self)
    }

    /// Replaces the freshness window (seconds either side of `now`).
    pub fn with_tolerance(mut self, seconds: u32) -> Self {
        self.tolerance = seconds;
        self
    }

    /// The freshness window in seconds.
    pub fn tolerance(&self) -> u32 {
        self.tolerance
    }

    /// Verifies one delivery.
    ///
    /// `header` is the `X-Webhook-Signature` value (`None` when absent), `body` the raw request
    /// bytes, `now` the current unix time in seconds. Checks run in this order, and the first
    /// failure is returned: header present, header well formed, timestamp fresh, signature
    /// matches the current or the previous secret (constant-time comparison of the hex text;
    /// uppercase hex does not match).
    pub fn verify(&self, header: Option<&str>, body: &[u8], now: i64) -> Result<Verified, Error> {
        let header = header.ok_or(Error::MissingHeader)?;
        let parsed = SignatureHeader::parse(header)?;
        let timestamp = self.check_freshness(&parsed, now)?;

        let received = parsed.v1().as_bytes();
        let matches = |secret: &Secret| {
            let expected = signature_hex(&secret.0, parsed.timestamp(), body);
            constant_time_eq(expected.as_bytes(), received)
        };
        let secret = if matches(&self.current) {
            SecretUsed::Current
        } else if self.previous.as_ref().is_some_and(matches) {
            SecretUsed::Previous
        } else {
            return Err(Error::SignatureMismatch);
        };
        Ok(Verified {
            timestamp,
            timestamp_text: parsed.timestamp().to_owned(),
            signature: parsed.v1().to_owned(),
            secret,
        })
    }

    fn check_freshness(&self, parsed: &SignatureHeader<'_>, now: i64) -> Result<i64, Error> {
        // Both sides fit an i128 (t < 10^20), so the difference cannot overflow.
        let age = i128::from(now) - i128::try_from(parsed.timestamp_value()).unwrap_or(i128::MAX);
        let out_of_tolerance = || Error::TimestampOutOfTolerance {
            age_seconds: i64::try_from(age.clamp(-i128::from(i64::MAX), i128::from(i64::MAX)))
                .unwrap_or(i64::MAX),
            tolerance: i64::from(self.tolerance),
        };
        if age.unsigned_abs() > u128::from(self.tolerance) {
            return Err(out_of_tolerance());
        }
        // Within the tolerance of an i64 `now`; only `now` near i64::MAX could push it past.
        i64::try_from(parsed.timestamp_value()).map_err(|_| out_of_tolerance())
    }
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier")
            .field("current", &self.current)
            .field("previous", &self.previous)
            .field("tolerance", &self.tolerance)
            .finish()
    }
}

/// Secret bytes whose `Debug` prints `***`.
#[derive(Clone)]
struct Secret(Vec<u8>);

impl Secret {
    fn new(bytes: Vec<u8>) -> Result<Self, Error> {
        let blank = match std::str::from_utf8(&bytes) {
            Ok(text) => text.trim().is_empty(),
            Err(_) => bytes.iter().all(u8::is_ascii_whitespace),
        };
        if blank {
            return Err(Error::EmptySecret);
        }
        Ok(Self(bytes))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{header, sign};

    const NOW: i64 = 1_700_000_000;
    const BODY: &[u8] = br#"{"event_type":"note.created"}"#;

    fn verifier() -> Verifier {
        Verifier::new("current-secret").unwrap()
    }

    #[test]
    fn accepts_a_fresh_correct_signature() {
        let h = header(b"current-secret", NOW, BODY);
        let v = verifier().verify(Some(&h), BODY, NOW).unwrap();
        assert_eq!(v.timestamp, NOW);
        assert_eq!(v.timestamp_text, NOW.to_string());
        assert_eq!(v.signature, sign(b"current-secret", NOW, BODY));
        assert_eq!(v.secret, SecretUsed::Current);
    }

    #[test]
    fn missing_header() {
        assert_eq!(
            verifier().verify(None, BODY, NOW),
            Err(Error::MissingHeader)
        );
    }

    #[test]
    fn rejects_empty_and_blank_secrets() {
        for blank in ["", " ", "\t\r\n", "\u{a0}\u{2003}"] {
            assert_eq!(
                Verifier::new(blank).map(|_| ()),
                Err(Error::EmptySecret),
                "{blank:?}"
            );
            assert_eq!(
                verifier().with_previous(blank).map(|_| ()),
                Err(Error::EmptySecret),
                "{blank:?}"
            );
        }
        assert_eq!(Verifier::new(vec![b' ', 0xff]).map(|_| ()), Ok(()));
        assert_eq!(Verifier::new(" s ").map(|_| ()), Ok(()));
    }

    #[test]
    fn secret_is_not_trimmed() {
        let v = Verifier::new(" s ").unwrap();
        let h = header(b"s", NOW, BODY);
        assert_eq!(v.verify(Some(&h), BODY, NOW), Err(Error::SignatureMismatch));
        let h = header(b" s ", NOW, BODY);
        assert!(v.verify(Some(&h), BODY, NOW).is_ok());
    }

    #[test]
    fn tolerance_boundaries_in_both_directions() {
        let v = verifier();
        for offset in [-300, -299, 0, 299, 300] {
            let h = header(b"current-secret", NOW + offset, BODY);
            assert!(v.verify(Some(&h), BODY, NOW).is_ok(), "{offset}");
        }
        let h = header(b"current-secret", NOW - 301, BODY);
        assert_eq!(
            v.verify(Some(&h), BODY, NOW),
            Err(Error::TimestampOutOfTolerance {
                age_seconds: 301,
                tolerance: 300
            })
        );
        let h = header(b"current-secret", NOW + 301, BODY);
        assert_eq!(
            v.verify(Some(&h), BODY, NOW),
            Err(Error::TimestampOutOfTolerance {
                age_seconds: -301,
                tolerance: 300
            })
        );
    }

    #[test]
    fn custom_tolerance() {
        let v = verifier().with_tolerance(10);
        assert_eq!(v.tolerance(), 10);
        let h = header(b"current-secret", NOW - 11, BODY);
        assert_eq!(
            v.verify(Some(&h), BODY, NOW),
            Err(Error::TimestampOutOfTolerance {
                age_seconds: 11,
                tolerance: 10
            })
        );
        let v = verifier().with_tolerance(0);
        let h = header(b"current-secret", NOW, BODY);
        assert!(v.verify(Some(&h), BODY, NOW).is_ok());
    }

    #[test]
    fn absurd_timestamps_never_panic() {
        let v = verifier();
        let sig = sign(b"current-secret", 0, BODY);
        let h = format!("t=99999999999999999999,v1={sig}");
        assert_eq!(
            v.verify(Some(&h), BODY, NOW),
            Err(Error::TimestampOutOfTolerance {
                age_seconds: -i64::MAX,
                tolerance: 300
            })
        );
        for now in [i64::MIN, -1, 0, i64::MAX] {
            let _ = v.verify(Some(&h), BODY, now);
            let _ = v.verify(Some("t=0,v1=a"), BODY, now);
            let _ = v.verify(Some("t=18446744073709551615,v1=a"), BODY, now);
            let _ = v.verify(Some("t=9223372036854775808,v1=a"), BODY, now);
        }
        // A timestamp just past i64::MAX but within tolerance of `now`.
        let h = "t=9223372036854775808,v1=a";
        assert_eq!(
            v.verify(Some(h), BODY, i64::MAX),
            Err(Error::TimestampOutOfTolerance {
                age_seconds: -1,
                tolerance: 300
            })
        );
        let h = header(b"current-secret", i64::MAX, BODY);
        assert!(v.verify(Some(&h), BODY, i64::MAX).is_ok());
    }

    #[test]
    fn freshness_is_checked_before_the_signature() {
        let h = format!("t={},v1=nonsense", NOW - 1000);
        assert_eq!(
            verifier().verify(Some(&h), BODY, NOW),
            Err(Error::TimestampOutOfTolerance {
                age_seconds: 1000,
                tolerance: 300
            })
        );
    }

    #[test]
    fn previous_secret_is_accepted_only_when_configured() {
        let h = header(b"old-secret", NOW, BODY);
        assert_eq!(
            verifier().verify(Some(&h), BODY, NOW),
            Err(Error::SignatureMismatch)
        );
        let v = verifier().with_previous("old-secret").unwrap();
        assert_eq!(
            v.verify(Some(&h), BODY, NOW).unwrap().secret,
            SecretUsed::Previous
        );
        let h = header(b"current-secret", NOW, BODY);
        assert_eq!(
            v.verify(Some(&h), BODY, NOW).unwrap().secret,
            SecretUsed::Current
        );
    }

    #[test]
    fn uppercase_and_wrong_length_signatures_do_not_match() {
        let sig = sign(b"current-secret", NOW, BODY);
        for bad in [
            sig.to_uppercase(),
            sig[..63].to_owned(),
            format!("{sig}0"),
            sig.repeat(2),
        ] {
            let h = format!("t={NOW},v1={bad}");
            assert_eq!(
                verifier().verify(Some(&h), BODY, NOW),
                Err(Error::SignatureMismatch)
            );
        }
    }

    #[test]
    fn signed_string_uses_the_header_digits_verbatim() {
        let sig = sign(b"current-secret", NOW, BODY);
        let h = format!("t=0{NOW},v1={sig}");
        assert_eq!(
            verifier().verify(Some(&h), BODY, NOW),
            Err(Error::SignatureMismatch)
        );
        let padded = signature_hex(b"current-secret", &format!("0{NOW}"), BODY);
        let h = format!("t=0{NOW},v1={padded}");
        assert_eq!(
            verifier().verify(Some(&h), BODY, NOW).unwrap().timestamp,
            NOW
        );
    }

    #[test]
    fn debug_hides_secrets() {
        let v = verifier().with_previous("old-secret").unwrap();
        let shown = format!("{v:?}");
        assert_eq!(
            shown,
            "Verifier { current: ***, previous: Some(***), tolerance: 300 }"
        );
        assert!(!format!("{v:#?}").contains("secret\""));
    }

    #[test]
    fn errors_never_contain_the_expected_signature() {
        let expected = sign(b"current-secret", NOW, b"other");
        let h = format!("t={NOW},v1=00");
        let err = verifier().verify(Some(&h), b"other", NOW).unwrap_err();
        assert!(!err.detail().contains(&expected));
        assert!(!format!("{err:?}").contains(&expected));
    }
}
