//! [`ClientBuilder`] and [`RetryPolicy`]: the base URL, credentials, timeouts and retries a
//! [`Client`] is made with.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};

use crate::error::ClientError;

use super::{Client, Inner};

/// Bodies larger than this are refused as invalid rather than buffered.
///
/// ```
/// assert_eq!(client::MAX_RESPONSE_BYTES, 8 * 1024 * 1024);
/// ```
pub const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;
/// The header the API key goes in unless [`ClientBuilder::api_key_header`] names another.
///
/// ```
/// assert_eq!(client::DEFAULT_API_KEY_HEADER, "X-API-Key");
/// ```
pub const DEFAULT_API_KEY_HEADER: &str = "X-API-Key";

/// When and how often a call that is safe to repeat is retried: after a connection error or
/// timeout, a 429, a 5xx, or a 409 `request-in-progress`. Safe to repeat are GET, PUT and
/// DELETE, every create (it carries an `Idempotency-Key`), a webhook delivery (the service
/// deduplicates exact replays) and token verification (it only reads); issuing and rotating a
/// token never are. The delay is `Retry-After` when the response sends one, else
/// `base_backoff · 2^(attempt-1)`, at most `max_backoff`; a `Retry-After` longer than
/// `max_backoff` is not waited for (the error is returned).
///
/// ```
/// use std::time::Duration;
/// let patient = client::RetryPolicy { max_attempts: 5, ..Default::default() };
/// assert_eq!(patient.base_backoff, Duration::from_millis(200));
/// ```
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
    /// One attempt only.
    ///
    /// ```
    /// assert_eq!(client::RetryPolicy::none().max_attempts, 1);
    /// ```
    pub fn none() -> Self {
        RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        }
    }

    pub(crate) fn backoff(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        self.base_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }
}

/// Configures a [`Client`]. Credentials given here are sent with every request and never
/// printed (Debug shows `***`).
///
/// ```
/// let api = client::ClientBuilder::new("http://127.0.0.1:8080").expect_service("notes").build()?;
/// # let _ = api; Ok::<(), client::ClientError>(())
/// ```
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
    ///
    /// ```
    /// let builder = client::ClientBuilder::new("http://127.0.0.1:8080/api");
    /// # let _ = builder;
    /// ```
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
    ///
    /// ```
    /// let b = client::Client::builder("http://x").timeout(std::time::Duration::from_secs(5));
    /// # let _ = b;
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Time limit to establish a connection (default 5 s).
    ///
    /// ```
    /// let b = client::Client::builder("http://x").connect_timeout(std::time::Duration::from_secs(1));
    /// # let _ = b;
    /// ```
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How calls are retried (default: [`RetryPolicy::default`], 3 attempts).
    ///
    /// ```
    /// let b = client::Client::builder("http://x").retry(client::RetryPolicy::none());
    /// # let _ = b;
    /// ```
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// Sends `Authorization: Bearer <token>`: a JWT for `/examples/protected`, or a raw
    /// access token from [`Tokens::issue`](crate::Tokens::issue) when the service runs with
    /// `API_AUTH=tokens`.
    ///
    /// ```
    /// let b = client::Client::builder("http://x").bearer_token("3f2a…");
    /// # let _ = b;
    /// ```
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer = Some(token.into());
        self
    }

    /// Sends the API key (for `/machine/health`) in `X-API-Key`, or the header set by
    /// [`ClientBuilder::api_key_header`].
    ///
    /// ```
    /// let b = client::Client::builder("http://x").api_key("machine-key");
    /// # let _ = b;
    /// ```
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The header the API key goes in (the service's `API_KEY_HEADER`).
    ///
    /// ```
    /// let b = client::Client::builder("http://x").api_key("k").api_key_header("X-Machine-Key");
    /// # let _ = b;
    /// ```
    pub fn api_key_header(mut self, name: impl Into<String>) -> Self {
        self.api_key_header = name.into();
        self
    }

    /// Strict service identity: a reply naming another service (`service` of the health
    /// routes, `name` of `/`) is [`ClientError::ServiceMismatch`], before any of its data is
    /// returned.
    ///
    /// ```
    /// let b = client::Client::builder("http://x").expect_service("notes-service");
    /// # let _ = b;
    /// ```
    pub fn expect_service(mut self, name: impl Into<String>) -> Self {
        self.expected_service = Some(name.into());
        self
    }

    /// The client; [`ClientError::Config`] for an unusable base URL or credential.
    ///
    /// ```
    /// assert!(client::Client::builder("ftp://x").build().is_err());
    /// ```
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
                consistency: std::sync::Mutex::new(None),
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
