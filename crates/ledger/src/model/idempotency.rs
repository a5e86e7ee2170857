//! `Idempotency-Key`: the key and the fingerprint of the request it came with.

use problem_details::{FieldError, FieldErrorCode};
use serde_json::{Map, Value};

use super::IDEMPOTENCY_KEY_MAX;
use crate::Error;

/// An `Idempotency-Key` with the fingerprint of the request it came with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey {
    pub(crate) key: String,
    pub(crate) fingerprint: String,
}

impl IdempotencyKey {
    /// `scope` names the operation (and its target), `body` is the request body; the same key
    /// with another scope or body is a different request (409).
    pub fn new(raw: &str, scope: &str, body: &Map<String, Value>) -> Result<Self, Error> {
        let valid = (1..=IDEMPOTENCY_KEY_MAX).contains(&raw.len())
            && raw.bytes().all(|b| (0x21..=0x7e).contains(&b));
        if !valid {
            return Err(Error::Validation(vec![FieldError::new(
                "Idempotency-Key",
                FieldErrorCode::Invalid,
                "Idempotency-Key must be 1 to 255 visible ASCII characters",
            )]));
        }
        use sha2::Digest;
        let mut hasher = sha2::Sha256::new();
        hasher.update(scope.as_bytes());
        hasher.update(b"\n");
        hasher.update(canonical(&Value::Object(body.clone())).as_bytes());
        Ok(IdempotencyKey {
            key: raw.to_owned(),
            fingerprint: hex::encode(hasher.finalize()),
        })
    }

    pub fn key(&self) -> &str {
        &self.key
    }
}

/// JSON text with object members sorted, whatever map order serde_json was built with.
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<_> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let inner: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), canonical(v)))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", inner.join(","))
        }
        other => other.to_string(),
    }
}
