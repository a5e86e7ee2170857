//! Runs every case of `tests/vectors.json` through the public API.
//!
//! The file is meant to be shared: any implementation of the scheme (a sender, another
//! service, a client library) can check itself against the same cases.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use webhook_verify::{SignatureHeader, Verifier};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Vector {
    name: String,
    secret: String,
    #[serde(default)]
    previous_secret: Option<String>,
    header: Option<String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    body_base64: Option<String>,
    now: i64,
    expected: String,
}

impl Vector {
    fn body(&self) -> Vec<u8> {
        match (&self.body, &self.body_base64) {
            (Some(text), None) => text.as_bytes().to_vec(),
            (None, Some(b64)) => STANDARD.decode(b64).unwrap(),
            _ => panic!(
                "{}: exactly one of body and body_base64 is required",
                self.name
            ),
        }
    }
}

fn vectors() -> Vec<Vector> {
    let text = include_str!("vectors.json");
    serde_json::from_str(text).unwrap()
}

#[test]
fn there_are_enough_vectors_with_unique_names() {
    let vectors = vectors();
    assert!(vectors.len() >= 40, "only {} vectors", vectors.len());
    let mut names: Vec<_> = vectors.iter().map(|v| v.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), vectors.len(), "vector names must be unique");
}

#[test]
fn every_outcome_is_covered() {
    let vectors = vectors();
    for expected in [
        "ok",
        "missing_header",
        "malformed_header",
        "timestamp_out_of_tolerance",
        "signature_mismatch",
    ] {
        assert!(
            vectors.iter().any(|v| v.expected == expected),
            "no {expected} vector"
        );
    }
}

#[test]
fn every_vector_verifies_as_expected() {
    let mut failures = Vec::new();
    for v in vectors() {
        let mut verifier = Verifier::new(v.secret.as_str()).unwrap();
        if let Some(previous) = &v.previous_secret {
            verifier = verifier.with_previous(previous.as_str()).unwrap();
        }
        let body = v.body();
        let result = verifier.verify(v.header.as_deref(), &body, v.now);
        let got = match &result {
            Ok(_) => "ok",
            Err(e) => e.code(),
        };
        if got != v.expected {
            failures.push(format!(
                "{}: expected {}, got {got} ({result:?})",
                v.name, v.expected
            ));
            continue;
        }
        if let Ok(verified) = result {
            // What the server keeps for replay detection is the header's own (t, v1).
            let header = v.header.as_deref().unwrap();
            let parsed = SignatureHeader::parse(header).unwrap();
            assert_eq!(verified.signature, parsed.v1(), "{}", v.name);
            assert_eq!(
                u128::try_from(verified.timestamp).unwrap(),
                parsed.timestamp_value(),
                "{}",
                v.name
            );
        }
    }
    assert!(
        failures.is_empty(),
        "failing vectors:\n{}",
        failures.join("\n")
    );
}

#[test]
fn every_error_detail_is_a_decided_text() {
    for v in vectors() {
        let verifier = Verifier::new(v.secret.as_str()).unwrap();
        let Err(e) = verifier.verify(v.header.as_deref(), &v.body(), v.now) else {
            continue;
        };
        let detail = e.detail();
        let known = [
            "Missing X-Webhook-Signature header.",
            "Malformed X-Webhook-Signature header.",
            "Signature mismatch.",
        ]
        .contains(&detail.as_str())
            || (detail.starts_with("Webhook timestamp is ")
                && (detail.ends_with(" seconds old (tolerance: 300).")
                    || detail.ends_with(" seconds in the future (tolerance: 300).")));
        assert!(known, "{}: unexpected detail {detail:?}", v.name);
    }
}
