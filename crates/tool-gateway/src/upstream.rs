//! The HTTP half of `tools/call`: sends a [`RequestSpec`] to the API and reads the answer.

use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde_json::Value;
use tool_catalog::RequestSpec;
use trace_context::TraceParent;

use crate::BearerToken;

/// The environment variable holding the bearer token that write tools need.
pub const TOKEN_ENV: &str = "SERVICE_MCP_BEARER_TOKEN";

/// Each API request gives up after this long.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// What the API answered.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reply {
    pub status: u16,
    pub request_id: Option<String>,
    /// The JSON body; `null` when empty, a JSON string when the body is not JSON.
    pub body: Value,
}

/// Why no answer came back. The messages are fixed text: no addresses, no error chains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    Timeout,
    Connect,
    Other,
}

impl Failure {
    pub fn message(self) -> &'static str {
        match self {
            Failure::Timeout => "The API did not answer within 10 seconds.",
            Failure::Connect => "The API could not be reached (connection failed).",
            Failure::Other => "The API request failed before a response was received.",
        }
    }
}

/// The HTTP client: no redirects, no proxies, a 10-second timeout, no cookies, no credentials
/// other than the configured bearer token (the MCP client's own headers are never seen here).
#[derive(Debug, Clone)]
pub(crate) struct Upstream {
    client: reqwest::Client,
}

impl Upstream {
    pub fn new() -> reqwest::Result<Upstream> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(REQUEST_TIMEOUT)
            .no_proxy()
            .user_agent(concat!("tool-gateway/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Upstream { client })
    }

    /// Sends `spec`; `bearer` is attached as `Authorization: Bearer ...` when given, and
    /// `span` (the gateway's span of the call) as its `traceparent`.
    pub async fn send(
        &self,
        spec: &RequestSpec,
        bearer: Option<&BearerToken>,
        idempotency_key: Option<&str>,
        span: &TraceParent,
    ) -> Result<Reply, Failure> {
        let method = reqwest::Method::from_bytes(spec.method.as_str().as_bytes())
            .map_err(|_| Failure::Other)?;
        let mut request = self
            .client
            .request(method, spec.full_url())
            .header(ACCEPT, "application/json")
            .header(trace_context::HEADER, span.to_string());
        if let Some(token) = bearer {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose()))
                .map_err(|_| Failure::Other)?;
            value.set_sensitive(true);
            request = request.header(AUTHORIZATION, value);
        }
        if let Some(key) = idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        if let Some(body) = &spec.body {
            let bytes = serde_json::to_vec(body).map_err(|_| Failure::Other)?;
            request = request.header(CONTENT_TYPE, "application/json").body(bytes);
        }
        let response = request.send().await.map_err(classify)?;
        let status = response.status().as_u16();
        let request_id = response
            .headers()
            .get("x-request-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let bytes = response.bytes().await.map_err(classify)?;
        Ok(Reply {
            status,
            request_id,
            body: parse_body(&bytes),
        })
    }
}

fn classify(error: reqwest::Error) -> Failure {
    if error.is_timeout() {
        Failure::Timeout
    } else if error.is_connect() {
        Failure::Connect
    } else {
        Failure::Other
    }
}

fn parse_body(bytes: &[u8]) -> Value {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Value::Null;
    }
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn bodies_are_json_null_or_text() {
        assert_eq!(parse_body(b""), Value::Null);
        assert_eq!(parse_body(b" \n"), Value::Null);
        assert_eq!(parse_body(br#"{"a":1}"#), json!({"a": 1}));
        assert_eq!(parse_body(b"plain text"), json!("plain text"));
    }

    #[test]
    fn failure_messages_name_no_internals() {
        for failure in [Failure::Timeout, Failure::Connect, Failure::Other] {
            let message = failure.message();
            assert!(!message.contains("127.0.0.1") && !message.contains("error"));
        }
    }
}
