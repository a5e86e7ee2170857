use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The `v1` value for `body` sent at `timestamp`: lowercase hex HMAC-SHA256 of
/// `"<timestamp>.<body>"` under `secret`.
///
/// The timestamp is written in plain decimal. A negative timestamp signs fine but cannot be
/// carried in a header (`t` must be digits), so such a delivery never verifies.
pub fn sign(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    signature_hex(secret, &timestamp.to_string(), body)
}

/// A complete header value, `t=<timestamp>,v1=<sign(secret, timestamp, body)>`, for senders
/// and tests.
pub fn header(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    format!("t={timestamp},v1={}", sign(secret, timestamp, body))
}

/// Lowercase hex HMAC-SHA256 of `"<timestamp>.<body>"`, with `timestamp` used verbatim.
pub(crate) fn signature_hex(secret: &[u8], timestamp: &str, body: &[u8]) -> String {
    let Ok(mut mac) = HmacSha256::new_from_slice(secret) else {
        // HMAC takes keys of any length (longer ones are hashed first); `hmac` only keeps the
        // `Result` for the generic `KeyInit` trait.
        unreachable!("HMAC-SHA256 accepts keys of any length")
    };
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_an_independent_implementation() {
        // Computed with Python: hmac.new(key, b"1700000000." + body, hashlib.sha256).hexdigest()
        assert_eq!(
            sign(
                b"whsec_test_secret",
                1_700_000_000,
                br#"{"event_type":"note.created"}"#
            ),
            "25c06c6a31891e4dd95ad78f36588a192965e6082855b9f36c8b92c66a634de0"
        );
    }

    #[test]
    fn signs_timestamp_dot_body() {
        let mut mac = HmacSha256::new_from_slice(b"k").unwrap();
        mac.update(b"1700000000.{}");
        let expected = hex::encode(mac.finalize().into_bytes());
        assert_eq!(sign(b"k", 1_700_000_000, b"{}"), expected);
        assert_eq!(
            header(b"k", 1_700_000_000, b"{}"),
            format!("t=1700000000,v1={expected}")
        );
    }

    #[test]
    fn signature_is_64_lowercase_hex_digits() {
        let s = sign(b"secret", 0, b"");
        assert_eq!(s.len(), 64);
        assert!(s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
    }

    #[test]
    fn long_keys_work() {
        let key = vec![7u8; 200];
        assert_eq!(sign(&key, 1, b"x").len(), 64);
        assert_ne!(sign(&key, 1, b"x"), sign(&key[..199], 1, b"x"));
    }
}
