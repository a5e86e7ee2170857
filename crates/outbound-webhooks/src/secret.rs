//! Each endpoint's signing secret, `whsec_<base64>` as Standard Webhooks has it, derived from
//! the operator's `WEBHOOK_SIGNING_KEY` and the endpoint's id, random salt and secret version:
//! `HMAC-SHA256(key, "endpoint-secret:<id>:<salt>:<version>")`. Nothing secret is stored: the
//! database holds the version alone, and rotating a secret is counting the version up. A
//! leaked database copy signs nothing; a leaked key signs for every endpoint (rotate it with
//! every endpoint's secret, docs/events.md).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The shortest signing key accepted (bytes).
pub const MIN_KEY_BYTES: usize = 32;

/// The operator's key every endpoint secret is derived from.
#[derive(Clone)]
pub struct SigningKey(Vec<u8>);

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(***)")
    }
}

impl SigningKey {
    /// `None` when the key is shorter than [`MIN_KEY_BYTES`].
    pub fn new(key: impl Into<Vec<u8>>) -> Option<SigningKey> {
        let key = key.into();
        (key.len() >= MIN_KEY_BYTES).then_some(SigningKey(key))
    }

    /// The `whsec_` secret of endpoint `id` (with its `salt`) at `version`.
    pub fn endpoint_secret(&self, id: i64, salt: &str, version: i64) -> String {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        mac.update(format!("endpoint-secret:{id}:{salt}:{version}").as_bytes());
        format!("whsec_{}", STANDARD.encode(mac.finalize().into_bytes()))
    }

    /// The `webhook-signature` value of a message: `v1,<base64>` with the endpoint's current
    /// secret, and with the previous one too (space-separated) while a rotation's grace lasts,
    /// signed by the Standard Webhooks reference library.
    pub fn signature(
        &self,
        id: i64,
        salt: &str,
        versions: &[i64],
        message_id: &str,
        timestamp: i64,
        body: &[u8],
    ) -> Result<String, String> {
        let mut out = Vec::with_capacity(versions.len());
        for version in versions {
            let webhook = standardwebhooks::Webhook::new(&self.endpoint_secret(id, salt, *version))
                .map_err(|e| format!("signing key: {e}"))?;
            let signature = webhook
                .sign(message_id, timestamp, body)
                .map_err(|e| format!("signing: {e}"))?;
            out.push(signature);
        }
        Ok(out.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_differ_by_endpoint_and_version_and_verify_with_the_reference_library() {
        let key = SigningKey::new([7u8; 32].to_vec()).unwrap();
        let a = key.endpoint_secret(1, "s", 1);
        assert!(a.starts_with("whsec_") && a.len() > 40, "{a}");
        assert_ne!(a, key.endpoint_secret(1, "s", 2));
        assert_ne!(a, key.endpoint_secret(2, "s", 1));
        assert_eq!(a, key.endpoint_secret(1, "s", 1), "derived, so stable");
        assert_ne!(
            a,
            key.endpoint_secret(1, "t", 1),
            "an id given again has another salt"
        );
        assert!(SigningKey::new(vec![1u8; 31]).is_none());
        assert_eq!(format!("{key:?}"), "SigningKey(***)");

        let body = br#"{"type":"MoneyDeposited"}"#;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let signature = key.signature(1, "s", &[2, 1], "evt_9", now, body).unwrap();
        assert_eq!(signature.split(' ').count(), 2);
        let mut headers = http::HeaderMap::new();
        headers.insert("webhook-id", "evt_9".parse().unwrap());
        headers.insert("webhook-timestamp", now.to_string().parse().unwrap());
        headers.insert("webhook-signature", signature.parse().unwrap());
        for version in [1, 2] {
            let webhook =
                standardwebhooks::Webhook::new(&key.endpoint_secret(1, "s", version)).unwrap();
            webhook
                .verify(body, &headers)
                .unwrap_or_else(|e| panic!("version {version}: {e:?}"));
        }
        let other = standardwebhooks::Webhook::new(&key.endpoint_secret(1, "s", 3)).unwrap();
        assert!(other.verify(body, &headers).is_err());
    }
}
