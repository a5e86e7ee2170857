//! A received response, checked against what the call expected and decoded into its type
//! (or into the problem, the error body or the reason it could not be read).

use reqwest::StatusCode;
use reqwest::header::{self, HeaderMap};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use problem_details::Slug;

use crate::conditional::ETag;
use crate::error::{ClientError, FieldCode, FieldError, Problem, ProblemKind};

use super::{Reply, retry_after};

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

/// Area D's refusal body.
#[derive(Deserialize)]
struct RawRefusal {
    error: String,
}

/// Just the `type` of a problem, to decide on a retry without decoding the rest.
#[derive(Deserialize)]
struct RawProblemType {
    #[serde(rename = "type")]
    type_uri: String,
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
        let refusal = || decode_json::<RawRefusal>(&self.body).ok();
        match self.problem() {
            Ok(p) => ClientError::Api(Box::new(p)),
            Err(_) if self.plain_errors && ct.as_deref() == Some("application/json") => {
                match refusal() {
                    Some(r) => ClientError::Refused {
                        operation: self.op,
                        status,
                        error: r.error,
                        request_id: self.request_id(),
                    },
                    None => ClientError::invalid(
                        self.op,
                        "error body: neither a problem document nor {\"error\": \"…\"}",
                    ),
                }
            }
            Err(reason) => ClientError::invalid(self.op, format!("problem document: {reason}")),
        }
    }

    /// The problem type of an error answer, when it is a problem document of a known type.
    pub fn slug(&self) -> Option<Slug> {
        if !self.status.is_client_error() || !self.content_type().as_deref().is_some_and(is_json) {
            return None;
        }
        let raw: RawProblemType = decode_json(&self.body).ok()?;
        match ProblemKind::from_type_uri(&raw.type_uri) {
            ProblemKind::Known(slug) => Some(slug),
            ProblemKind::Other(_) => None,
        }
    }

    fn request_id(&self) -> Option<String> {
        self.headers
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    /// The `ETag`, which must be an entity tag when sent.
    pub fn etag(&self) -> Result<Option<ETag>, ClientError> {
        let Some(value) = self.headers.get(header::ETAG) else {
            return Ok(None);
        };
        value
            .to_str()
            .ok()
            .and_then(ETag::parse)
            .map(Some)
            .ok_or_else(|| ClientError::invalid(self.op, "the ETag header is not an entity tag"))
    }

    /// The `ETag` of an answer that must carry one.
    pub fn required_etag(&self) -> Result<ETag, ClientError> {
        self.etag()?
            .ok_or_else(|| ClientError::invalid(self.op, "the ETag header is missing"))
    }

    /// `Idempotent-Replayed: true`: the answer repeats the first one to the same key.
    pub fn replayed(&self) -> bool {
        self.headers
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
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
        let request_id = self.request_id();
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

    /// The body as text: it must be UTF-8.
    pub fn text(&self) -> Result<String, ClientError> {
        String::from_utf8(self.body.clone())
            .map_err(|_| ClientError::invalid(self.op, "the body is not UTF-8"))
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
