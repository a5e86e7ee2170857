use crate::Error;

/// The HTTP header that carries the signature.
pub const HEADER_NAME: &str = "X-Webhook-Signature";

/// The longest `t` accepted; a longer one is malformed, whatever its numeric value.
pub const MAX_TIMESTAMP_DIGITS: usize = 20;

/// A well-formed `X-Webhook-Signature` value, borrowed from the header text.
///
/// Parsing checks shape only; freshness and the signature are checked by
/// [`Verifier::verify`](crate::Verifier::verify).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignatureHeader<'a> {
    timestamp: &'a str,
    v1: &'a str,
}

impl<'a> SignatureHeader<'a> {
    /// Parses a header value.
    ///
    /// 1. Split on `,`. Every part must contain `=`; a part without one (an empty part from
    ///    a leading, doubled or trailing comma included) makes the header malformed.
    /// 2. Split each part on its first `=` into key and value. Keys are case-sensitive and
    ///    nothing is trimmed. Keys other than `t` and `v1` are ignored.
    /// 3. A later `t` or `v1` overwrites an earlier one; the checks below apply to the final
    ///    values only.
    /// 4. Both `t` and `v1` must be present; `t` must be 1 to 20 ASCII digits; `v1` must be
    ///    non-empty.
    pub fn parse(value: &'a str) -> Result<Self, Error> {
        let mut timestamp = None;
        let mut v1 = None;
        for part in value.split(',') {
            let Some((key, val)) = part.split_once('=') else {
                return Err(Error::MalformedHeader);
            };
            match key {
                "t" => timestamp = Some(val),
                "v1" => v1 = Some(val),
                _ => {}
            }
        }
        let (Some(timestamp), Some(v1)) = (timestamp, v1) else {
            return Err(Error::MalformedHeader);
        };
        let digits_ok = !timestamp.is_empty()
            && timestamp.len() <= MAX_TIMESTAMP_DIGITS
            && timestamp.bytes().all(|b| b.is_ascii_digit());
        if !digits_ok || v1.is_empty() {
            return Err(Error::MalformedHeader);
        }
        Ok(Self { timestamp, v1 })
    }

    /// The `t` digits exactly as they appear in the header (leading zeros kept); this is
    /// what the signed string starts with.
    pub fn timestamp(&self) -> &'a str {
        self.timestamp
    }

    /// The numeric value of `t`. Up to 20 digits always fit in a `u128`.
    pub fn timestamp_value(&self) -> u128 {
        // Only ASCII digits, at most 20 of them: no overflow is possible (10^20 < 2^128).
        self.timestamp
            .bytes()
            .fold(0u128, |acc, b| acc * 10 + u128::from(b - b'0'))
    }

    /// The `v1` value as received (not validated as hex).
    pub fn v1(&self) -> &'a str {
        self.v1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<(&str, &str), Error> {
        SignatureHeader::parse(s).map(|h| (h.timestamp(), h.v1()))
    }

    #[test]
    fn parses_the_plain_form() {
        assert_eq!(parse("t=1700000000,v1=abc"), Ok(("1700000000", "abc")));
        assert_eq!(parse("v1=abc,t=1700000000"), Ok(("1700000000", "abc")));
    }

    #[test]
    fn later_keys_overwrite_earlier_ones() {
        assert_eq!(parse("t=1,v1=a,v1=b"), Ok(("1", "b")));
        assert_eq!(parse("t=x,t=2,v1=a"), Ok(("2", "a")));
        assert_eq!(parse("t=2,v1=a,t=x"), Err(Error::MalformedHeader));
        assert_eq!(parse("t=2,v1=a,v1="), Err(Error::MalformedHeader));
        assert_eq!(parse("t=2,v1=,v1=a"), Ok(("2", "a")));
    }

    #[test]
    fn splits_on_the_first_equals_sign_only() {
        assert_eq!(parse("t=1,v1=a=b="), Ok(("1", "a=b=")));
        assert_eq!(parse("t=1=2,v1=a"), Err(Error::MalformedHeader));
    }

    #[test]
    fn unknown_keys_are_ignored() {
        assert_eq!(parse("v0=zz,t=1,v1=a,x="), Ok(("1", "a")));
        assert_eq!(parse("=,t=1,v1=a"), Ok(("1", "a")));
    }

    #[test]
    fn malformed_forms() {
        for bad in [
            "",
            ",",
            "t=1",
            "v1=a",
            "t=1,v1=",
            "t=,v1=a",
            "t=+1,v1=a",
            "t=-1,v1=a",
            "t= 1,v1=a",
            "t=1 ,v1=a",
            "t=1, v1=a",
            " t=1,v1=a",
            "t =1,v1=a",
            "T=1,V1=a",
            "t=1.5,v1=a",
            "t=0x10,v1=a",
            "t=\u{661}\u{662},v1=a",
            "t=1,v1=a,",
            ",t=1,v1=a",
            "t=1,,v1=a",
            "t=1,v1=a,junk",
            "t=123456789012345678901,v1=a",
        ] {
            assert_eq!(parse(bad), Err(Error::MalformedHeader), "{bad:?}");
        }
    }

    #[test]
    fn timestamp_length_limit_is_twenty_digits() {
        let twenty = "9".repeat(20);
        let value = format!("t={twenty},v1=a");
        let h = SignatureHeader::parse(&value).unwrap();
        assert_eq!(h.timestamp_value(), 99_999_999_999_999_999_999);
        let twenty_one = "0".repeat(21);
        assert_eq!(
            parse(&format!("t={twenty_one},v1=a")),
            Err(Error::MalformedHeader)
        );
    }

    #[test]
    fn leading_zeros_are_kept_verbatim() {
        let h = SignatureHeader::parse("t=0042,v1=a").unwrap();
        assert_eq!(h.timestamp(), "0042");
        assert_eq!(h.timestamp_value(), 42);
    }
}
