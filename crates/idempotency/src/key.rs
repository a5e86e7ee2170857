//! `Idempotency-Key`: the key and the fingerprint of the request it came with.

use serde_json::{Map, Value};

/// Idempotency keys: 1 ..= 255 visible ASCII characters.
pub const KEY_MAX: usize = 255;

/// A key that is not 1 to 255 visible ASCII characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("Idempotency-Key must be 1 to 255 visible ASCII characters")]
pub struct InvalidKey;

/// What a key is bound to besides the body, spelled one way for every create: its operation
/// id, then the path parameters that name its target, `:`-separated (`create_note`,
/// `create_comment:5`, `append_event:acc-1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    spelled: String,
    /// How an earlier release spelled it (see [`Scope::formerly`]).
    former: Option<&'static str>,
}

impl Scope {
    pub fn of(operation_id: &str, params: &[&str]) -> Scope {
        let spelled = std::iter::once(operation_id)
            .chain(params.iter().copied())
            .collect::<Vec<_>>()
            .join(":");
        Scope {
            spelled,
            former: None,
        }
    }

    /// Records an earlier release wrote under `former` (its spelling of this scope) still
    /// match, so that a retry across the upgrade replays instead of being refused as reused.
    /// Such records expire with the TTL: a release made a TTL after this one can drop it.
    pub fn formerly(self, former: &'static str) -> Scope {
        Scope {
            former: Some(former),
            ..self
        }
    }

    pub fn as_str(&self) -> &str {
        &self.spelled
    }
}

/// An `Idempotency-Key` with the fingerprint of the request it came with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    key: String,
    fingerprint: String,
    /// The fingerprint under the scope's former spelling, if it has one.
    former: Option<String>,
}

impl Key {
    /// `scope` names the operation (and its target), `body` is the request body; the same key
    /// with another scope or body is a different request. Member order does not matter.
    pub fn new(raw: &str, scope: &str, body: &Map<String, Value>) -> Result<Self, InvalidKey> {
        let valid =
            (1..=KEY_MAX).contains(&raw.len()) && raw.bytes().all(|b| (0x21..=0x7e).contains(&b));
        if !valid {
            return Err(InvalidKey);
        }
        Ok(Key {
            key: raw.to_owned(),
            fingerprint: fingerprint(scope, body),
            former: None,
        })
    }

    /// [`Key::new`] under a [`Scope`], matching its former spelling too.
    pub fn scoped(raw: &str, scope: &Scope, body: &Map<String, Value>) -> Result<Self, InvalidKey> {
        Ok(Key {
            former: scope.former.map(|former| fingerprint(former, body)),
            ..Key::new(raw, scope.as_str(), body)?
        })
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    /// SHA-256 (hex) of the scope and the canonical body.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Whether a record stored with `fingerprint` came with this very request.
    pub fn matches(&self, fingerprint: &str) -> bool {
        self.fingerprint == fingerprint || self.former.as_deref() == Some(fingerprint)
    }
}

fn fingerprint(scope: &str, body: &Map<String, Value>) -> String {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    hasher.update(scope.as_bytes());
    hasher.update(b"\n");
    hasher.update(canonical(&Value::Object(body.clone())).as_bytes());
    hex::encode(hasher.finalize())
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn fingerprints_ignore_member_order_but_not_scope_or_values() {
        let a = Key::new("k", "open", &obj(json!({"a": 1, "b": {"y": 1, "x": 2}})));
        let b = Key::new("k", "open", &obj(json!({"b": {"x": 2, "y": 1}, "a": 1})));
        assert_eq!(a.unwrap(), b.unwrap());
        let c = Key::new("k", "open", &obj(json!({"a": 2}))).unwrap();
        let d = Key::new("k", "append:x", &obj(json!({"a": 2}))).unwrap();
        let e = Key::new("k", "open", &obj(json!({"a": 3}))).unwrap();
        assert_ne!(c.fingerprint(), d.fingerprint());
        assert_ne!(c.fingerprint(), e.fingerprint());
        assert_eq!(c.key(), "k");
    }

    #[test]
    fn keys_are_1_to_255_visible_ascii_characters() {
        assert_eq!(Key::new("", "s", &Map::new()), Err(InvalidKey));
        assert_eq!(Key::new("a b", "s", &Map::new()), Err(InvalidKey));
        assert_eq!(Key::new("é", "s", &Map::new()), Err(InvalidKey));
        assert_eq!(
            Key::new(&"k".repeat(256), "s", &Map::new()),
            Err(InvalidKey)
        );
        assert!(Key::new(&"k".repeat(255), "s", &Map::new()).is_ok());
        assert!(Key::new("!~", "s", &Map::new()).is_ok());
    }

    #[test]
    fn a_scope_is_spelled_one_way_and_matches_its_former_spelling() {
        assert_eq!(Scope::of("create_note", &[]).as_str(), "create_note");
        assert_eq!(
            Scope::of("create_comment", &["5"]).as_str(),
            "create_comment:5"
        );
        let body = obj(json!({"title": "t"}));
        let before = Key::new("k", "/notes", &body).unwrap();
        let now = Key::scoped(
            "k",
            &Scope::of("create_note", &[]).formerly("/notes"),
            &body,
        )
        .unwrap();
        assert_ne!(now.fingerprint(), before.fingerprint());
        assert!(
            now.matches(before.fingerprint()),
            "a record of the former spelling"
        );
        assert!(now.matches(now.fingerprint()));
        let other = Key::new("k", "/tags", &body).unwrap();
        assert!(!now.matches(other.fingerprint()));
        let plain = Key::scoped("k", &Scope::of("create_note", &[]), &body).unwrap();
        assert!(!plain.matches(before.fingerprint()));
    }
}
