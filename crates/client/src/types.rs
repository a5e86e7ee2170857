//! Request and response types, written to match `docs/openapi.json`. Responses are decoded
//! strictly in type (an `id` sent as a string is an error) and leniently in extent (members
//! this client does not know are ignored, so the service can add fields).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `GET /`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ServiceInfo {
    pub name: String,
    pub description: String,
    pub version: String,
    pub status: OkStatus,
}

/// A status member that must be exactly `"ok"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum OkStatus {
    #[serde(rename = "ok")]
    Ok,
}

/// `status` of `GET /health`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    Ok,
    Degraded,
}

/// The state of one dependency check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckState {
    Ok,
    Error,
}

impl CheckState {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckState::Ok => "ok",
            CheckState::Error => "error",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Checks {
    pub database: CheckState,
}

/// The body of `GET /health` (200 and 503 alike).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct HealthReport {
    pub status: HealthStatus,
    pub db: CheckState,
    pub service: String,
    pub checks: Checks,
}

/// The outcome of [`Client::health`](crate::Client::health).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    Healthy(HealthReport),
    /// Only with [`DegradedPolicy::Accept`].
    Degraded(HealthReport),
}

/// Whether a 503 from `/health` is an answer ([`Health::Degraded`]) or an error
/// ([`ClientError::Degraded`](crate::ClientError::Degraded)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DegradedPolicy {
    #[default]
    Reject,
    Accept,
}

/// How the caller of `/machine/health` authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CredentialType {
    ApiKey,
}

/// `GET /machine/health`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct MachineHealth {
    pub status: OkStatus,
    pub service: String,
    pub credential_type: CredentialType,
}

/// `GET /examples/ping`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Pong {
    pub message: String,
    pub status: OkStatus,
}

/// `GET /examples/protected`: the token's verified claims.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Protected {
    pub message: String,
    pub claims: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Note {
    pub id: i64,
    pub title: String,
    pub body: String,
}

/// Create or replace a note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NoteInput {
    pub title: String,
    pub body: String,
}

impl NoteInput {
    pub fn new(title: impl Into<String>, body: impl Into<String>) -> Self {
        NoteInput {
            title: title.into(),
            body: body.into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Tag {
    pub id: i64,
    pub name: String,
}

/// Create or rename a tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TagInput {
    pub name: String,
}

impl TagInput {
    pub fn new(name: impl Into<String>) -> Self {
        TagInput { name: name.into() }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Comment {
    pub id: i64,
    pub note_id: i64,
    pub body: String,
}

/// Create or replace a comment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommentInput {
    pub body: String,
}

impl CommentInput {
    pub fn new(body: impl Into<String>) -> Self {
        CommentInput { body: body.into() }
    }
}

/// `limit` and `offset` of a list call; `None` leaves the server's default (20 and 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PageRequest {
    pub limit: Option<u32>,
    pub offset: Option<u64>,
}

impl PageRequest {
    pub fn new(limit: u32, offset: u64) -> Self {
        PageRequest {
            limit: Some(limit),
            offset: Some(offset),
        }
    }

    pub(crate) fn query(&self) -> Vec<(&'static str, String)> {
        let mut q = Vec::new();
        if let Some(limit) = self.limit {
            q.push(("limit", limit.to_string()));
        }
        if let Some(offset) = self.offset {
            q.push(("offset", offset.to_string()));
        }
        q
    }
}

/// The list envelope `{items, limit, offset, total}`, checked for consistency: `limit` in
/// 1..=100, `offset` and `total` not negative, no more items than `limit`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawPage<T>")]
pub struct Page<T> {
    pub items: Vec<T>,
    pub limit: i64,
    pub offset: i64,
    pub total: i64,
}

#[derive(Deserialize)]
struct RawPage<T> {
    items: Vec<T>,
    limit: i64,
    offset: i64,
    total: i64,
}

impl<T> TryFrom<RawPage<T>> for Page<T> {
    type Error = String;
    fn try_from(raw: RawPage<T>) -> Result<Self, String> {
        if !(1..=100).contains(&raw.limit) {
            return Err(format!("limit {} is outside 1..=100", raw.limit));
        }
        if raw.offset < 0 || raw.total < 0 {
            return Err("offset and total must not be negative".to_owned());
        }
        if raw.items.len() as i64 > raw.limit {
            return Err(format!(
                "{} items in a page of limit {}",
                raw.items.len(),
                raw.limit
            ));
        }
        Ok(Page {
            items: raw.items,
            limit: raw.limit,
            offset: raw.offset,
            total: raw.total,
        })
    }
}

/// A V1 note (`/v1/notes`, deprecated): the body text is called `content`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NoteV1 {
    pub id: i64,
    pub title: String,
    pub content: String,
    pub created_at: String,
}

/// Create a V1 note; `content` absent means `""`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NoteV1Input {
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// `GET /v1/notes`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NoteV1List {
    pub notes: Vec<NoteV1>,
}
