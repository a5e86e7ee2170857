//! Property tests over the public API.

use proptest::prelude::*;
use webhook_verify::{Error, SignatureHeader, Verifier, header, sign};

const SECRET: &str = "property-secret";

proptest! {
    #[test]
    fn parsing_never_panics(value in any::<String>()) {
        let _ = SignatureHeader::parse(&value);
    }

    #[test]
    fn parsing_header_like_strings_never_panics(
        value in r"(t|v1|v0|T|x|)(=[0-9a-f+\- =]{0,30})?(,(t|v1|v0|T|x|)(=[0-9a-f+\- =]{0,30})?){0,4}"
    ) {
        let _ = SignatureHeader::parse(&value);
    }

    #[test]
    fn verify_never_panics(value in any::<String>(), body in any::<Vec<u8>>(), now in any::<i64>()) {
        let verifier = Verifier::new(SECRET).unwrap();
        let result = verifier.verify(Some(&value), &body, now);
        prop_assert!(result.is_err() || value.contains("v1="));
    }

    #[test]
    fn verify_never_panics_on_extreme_timestamps(
        t in "[0-9]{1,20}",
        now in any::<i64>(),
        tolerance in any::<u32>(),
    ) {
        let verifier = Verifier::new(SECRET).unwrap().with_tolerance(tolerance);
        let _ = verifier.verify(Some(&format!("t={t},v1=00")), b"", now);
    }

    #[test]
    fn accepted_headers_have_the_documented_shape(value in any::<String>()) {
        if let Ok(h) = SignatureHeader::parse(&value) {
            prop_assert!(!h.timestamp().is_empty() && h.timestamp().len() <= 20);
            prop_assert!(h.timestamp().bytes().all(|b| b.is_ascii_digit()));
            prop_assert!(!h.v1().is_empty());
        }
    }

    #[test]
    fn sign_then_verify_round_trips(
        body in any::<Vec<u8>>(),
        now in 0i64..=4_102_444_800,
        offset in -300i64..=300,
    ) {
        let t = now + offset;
        let verifier = Verifier::new(SECRET).unwrap();
        let h = header(SECRET.as_bytes(), t, &body);
        let verified = verifier.verify(Some(&h), &body, now).unwrap();
        prop_assert_eq!(verified.timestamp, t);
        prop_assert_eq!(verified.signature, sign(SECRET.as_bytes(), t, &body));
    }

    #[test]
    fn outside_the_tolerance_is_rejected(
        body in any::<Vec<u8>>(),
        now in 1_000_000i64..=4_102_444_800,
        distance in 301i64..=1_000_000,
        future in any::<bool>(),
    ) {
        let t = if future { now + distance } else { now - distance };
        let verifier = Verifier::new(SECRET).unwrap();
        let h = header(SECRET.as_bytes(), t, &body);
        let expected_age = if future { -distance } else { distance };
        prop_assert_eq!(
            verifier.verify(Some(&h), &body, now),
            Err(Error::TimestampOutOfTolerance { age_seconds: expected_age, tolerance: 300 })
        );
    }

    #[test]
    fn any_single_byte_change_fails(
        body in prop::collection::vec(any::<u8>(), 1..512),
        index in any::<prop::sample::Index>(),
        delta in 1u8..=255,
    ) {
        let t = 1_700_000_000;
        let h = header(SECRET.as_bytes(), t, &body);
        let mut tampered = body.clone();
        let i = index.index(tampered.len());
        tampered[i] = tampered[i].wrapping_add(delta);
        let verifier = Verifier::new(SECRET).unwrap();
        prop_assert_eq!(verifier.verify(Some(&h), &tampered, t), Err(Error::SignatureMismatch));
    }

    #[test]
    fn appending_or_truncating_fails(body in any::<Vec<u8>>(), extra in any::<u8>()) {
        let t = 1_700_000_000;
        let h = header(SECRET.as_bytes(), t, &body);
        let verifier = Verifier::new(SECRET).unwrap();
        let mut longer = body.clone();
        longer.push(extra);
        prop_assert_eq!(verifier.verify(Some(&h), &longer, t), Err(Error::SignatureMismatch));
        if let Some((_, shorter)) = body.split_last() {
            prop_assert_eq!(verifier.verify(Some(&h), shorter, t), Err(Error::SignatureMismatch));
        }
    }

    #[test]
    fn a_different_secret_fails(secret in "[ -~]{1,80}", body in any::<Vec<u8>>()) {
        prop_assume!(secret != SECRET && !secret.trim().is_empty());
        let t = 1_700_000_000;
        let h = header(secret.as_bytes(), t, &body);
        let verifier = Verifier::new(SECRET).unwrap();
        prop_assert_eq!(verifier.verify(Some(&h), &body, t), Err(Error::SignatureMismatch));
    }
}
