//! [`ClientBuilder`], [`Client`] and the request loop: credentials, timeouts, bounded retries
//! of idempotent calls, and the decoding of every body into its type.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::{ClientError, FieldCode, FieldError, Problem, ProblemKind};

/// Bodies larger than this are refused as invalid rather than buffered.
pub const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;
pub const DEFAULT_API_KEY_HEADER: &str = "X-API-Key";

/// When and how often an idempotent call (GET, PUT, DELETE) is retried: after a connection
/// error or timeout, a 429 or a 5xx. The delay is `Retry-After` when the response sends one,
/// else `base_backoff · 2^(attempt-1)`, at most `max_backoff`; a `Retry-After` longer than
/// `max_backoff` is not waited for (the error is returned). POST is never retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 disables retries).
    pub max_attempts: u32,
    pub base_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            base_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    pub fn none() -> Self {
        RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        }
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        self.base_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }
}

/// Configures a [`Client`]. Credentials given here are sent with every request and never
/// printed (Debug shows `***`).
#[derive(Clone)]
pub struct ClientBuilder {
    base_url: String,
    timeout: Duration,
    connect_timeout: Duration,
    retry: RetryPolicy,
    bearer: Option<String>,
    api_key: Option<String>,
    api_key_header: String,
    expected_service: Option<String>,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("base_url", &self.base_url)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("bearer", &self.bearer.as_ref().map(|_| "***"))
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("expected_service", &self.expected_service)
            .finish()
    }
}

impl ClientBuilder {
    /// `base_url`: `http(s)://host[:port][/prefix]`.
    pub fn new(base_url: impl Into<String>) -> Self {
        ClientBuilder {
            base_url: base_url.into(),
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            retry: RetryPolicy::default(),
            bearer: None,
            api_key: None,
            api_key_header: DEFAULT_API_KEY_HEADER.to_owned(),
            expected_service: None,
        }
    }

    /// Time limit of one attempt, from sending to the end of the body (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Time limit to establish a connection (default 5 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// Sends `Authorization: Bearer <token>` (a JWT for `/examples/protected`).
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer = Some(token.into());
        self
    }

    /// Sends the API key (for `/machine/health`) in `X-API-Key`, or the header set by
    /// [`ClientBuilder::api_key_header`].
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    pub fn api_key_header(mut self, name: impl Into<String>) -> Self {
        self.api_key_header = name.into();
        self
    }

    /// Strict service identity: a reply naming another service (`service` of the health
    /// routes, `name` of `/`) is [`ClientError::ServiceMismatch`], before any of its data is
    /// returned.
    pub fn expect_service(mut self, name: impl Into<String>) -> Self {
        self.expected_service = Some(name.into());
        self
    }

    pub fn build(self) -> Result<Client, ClientError> {
        let base = self.base_url.trim_end_matches('/').to_owned();
        let parsed =
            url::Url::parse(&base).map_err(|e| ClientError::Config(format!("base URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
            return Err(ClientError::Config(
                "base URL: expected http(s)://host[:port]".to_owned(),
            ));
        }
        if parsed.query().is_some() || parsed.fragment().is_some() {
            return Err(ClientError::Config(
                "base URL: no query or fragment allowed".to_owned(),
            ));
        }
        let mut headers = HeaderMap::new();
        if let Some(token) = &self.bearer {
            headers.insert(header::AUTHORIZATION, secret(&format!("Bearer {token}"))?);
        }
        if let Some(key) = &self.api_key {
            let name = HeaderName::from_bytes(self.api_key_header.as_bytes())
                .map_err(|_| ClientError::Config("API key header: not a header name".into()))?;
            headers.insert(name, secret(key)?);
        }
        let http = reqwest::Client::builder()
            .timeout(self.timeout)
            .connect_timeout(self.connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("notes-service-client/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ClientError::Config(format!("HTTP client: {e}")))?;
        Ok(Client {
            inner: Arc::new(Inner {
                http,
                base,
                headers,
                retry: self.retry,
                expected_service: self.expected_service,
            }),
        })
    }
}

fn secret(value: &str) -> Result<HeaderValue, ClientError> {
    let mut v = HeaderValue::from_str(value)
        .map_err(|_| ClientError::Config("a credential is not a valid header value".into()))?;
    v.set_sensitive(true);
    Ok(v)
}

/// The typed client. Cheap to clone (one connection pool, shared).
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

/// One logical call: the OpenAPI operation, method, path and body.
pub(crate) struct Call {
    pub op: &'static str,
    pub method: Method,
    pub path: String,
    pub query: Vec<(&'static str, String)>,
    pub body: Option<Vec<u8>>,
    /// Statuses that are answers of this operation even though they look retryable.
    pub answers: &'static [u16],
}

impl Call {
    pub fn new(op: &'static str, method: Method, path: impl Into<String>) -> Self {
        Call {
            op,
            method,
            path: path.into(),
            query: Vec::new(),
            body: None,
            answers: &[],
        }
    }

    pub fn json(mut self, body: &impl serde::Serialize) -> Result<Self, ClientError> {
        let bytes = serde_json::to_vec(body)
            .map_err(|e| ClientError::Config(format!("{}: request body: {e}", self.op)))?;
        self.body = Some(bytes);
        Ok(self)
    }

    pub fn query(mut self, query: Vec<(&'static str, String)>) -> Self {
        self.query = query;
        self
    }
}

/// A received response, body read in full.
pub(crate) struct Reply {
    pub op: &'static str,
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

enum Failure {
    Send(reqwest::Error),
    Body(String),
}

impl Client {
    pub fn builder(base_url: impl Into<String>) -> ClientBuilder {
        ClientBuilder::new(base_url)
    }

    pub(crate) fn expected_service(&self) -> Option<&str> {
        self.inner.expected_service.as_deref()
    }

    /// Sends `call`, retrying as the [`RetryPolicy`] allows.
    pub(crate) async fn execute(&self, call: &Call) -> Result<Reply, ClientError> {
        let idempotent = matches!(call.method, Method::GET | Method::PUT | Method::DELETE);
        let policy = self.inner.retry;
        let attempts = if idempotent {
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
                    let retryable = (status == 429 || reply.status.is_server_error())
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

    async fn send_once(&self, call: &Call) -> Result<Reply, Failure> {
        let url = format!("{}{}", self.inner.base, call.path);
        let mut req = self
            .inner
            .http
            .request(call.method.clone(), url)
            .headers(self.inner.headers.clone())
            .header(header::ACCEPT, "application/json, application/problem+json");
        if !call.query.is_empty() {
            req = req.query(&call.query);
        }
        if let Some(body) = &call.body {
            req = req
                .header(header::CONTENT_TYPE, "application/json")
                .body(body.clone());
        }
        let mut res = req.send().await.map_err(Failure::Send)?;
        let status = res.status();
        let headers = std::mem::take(res.headers_mut());
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

fn content_type(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
}

fn is_json(ct: &str) -> bool {
    ct == "application/json" || (ct.starts_with("application/") && ct.ends_with("+json"))
}

/// Decodes `bytes` into `T`, naming the path where it failed (`items[0].id`).
pub(crate) fn decode_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let text = String::from_utf8_lossy(bytes);
    let start = text.trim_start();
    if start.is_empty() {
        return Err("the body is empty".to_owned());
    }
    if start.starts_with('<') {
        return Err("the body is HTML (or XML), not JSON".to_owned());
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let what = match inner.classify() {
            serde_json::error::Category::Eof => "the body is truncated",
            serde_json::error::Category::Syntax => "the body is not valid JSON",
            _ => "unexpected shape",
        };
        format!("{what} at `{path}`: {inner}")
    })?;
    de.end()
        .map_err(|e| format!("trailing characters after the JSON value: {e}"))?;
    Ok(value)
}

#[derive(Deserialize)]
struct RawProblem {
    #[serde(rename = "type")]
    type_uri: String,
    title: String,
    status: u16,
    detail: String,
    #[serde(default)]
    errors: Vec<RawFieldError>,
    #[serde(flatten)]
    extensions: Map<String, Value>,
}

#[derive(Deserialize)]
struct RawFieldError {
    field: String,
    message: String,
    code: String,
}

impl Reply {
    pub fn content_type(&self) -> Option<String> {
        content_type(&self.headers)
    }

    /// Ok when the status is `expected`; else the matching error (a problem, an unexpected
    /// status, or an invalid response for an unexpected success status).
    pub fn expect(&self, expected: StatusCode) -> Result<(), ClientError> {
        if self.status == expected {
            Ok(())
        } else if self.status.is_success() {
            Err(ClientError::invalid(
                self.op,
                format!(
                    "expected status {}, got {}",
                    expected.as_u16(),
                    self.status.as_u16()
                ),
            ))
        } else {
            Err(self.error())
        }
    }

    /// The error an error status stands for: a typed problem when the body is one.
    pub fn error(&self) -> ClientError {
        let status = self.status.as_u16();
        let ct = self.content_type();
        if !self.status.is_client_error() && !self.status.is_server_error()
            || !ct.as_deref().is_some_and(is_json)
        {
            return ClientError::UnexpectedStatus {
                operation: self.op,
                status,
                content_type: ct,
            };
        }
        match self.problem() {
            Ok(p) => ClientError::Api(Box::new(p)),
            Err(reason) => ClientError::invalid(self.op, format!("problem document: {reason}")),
        }
    }

    fn problem(&self) -> Result<Problem, String> {
        let raw: RawProblem = decode_json(&self.body)?;
        if raw.status != self.status.as_u16() {
            return Err(format!(
                "status member {} differs from the HTTP status {}",
                raw.status,
                self.status.as_u16()
            ));
        }
        let request_id = self
            .headers
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        Ok(Problem {
            operation: self.op,
            kind: ProblemKind::from_type_uri(&raw.type_uri),
            type_uri: raw.type_uri,
            title: raw.title,
            status: raw.status,
            detail: raw.detail,
            errors: raw
                .errors
                .into_iter()
                .map(|e| FieldError {
                    field: e.field,
                    message: e.message,
                    code: FieldCode::parse(&e.code),
                })
                .collect(),
            extensions: raw.extensions,
            request_id,
            retry_after: retry_after(&self.headers),
        })
    }

    /// The body as `T`: it must be JSON (by media type when one is sent) and of `T`'s shape.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, ClientError> {
        if let Some(ct) = self.content_type()
            && !is_json(&ct)
        {
            return Err(ClientError::invalid(
                self.op,
                format!("expected a JSON body, got {ct}"),
            ));
        }
        decode_json(&self.body).map_err(|reason| ClientError::invalid(self.op, reason))
    }
}

#[cfg(test)]
mod tests {
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
