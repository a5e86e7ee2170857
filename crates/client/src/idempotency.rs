//! Safe retries of creates: every `POST` that makes something carries an `Idempotency-Key`,
//! the same on every attempt of one call, so the service runs it at most once and answers a
//! retry with the first answer (`Idempotent-Replayed: true`).

use std::fmt;

use reqwest::StatusCode;
use serde::de::DeserializeOwned;

use crate::conditional::ETag;
use crate::error::ClientError;
use crate::transport::{Call, Client, Reply};

/// An `Idempotency-Key`: 1 to 255 visible ASCII characters. Every create makes a
/// [`random`](IdempotencyKey::random) one unless the caller passes their own (to retry a call
/// across restarts of their own program, say).
///
/// ```
/// use client::IdempotencyKey;
/// let key = IdempotencyKey::new("order-2026-0042")?;
/// assert_eq!(key.as_str(), "order-2026-0042");
/// assert!(IdempotencyKey::new("has spaces").is_err());
/// assert_eq!(IdempotencyKey::random()?.as_str().len(), 32);
/// # Ok::<(), client::ClientError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// The caller's own key; [`ClientError::InvalidInput`] unless it is 1 to 255 characters of
    /// `!` to `~` (what the service accepts).
    ///
    /// ```
    /// assert!(client::IdempotencyKey::new("").is_err());
    /// ```
    pub fn new(key: impl Into<String>) -> Result<IdempotencyKey, ClientError> {
        let key = key.into();
        if (1..=255).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic()) {
            Ok(IdempotencyKey(key))
        } else {
            Err(ClientError::InvalidInput(format!(
                "Idempotency-Key {key:?}: 1 to 255 visible ASCII characters expected"
            )))
        }
    }

    /// 16 bytes from the operating system's random source, as 32 hex digits: unguessable, so
    /// two callers never meet on one key.
    ///
    /// ```
    /// let (a, b) = (client::IdempotencyKey::random()?, client::IdempotencyKey::random()?);
    /// assert_ne!(a, b);
    /// # Ok::<(), client::ClientError>(())
    /// ```
    pub fn random() -> Result<IdempotencyKey, ClientError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)
            .map_err(|e| ClientError::Config(format!("no random source for a key: {e}")))?;
        Ok(IdempotencyKey(hex::encode(bytes)))
    }

    /// The header value.
    ///
    /// ```
    /// assert_eq!(client::IdempotencyKey::new("k-1")?.as_str(), "k-1");
    /// # Ok::<(), client::ClientError>(())
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a create answered, with what the headers said about it.
///
/// ```no_run
/// use client::{IdempotencyKey, NoteInput};
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let key = IdempotencyKey::new("import-line-17")?;
/// let first = api.notes().create_with_key(&NoteInput::new("t", "b"), &key).await?;
/// let again = api.notes().create_with_key(&NoteInput::new("t", "b"), &key).await?;
/// assert!(!first.replayed && again.replayed);
/// assert_eq!(first.value, again.value); // one note, not two
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created<T> {
    pub value: T,
    /// The new resource's `ETag` (what a read of it answers), for a later `*_if_match`; `None`
    /// where the service tags no such resource (account events).
    pub etag: Option<ETag>,
    /// True when this answer repeats the first answer to `key`: nothing was written this time.
    pub replayed: bool,
    /// The key the call was sent with (the caller's, or the random one it was given).
    pub key: IdempotencyKey,
}

impl<T> Created<T> {
    /// The same answer with another view of its value.
    ///
    /// ```
    /// let key = client::IdempotencyKey::new("k")?;
    /// let made = client::Created { value: 1, etag: None, replayed: false, key };
    /// assert_eq!(made.map(|n| n + 1).value, 2);
    /// # Ok::<(), client::ClientError>(())
    /// ```
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Created<U> {
        Created {
            value: f(self.value),
            etag: self.etag,
            replayed: self.replayed,
            key: self.key,
        }
    }
}

impl Call {
    /// Sends `key` and so makes the POST safe to retry.
    pub(crate) fn keyed(self, key: &IdempotencyKey) -> Result<Call, ClientError> {
        Ok(self.header("idempotency-key", key.as_str())?.retry_safe())
    }
}

impl Client {
    /// A create (201) under `key`, or a fresh random key; the reply is returned too, for the
    /// headers some areas add (V1's deprecation).
    pub(crate) async fn create_reply<T: DeserializeOwned>(
        &self,
        call: Call,
        key: Option<&IdempotencyKey>,
    ) -> Result<(Created<T>, Reply), ClientError> {
        let key = match key {
            Some(key) => key.clone(),
            None => IdempotencyKey::random()?,
        };
        let (value, reply) = self.fetch(call.keyed(&key)?, StatusCode::CREATED).await?;
        let created = Created {
            value,
            etag: reply.etag()?,
            replayed: reply.replayed(),
            key,
        };
        Ok((created, reply))
    }

    pub(crate) async fn create<T: DeserializeOwned>(
        &self,
        call: Call,
        key: Option<&IdempotencyKey>,
    ) -> Result<Created<T>, ClientError> {
        Ok(self.create_reply(call, key).await?.0)
    }
}
