//! Fuzzes the `X-Webhook-Signature` parser and the verifier with arbitrary header text, body
//! bytes and clock values. Beyond "never panics", it checks the invariants the server relies on:
//!
//! - `parse` succeeds exactly when the header follows the rules (every part has `=`; the final
//!   `t` is 1 to 20 ASCII digits; the final `v1` is non-empty), and returns those final values;
//! - `verify` fails on any header that does not parse, and on success reports the header's own
//!   `t` and `v1`, with `|now - t| <= 300`;
//! - a header signed by `header()` for `(secret, now, body)` always verifies, and no error's
//!   detail ever contains the expected signature.
#![no_main]

use libfuzzer_sys::fuzz_target;
use webhook_verify::{Error, SignatureHeader, Verifier, header, sign};

/// The spec's parsing rules, written independently of the crate.
fn reference_parse(value: &str) -> Option<(&str, &str)> {
    let (mut t, mut v1) = (None, None);
    for part in value.split(',') {
        let (k, v) = part.split_once('=')?;
        match k {
            "t" => t = Some(v),
            "v1" => v1 = Some(v),
            _ => {}
        }
    }
    let (t, v1) = (t?, v1?);
    let t_ok = (1..=20).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_digit());
    (t_ok && !v1.is_empty()).then_some((t, v1))
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 9 {
        return;
    }
    let now = i64::from_le_bytes(data[..8].try_into().unwrap_or_default());
    let rest = &data[8..];
    // Header text up to the first 0xFF byte, the body after it.
    let split = rest.iter().position(|b| *b == 0xFF).unwrap_or(rest.len());
    let (head, body) = (&rest[..split], rest.get(split + 1..).unwrap_or_default());
    let Ok(head) = std::str::from_utf8(head) else {
        return;
    };

    let parsed = SignatureHeader::parse(head);
    let reference = reference_parse(head);
    match (&parsed, reference) {
        (Ok(h), Some((t, v1))) => {
            assert_eq!((h.timestamp(), h.v1()), (t, v1));
            assert_eq!(h.timestamp_value(), t.parse::<u128>().unwrap_or(u128::MAX));
        }
        (Err(e), None) => assert_eq!(*e, Error::MalformedHeader),
        (p, r) => panic!("parser disagrees with the rules for {head:?}: {p:?} vs {r:?}"),
    }

    let secret = b"fuzz-secret";
    let verifier = match Verifier::new(&secret[..]) {
        Ok(v) => v,
        Err(_) => return,
    };
    match verifier.verify(Some(head), body, now) {
        Ok(v) => {
            let h = parsed.unwrap_or_else(|_| panic!("verified an unparsable header {head:?}"));
            assert_eq!(v.signature, h.v1());
            assert_eq!(u128::try_from(v.timestamp).ok(), Some(h.timestamp_value()));
            assert!((i128::from(now) - i128::from(v.timestamp)).abs() <= 300);
        }
        Err(e) => {
            if parsed.is_err() {
                assert_eq!(e, Error::MalformedHeader);
            }
            if now >= 0 {
                let expected = sign(secret, now, body);
                assert!(!e.detail().contains(&expected));
                assert!(!format!("{e:?}").contains(&expected));
            }
        }
    }

    // A correctly signed delivery always verifies (timestamps a header can carry: now >= 0).
    if now >= 0 {
        let good = header(secret, now, body);
        assert!(verifier.verify(Some(&good), body, now).is_ok());
        assert_eq!(verifier.verify(None, body, now), Err(Error::MissingHeader));
    }
});
