//! Request and response types, written to match `docs/openapi.json` schema by schema.
//! Responses are decoded strictly in type (an `id` sent as a string is an error) and leniently
//! in extent (members this client does not know are ignored, so the service can add fields).
//! This module holds the service-wide ones; each area has its own file.

mod accounts;
mod articles;
mod audit;
mod endpoints;
mod notes;
mod paging;
mod tokens;
mod webhooks;

pub use accounts::{
    Account, AccountEvent, AccountEventList, AggregateType, AmountPayload, EventType,
    EventsRequest, NewEvent, NewTransfer, OpenAccount, Transfer,
};
pub use articles::{Article, ArticleCursorPage, ArticleInput, ArticleOffsetPage, CursorRequest};
pub use audit::{AuditEntry, AuditPage, AuditRequest};
pub use endpoints::{
    EndpointChange, EndpointSecret, NewEndpoint, WebhookDelivery, WebhookEndpoint,
};
pub(crate) use notes::Envelope;
pub use notes::{
    Comment, CommentInput, Note, NoteInput, NoteV1, NoteV1Input, NoteV1List, NoteV2, NoteV2Input,
    NoteV2List, NoteV2Meta, Tag, TagInput,
};
pub use paging::{Page, PageRequest};
pub use tokens::{
    IssueToken, IssuedToken, RawToken, Scope, TokenInfo, TokenList, User, UserInput, Verification,
};
pub use webhooks::{ReceiptStatus, WebhookEvent, WebhookReceipt};

use serde::Deserialize;
use serde_json::{Map, Value};

/// `GET /` (schema `ServiceInfo`).
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let info: client::ServiceInfo = api.service_info().await?;
/// println!("{} {}", info.name, info.version);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ServiceInfo {
    pub name: String,
    pub description: String,
    pub version: String,
    pub status: OkStatus,
}

/// A status member that must be exactly `"ok"`.
///
/// ```
/// let pong: client::Pong = serde_json::from_str(r#"{"message":"pong","status":"ok"}"#).unwrap();
/// assert_eq!(pong.status, client::OkStatus::Ok);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum OkStatus {
    #[serde(rename = "ok")]
    Ok,
}

/// `status` of `GET /health`.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// use client::{DegradedPolicy, Health, HealthStatus};
/// let (Health::Healthy(report) | Health::Degraded(report)) = api.health(DegradedPolicy::Accept).await?;
/// assert!(matches!(report.status, HealthStatus::Ok | HealthStatus::Degraded));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    Ok,
    Degraded,
}

/// The body of `GET /health/ready` (200 and 503 alike; schema `ReadyDto`).
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let ready = api.ready().await?;
/// assert_eq!(ready.is_ready(), !ready.draining && ready.database == client::ReadyCheck::Ok);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Readiness {
    pub status: ReadyStatus,
    pub database: ReadyCheck,
    /// True from SIGTERM on, for the server's drain period.
    pub draining: bool,
}

impl Readiness {
    /// Whether the instance takes traffic.
    pub fn is_ready(&self) -> bool {
        self.status == ReadyStatus::Ready
    }
}

/// `status` of `GET /health/ready`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadyStatus {
    Ready,
    NotReady,
}

/// `database` of `GET /health/ready`: not checked while the instance drains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadyCheck {
    Ok,
    Error,
    Unchecked,
}

/// The state of one dependency check.
///
/// ```
/// assert_eq!(client::CheckState::Error.as_str(), "error");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckState {
    Ok,
    Error,
}

impl CheckState {
    /// The wire form, `ok` or `error`.
    ///
    /// ```
    /// assert_eq!(client::CheckState::Ok.as_str(), "ok");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            CheckState::Ok => "ok",
            CheckState::Error => "error",
        }
    }
}

/// `checks` of a health report: one state per dependency.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// if let client::Health::Healthy(report) = api.health(Default::default()).await? {
///     assert_eq!(report.checks.database, client::CheckState::Ok);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Checks {
    pub database: CheckState,
}

/// The body of `GET /health` (200 and 503 alike; schema `HealthDto`).
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// if let client::Health::Healthy(report) = api.health(Default::default()).await? {
///     println!("{} database: {}", report.service, report.db.as_str());
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct HealthReport {
    pub status: HealthStatus,
    pub db: CheckState,
    pub service: String,
    pub checks: Checks,
}

/// The outcome of [`Client::health`](crate::Client::health).
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// match api.health(client::DegradedPolicy::Accept).await? {
///     client::Health::Healthy(_) => println!("up"),
///     client::Health::Degraded(report) => println!("database: {}", report.db.as_str()),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    Healthy(HealthReport),
    /// Only with [`DegradedPolicy::Accept`].
    Degraded(HealthReport),
}

/// Whether a 503 from `/health` is an answer ([`Health::Degraded`]) or an error
/// ([`ClientError::Degraded`](crate::ClientError::Degraded)).
///
/// ```
/// assert_eq!(client::DegradedPolicy::default(), client::DegradedPolicy::Reject);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DegradedPolicy {
    #[default]
    Reject,
    Accept,
}

/// How the caller of `/machine/health` authenticated.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// assert_eq!(api.machine_health().await?.credential_type, client::CredentialType::ApiKey);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CredentialType {
    ApiKey,
}

/// `GET /machine/health`.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let health: client::MachineHealth = api.machine_health().await?;
/// println!("{}", health.service);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct MachineHealth {
    pub status: OkStatus,
    pub service: String,
    pub credential_type: CredentialType,
}

/// `GET /examples/ping`.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// assert_eq!(api.ping().await?.message, "pong");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Pong {
    pub message: String,
    pub status: OkStatus,
}

/// `GET /examples/protected`: the token's verified claims.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let protected: client::Protected = api.protected().await?;
/// println!("subject: {:?}", protected.claims.get("sub"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Protected {
    pub message: String,
    pub claims: Map<String, Value>,
}

/// `GET /problems/{slug}`: what a problem type means (schema `ProblemTypeDoc`).
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let doc = api.problem_type(client::Slug::PreconditionFailed).await?;
/// assert_eq!(doc.status, 412);
/// println!("{}: {}", doc.title, doc.description);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ProblemTypeDoc {
    pub slug: String,
    pub title: String,
    pub status: u16,
    pub description: String,
}

/// One caller of the deprecated V1 API (`GET /metrics/v1-usage`, schema `V1UsageDto`).
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// for usage in api.v1_usage(client::PageRequest::new(100, 0)).await?.items {
///     println!("{} called V1 {} times, last at {}", usage.caller, usage.calls, usage.last_seen);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct V1Usage {
    /// `user:<X-User-Id>` or `ip:<client address>`.
    pub caller: String,
    pub calls: i64,
    pub first_seen: String,
    pub last_seen: String,
}
