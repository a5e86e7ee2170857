use std::fmt;

use constant_time_eq::constant_time_eq_32;
use sha2::{Digest, Sha256};

use crate::Error;

/// The configured API keys, kept as SHA-256 digests. Debug prints only how many there are.
#[derive(Clone, Default)]
pub struct ApiKeys {
    digests: Vec<[u8; 32]>,
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

impl ApiKeys {
    /// Empty (after trimming) keys are ignored.
    pub fn new<I, K>(keys: I) -> Self
    where
        I: IntoIterator<Item = K>,
        K: AsRef<str>,
    {
        ApiKeys {
            digests: keys
                .into_iter()
                .map(|k| k.as_ref().trim().to_owned())
                .filter(|k| !k.is_empty())
                .map(|k| digest(k.as_bytes()))
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.digests.is_empty()
    }

    /// Accepts `presented` when it equals one of the keys. Every configured key is compared
    /// (no early exit), each in constant time on fixed-length digests.
    pub fn verify(&self, presented: Option<&[u8]>) -> Result<(), Error> {
        if self.digests.is_empty() {
            return Err(Error::NoApiKeyConfigured);
        }
        let presented = presented.ok_or(Error::MissingApiKey)?;
        let candidate = digest(presented);
        let matched = self.digests.iter().fold(false, |found, key| {
            found | constant_time_eq_32(key, &candidate)
        });
        if matched {
            Ok(())
        } else {
            Err(Error::UnknownApiKey)
        }
    }
}

impl fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKeys({} configured)", self.digests.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_any_configured_key() {
        let keys = ApiKeys::new(["a-key", " b-key ", "", "  "]);
        assert!(!keys.is_empty());
        assert_eq!(keys.verify(Some(b"a-key")), Ok(()));
        assert_eq!(keys.verify(Some(b"b-key")), Ok(()));
        assert_eq!(keys.verify(Some(b"c-key")), Err(Error::UnknownApiKey));
        assert_eq!(keys.verify(Some(b"a-ke")), Err(Error::UnknownApiKey));
        assert_eq!(keys.verify(Some(b"")), Err(Error::UnknownApiKey));
        assert_eq!(keys.verify(None), Err(Error::MissingApiKey));
    }

    #[test]
    fn nothing_configured_refuses_everything() {
        let keys = ApiKeys::new(["", " "]);
        assert!(keys.is_empty());
        assert_eq!(keys.verify(Some(b"")), Err(Error::NoApiKeyConfigured));
        assert_eq!(keys.verify(None), Err(Error::NoApiKeyConfigured));
    }

    #[test]
    fn debug_hides_the_keys() {
        let text = format!("{:?}", ApiKeys::new(["secret-value"]));
        assert_eq!(text, "ApiKeys(1 configured)");
    }
}
