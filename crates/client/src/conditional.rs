//! Conditional requests (RFC 9110): the service tags every single resource with a strong
//! `ETag`; a read can ask "only if it changed" (`If-None-Match` → 304) and a write "only if it
//! did not" (`If-Match` → 412 `precondition-failed`, nothing written).

use std::fmt;

use reqwest::StatusCode;
use serde::de::DeserializeOwned;

use crate::error::ClientError;
use crate::transport::{Call, Client};

/// An entity tag as the service sent it, quotes included (`"5d41…"`, or `"7"` for an account,
/// whose tag is its last sequence).
///
/// ```
/// let tag = client::ETag::parse("\"7\"").unwrap();
/// assert_eq!(tag.as_str(), "\"7\"");
/// assert!(client::ETag::parse("7").is_none()); // not quoted: not an entity tag
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ETag(String);

impl ETag {
    /// An entity tag (`"…"` or weak `W/"…"`) of visible ASCII; `None` for anything else.
    ///
    /// ```
    /// assert!(client::ETag::parse("W/\"v1\"").is_some());
    /// assert!(client::ETag::parse("\"has space\"").is_none());
    /// ```
    pub fn parse(value: &str) -> Option<ETag> {
        let value = value.trim();
        let opaque = value.strip_prefix("W/").unwrap_or(value);
        let inner = opaque.strip_prefix('"')?.strip_suffix('"')?;
        inner
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"')
            .then(|| ETag(value.to_owned()))
    }

    /// The tag of a resource versioned by a sequence number: an account's `ETag` is its
    /// `last_sequence` (see [`Account::etag`](crate::Account::etag)).
    ///
    /// ```
    /// assert_eq!(client::ETag::sequence(7).as_str(), "\"7\"");
    /// ```
    pub fn sequence(sequence: i64) -> ETag {
        ETag(format!("\"{sequence}\""))
    }

    /// The header value, quotes included.
    ///
    /// ```
    /// assert_eq!(client::ETag::sequence(1).as_str(), "\"1\"");
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ETag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A value with the `ETag` its answer carried: pass the tag to an `*_if_match` write to make it
/// conditional, or to a `get_if_none_match` read to skip an unchanged body.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let tagged = api.notes().get_tagged(1).await?;
/// println!("{} is at version {}", tagged.value.title, tagged.etag);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tagged<T> {
    pub value: T,
    pub etag: ETag,
}

impl<T> Tagged<T> {
    /// The same tag on another view of the value.
    ///
    /// ```
    /// let tagged = client::Tagged { value: 2, etag: client::ETag::sequence(2) };
    /// assert_eq!(tagged.map(|n| n * 10).value, 20);
    /// ```
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Tagged<U> {
        Tagged {
            value: f(self.value),
            etag: self.etag,
        }
    }
}

impl Call {
    /// Only if the resource is still at `etag`.
    pub(crate) fn if_match(self, etag: &ETag) -> Result<Call, ClientError> {
        self.header("if-match", etag.as_str())
    }
}

impl Client {
    /// A 200 answer that must carry its `ETag`.
    pub(crate) async fn fetch_tagged<T: DeserializeOwned>(
        &self,
        call: Call,
        expected: StatusCode,
    ) -> Result<Tagged<T>, ClientError> {
        let (value, reply) = self.fetch(call, expected).await?;
        Ok(Tagged {
            value,
            etag: reply.required_etag()?,
        })
    }

    /// A read with `If-None-Match: etag`: `None` on 304 Not Modified.
    pub(crate) async fn fetch_if_none_match<T: DeserializeOwned>(
        &self,
        call: Call,
        etag: &ETag,
    ) -> Result<Option<Tagged<T>>, ClientError> {
        let call = call.header("if-none-match", etag.as_str())?;
        let reply = self.execute(&call).await?;
        if reply.status == StatusCode::NOT_MODIFIED {
            return Ok(None);
        }
        reply.expect(StatusCode::OK)?;
        Ok(Some(Tagged {
            value: reply.decode()?,
            etag: reply.required_etag()?,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entity_tags_parse() {
        assert_eq!(
            ETag::parse(" \"abc\" ").map(|t| t.0),
            Some("\"abc\"".into())
        );
        assert_eq!(
            ETag::parse("W/\"abc\"").map(|t| t.0),
            Some("W/\"abc\"".into())
        );
        for bad in ["abc", "\"a b\"", "\"a\"b\"", "\"", "W/abc", "\"é\""] {
            assert_eq!(ETag::parse(bad), None, "{bad}");
        }
        assert_eq!(ETag::sequence(42).to_string(), "\"42\"");
    }
}
