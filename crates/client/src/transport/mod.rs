//! [`Client`] and the request loop: credentials, timeouts, bounded retries of idempotent
//! calls. How a client is configured is [`builder`]; how a reply is decoded, [`reply`].

mod builder;
mod reply;

pub use builder::{ClientBuilder, DEFAULT_API_KEY_HEADER, MAX_RESPONSE_BYTES, RetryPolicy};

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use problem_details::Slug;
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;

use crate::error::ClientError;

/// The typed client. Cheap to clone (one connection pool, shared). Each area of the API is
/// behind an accessor: [`notes`](Client::notes), [`tags`](Client::tags),
/// [`comments`](Client::comments), [`articles`](Client::articles),
/// [`v1_notes`](Client::v1_notes), [`v2_notes`](Client::v2_notes), [`users`](Client::users),
/// [`accounts`](Client::accounts), [`webhooks`](Client::webhooks).
///
/// ```no_run
/// # async fn run() -> Result<(), client::ClientError> {
/// let api = client::Client::builder("http://127.0.0.1:8080").build()?;
/// let note = api.notes().create(&client::NoteInput::new("t", "b")).await?;
/// # let _ = note; Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    base: String,
    headers: HeaderMap,
    retry: RetryPolicy,
    expected_service: Option<String>,
    /// The furthest `Consistency-Token` any answer of this client has carried, sent with every
    /// request so that a standby serves a read only once it has this client's writes.
    consistency: std::sync::Mutex<Option<(u64, HeaderValue)>>,
}

const CONSISTENCY_TOKEN: &str = "consistency-token";

/// A token's WAL position (`16/B374D848`), to keep the furthest of several.
fn wal_position(token: &HeaderValue) -> Option<u64> {
    let (high, low) = token.to_str().ok()?.split_once('/')?;
    let high = u64::from_str_radix(high, 16)
        .ok()
        .filter(|h| *h <= 0xFFFF_FFFF)?;
    Some(
        (high << 32)
            | u64::from_str_radix(low, 16)
                .ok()
                .filter(|l| *l <= 0xFFFF_FFFF)?,
    )
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.inner.base)
            .field("retry", &self.inner.retry)
            .field("expected_service", &self.inner.expected_service)
            .finish_non_exhaustive()
    }
}

/// What opening an event stream found.
pub(crate) enum Opened {
    Stream(reqwest::Response),
    /// Not a stream (an error answer), read whole.
    Refused(Reply),
}

/// One logical call: the OpenAPI operation, method, path, headers and body.
pub(crate) struct Call {
    pub op: &'static str,
    pub method: Method,
    pub path: String,
    pub query: Vec<(&'static str, String)>,
    pub body: Option<Vec<u8>>,
    /// This call's own headers (`Idempotency-Key`, `If-Match`, `X-User-Id`, …).
    pub headers: HeaderMap,
    /// Sending it again cannot do anything twice: GET, PUT and DELETE by their semantics, a
    /// POST only when it carries an `Idempotency-Key` or merely reads.
    pub retry_safe: bool,
    /// Statuses that are answers of this operation even though they look retryable.
    pub answers: &'static [u16],
    /// Area D's refusals are `{"error": "…"}` bodies rather than problem documents.
    pub plain_errors: bool,
}

impl Call {
    pub fn new(op: &'static str, method: Method, path: impl Into<String>) -> Self {
        Call {
            op,
            retry_safe: matches!(method, Method::GET | Method::PUT | Method::DELETE),
            method,
            path: path.into(),
            query: Vec::new(),
            body: None,
            headers: HeaderMap::new(),
            answers: &[],
            plain_errors: false,
        }
    }

    pub fn json(self, body: &impl serde::Serialize) -> Result<Self, ClientError> {
        let bytes = serde_json::to_vec(body)
            .map_err(|e| ClientError::Config(format!("{}: request body: {e}", self.op)))?;
        Ok(self.bytes(bytes))
    }

    /// A body sent exactly as given (a signed webhook: the signature covers these bytes).
    pub fn bytes(mut self, body: Vec<u8>) -> Self {
        self.body = Some(body);
        self
    }

    pub fn query(mut self, query: Vec<(&'static str, String)>) -> Self {
        self.query = query;
        self
    }

    pub fn header(mut self, name: &'static str, value: &str) -> Result<Self, ClientError> {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ClientError::Config(format!("{name:?} is not a header name")))?;
        let value = HeaderValue::from_str(value).map_err(|_| {
            ClientError::InvalidInput(format!("{}: {value:?} is not a valid {name}", self.op))
        })?;
        self.headers.insert(name, value);
        Ok(self)
    }

    /// Marks a POST that only reads, or that the service deduplicates by itself, as safe to
    /// send again.
    pub fn retry_safe(mut self) -> Self {
        self.retry_safe = true;
        self
    }

    pub fn plain_errors(mut self) -> Self {
        self.plain_errors = true;
        self
    }
}

/// A received response, body read in full.
pub(crate) struct Reply {
    pub op: &'static str,
    pub plain_errors: bool,
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

enum Failure {
    Send(reqwest::Error),
    Body(String),
}

impl Client {
    /// A [`ClientBuilder`] for the service at `base_url`.
    ///
    /// ```
    /// let api = client::Client::builder("http://127.0.0.1:8080").build()?;
    /// # let _ = api; Ok::<(), client::ClientError>(())
    /// ```
    pub fn builder(base_url: impl Into<String>) -> ClientBuilder {
        ClientBuilder::new(base_url)
    }

    pub(crate) fn expected_service(&self) -> Option<&str> {
        self.inner.expected_service.as_deref()
    }

    /// Sends `call`, retrying as the [`RetryPolicy`] allows when the call is safe to repeat.
    pub(crate) async fn execute(&self, call: &Call) -> Result<Reply, ClientError> {
        let policy = self.inner.retry;
        let attempts = if call.retry_safe {
            policy.max_attempts.max(1)
        } else {
            1
        };
        let mut attempt = 1;
        loop {
            let last = attempt >= attempts;
            let delay = match self.send_once(call).await {
                Err(Failure::Send(e))
                    if !last && (e.is_connect() || e.is_timeout() || e.is_request()) =>
                {
                    policy.backoff(attempt)
                }
                Err(Failure::Send(source)) => {
                    return Err(ClientError::Transport {
                        operation: call.op,
                        source,
                    });
                }
                Err(Failure::Body(reason)) => return Err(ClientError::invalid(call.op, reason)),
                Ok(reply) => {
                    let status = reply.status.as_u16();
                    // A concurrent twin holds the Idempotency-Key: its answer is worth waiting for.
                    let retryable = (status == 429
                        || reply.status.is_server_error()
                        || (status == 409 && reply.slug() == Some(Slug::RequestInProgress)))
                        && !call.answers.contains(&status);
                    if last || !retryable {
                        return Ok(reply);
                    }
                    match retry_after(&reply.headers) {
                        Some(wait) if wait > policy.max_backoff => return Ok(reply),
                        Some(wait) => wait,
                        None => policy.backoff(attempt),
                    }
                }
            };
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }

    /// The session's consistency token (a poisoned lock only means a panic elsewhere while it
    /// was held; the value is still a token).
    fn consistency(&self) -> std::sync::MutexGuard<'_, Option<(u64, HeaderValue)>> {
        self.inner
            .consistency
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The `Consistency-Token` this client sends: the furthest write position any answer named
    /// (`None` until a write answered one, i.e. while no standby serves reads).
    pub fn consistency_token(&self) -> Option<String> {
        self.consistency()
            .as_ref()
            .and_then(|(_, t)| t.to_str().ok().map(str::to_owned))
    }

    /// `call` as a request: the client's headers, the session's consistency token.
    fn request(&self, call: &Call) -> reqwest::RequestBuilder {
        let url = format!("{}{}", self.inner.base, call.path);
        let mut req = self
            .inner
            .http
            .request(call.method.clone(), url)
            .headers(self.inner.headers.clone())
            .headers(call.headers.clone());
        if let Some((_, token)) = self.consistency().clone() {
            req = req.header(CONSISTENCY_TOKEN, token);
        }
        if !call.query.is_empty() {
            req = req.query(&call.query);
        }
        if let Some(body) = &call.body {
            req = req
                .header(header::CONTENT_TYPE, "application/json")
                .body(body.clone());
        }
        req
    }

    /// The retry policy this client was built with.
    pub(crate) fn retry_policy(&self) -> RetryPolicy {
        self.inner.retry
    }

    /// Opens an event stream: its body still to read, or any other answer read whole. Not
    /// bounded by the client's timeout (a stream lasts); its reader bounds each silence.
    pub(crate) async fn open_stream(&self, call: &Call) -> Result<Opened, reqwest::Error> {
        let res = self
            .request(call)
            .header(
                header::ACCEPT,
                "text/event-stream, application/problem+json",
            )
            .timeout(Duration::from_secs(24 * 3_600))
            .send()
            .await?;
        if res.status() == StatusCode::OK {
            return Ok(Opened::Stream(res));
        }
        match self.reply(call, res).await {
            Ok(reply) => Ok(Opened::Refused(reply)),
            Err(Failure::Send(e)) => Err(e),
            Err(Failure::Body(reason)) => Ok(Opened::Refused(Reply {
                op: call.op,
                plain_errors: false,
                status: StatusCode::BAD_GATEWAY,
                headers: HeaderMap::new(),
                body: reason.into_bytes(),
            })),
        }
    }

    async fn send_once(&self, call: &Call) -> Result<Reply, Failure> {
        let req = self
            .request(call)
            .header(header::ACCEPT, "application/json, application/problem+json");
        let res = req.send().await.map_err(Failure::Send)?;
        self.reply(call, res).await
    }

    /// An answer read whole (at most [`MAX_RESPONSE_BYTES`]).
    async fn reply(&self, call: &Call, mut res: reqwest::Response) -> Result<Reply, Failure> {
        let status = res.status();
        let headers = std::mem::take(res.headers_mut());
        if let Some(token) = headers.get(CONSISTENCY_TOKEN)
            && let Some(position) = wal_position(token)
        {
            let mut kept = self.consistency();
            if kept
                .as_ref()
                .is_none_or(|(furthest, _)| position > *furthest)
            {
                *kept = Some((position, token.clone()));
            }
        }
        let mut body = Vec::new();
        loop {
            match res.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                        return Err(Failure::Body(format!(
                            "the body exceeds {MAX_RESPONSE_BYTES} bytes"
                        )));
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) if e.is_timeout() => return Err(Failure::Send(e)),
                Err(e) => {
                    return Err(Failure::Body(format!(
                        "the body ended early or could not be read ({e})"
                    )));
                }
            }
        }
        Ok(Reply {
            op: call.op,
            plain_errors: call.plain_errors,
            status,
            headers,
            body,
        })
    }

    /// Sends `call` and decodes a `expected`-status answer into `T`.
    pub(crate) async fn fetch<T: DeserializeOwned>(
        &self,
        call: Call,
        expected: StatusCode,
    ) -> Result<(T, Reply), ClientError> {
        let reply = self.execute(&call).await?;
        reply.expect(expected)?;
        Ok((reply.decode()?, reply))
    }

    /// Sends `call` and expects `expected` with an empty body (204).
    pub(crate) async fn fetch_empty(
        &self,
        call: Call,
        expected: StatusCode,
    ) -> Result<(), ClientError> {
        let reply = self.execute(&call).await?;
        reply.expect(expected)?;
        if reply.body.iter().all(u8::is_ascii_whitespace) {
            Ok(())
        } else {
            Err(ClientError::invalid(reply.op, "expected an empty body"))
        }
    }
}

/// `Retry-After`: delay-seconds or an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(header::RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = crate::deprecation::parse_http_date(value)?;
    Some(at.duration_since(SystemTime::now()).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use reqwest::header::HeaderValue;

    use super::reply::decode_json;
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let p = RetryPolicy {
            max_attempts: 5,
            base_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(300),
        };
        assert_eq!(p.backoff(1), Duration::from_millis(100));
        assert_eq!(p.backoff(2), Duration::from_millis(200));
        assert_eq!(p.backoff(3), Duration::from_millis(300));
        assert_eq!(p.backoff(40), Duration::from_millis(300));
    }

    #[test]
    fn retry_after_forms() {
        let mut h = HeaderMap::new();
        h.insert(header::RETRY_AFTER, HeaderValue::from_static("7"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert(
            header::RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        h.insert(header::RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn decode_names_the_path() {
        #[derive(Debug, Deserialize)]
        struct T {
            #[allow(dead_code)]
            items: Vec<u8>,
        }
        let err = decode_json::<T>(br#"{"items": [1, "x"]}"#).unwrap_err();
        assert!(err.contains("items[1]"), "{err}");
        let err = decode_json::<T>(br#"{"items": [1"#).unwrap_err();
        assert!(err.starts_with("the body is truncated"), "{err}");
        let err = decode_json::<T>(br#"{"items": []} x"#).unwrap_err();
        assert!(err.starts_with("trailing"), "{err}");
    }

    #[test]
    fn debug_hides_credentials() {
        let b = ClientBuilder::new("http://x")
            .bearer_token("tok-123")
            .api_key("key-456");
        let text = format!("{b:?} {:?}", b.clone().build().unwrap());
        assert!(
            !text.contains("tok-123") && !text.contains("key-456"),
            "{text}"
        );
    }

    #[test]
    fn bad_base_urls_are_config_errors() {
        for url in ["", "ftp://x", "not a url", "http://x/?q=1"] {
            assert!(matches!(
                ClientBuilder::new(url).build(),
                Err(ClientError::Config(_))
            ));
        }
    }
}
