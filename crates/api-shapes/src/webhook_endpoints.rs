//! Outbound webhook endpoints and their delivery log (crates/outbound-webhooks).

use apistos::{ApiComponent, JsonSchema};
use outbound_webhooks::model::{Delivery, Endpoint};
use outbound_webhooks::service::WithSecret;
use serde::{Deserialize, Serialize};

/// `POST /webhook-endpoints`.
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct EndpointBody {
    /// Where deliveries go: an absolute `http` or `https` URL (at most 2,048 characters, no
    /// credentials). Loopback, private, link-local and metadata addresses are refused unless
    /// the operator allows them.
    #[schemars(length(min = 1, max = 2048))]
    pub url: String,
    /// The event types delivered (default: all four).
    #[schemars(extend("items" = {"enum": ["AccountOpened", "MoneyDeposited", "MoneyWithdrawn", "AccountClosed"]}))]
    pub event_types: Option<Vec<String>>,
}

/// `PATCH /webhook-endpoints/{id}`: any of its fields.
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct EndpointPatchBody {
    #[schemars(length(min = 1, max = 2048))]
    pub url: Option<String>,
    #[schemars(extend("items" = {"enum": ["AccountOpened", "MoneyDeposited", "MoneyWithdrawn", "AccountClosed"]}))]
    pub event_types: Option<Vec<String>>,
    /// `false` pauses deliveries (events wait); `true` resumes them at once.
    pub enabled: Option<bool>,
}

/// A registered endpoint.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct EndpointDto {
    pub id: i64,
    pub url: String,
    pub event_types: Vec<String>,
    pub enabled: bool,
    /// Counts the secret's rotations (1 for the first secret).
    pub secret_version: i64,
    pub created_at: String,
    pub updated_at: String,
    /// Failed attempts at the endpoint's next event so far.
    pub failed_attempts: i64,
    /// When the next attempt is due (Unix milliseconds), while one waits; `null` otherwise.
    pub next_attempt_at: Option<i64>,
}

impl From<Endpoint> for EndpointDto {
    fn from(e: Endpoint) -> Self {
        EndpointDto {
            id: e.id,
            url: e.url,
            event_types: e
                .event_types
                .names()
                .iter()
                .map(|t| (*t).to_owned())
                .collect(),
            enabled: e.enabled,
            secret_version: e.secret_version,
            created_at: e.created_at,
            updated_at: e.updated_at,
            failed_attempts: e.failed_attempts,
            next_attempt_at: (e.next_attempt_at > 0).then_some(e.next_attempt_at),
        }
    }
}

/// An endpoint with its signing secret: shown only when it is registered and when the secret
/// is rotated, never again (the service does not store it).
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct EndpointWithSecretDto {
    #[serde(flatten)]
    pub endpoint: EndpointDto,
    /// The Standard Webhooks secret (`whsec_` and base64) that verifies this endpoint's
    /// deliveries.
    pub secret: String,
}

impl From<WithSecret> for EndpointWithSecretDto {
    fn from(w: WithSecret) -> Self {
        EndpointWithSecretDto {
            endpoint: w.endpoint.into(),
            secret: w.secret,
        }
    }
}

http_edge::list_dto!(EndpointList, EndpointDto);

/// One attempt at delivering one event.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct DeliveryDto {
    pub id: i64,
    /// The `webhook-id` sent, the same on every attempt at the event (`evt_<event id>`).
    pub message_id: String,
    /// The account event's `id`.
    pub event_id: i64,
    /// 1 for the first attempt at the event.
    pub attempt: i64,
    /// `delivered` (2xx), `failed` (tried again at `next_attempt_at`) or `gave_up` (the last
    /// attempt failed; the endpoint went on to its next event).
    #[schemars(extend("enum" = ["delivered", "failed", "gave_up"]))]
    pub outcome: String,
    /// The endpoint's status code, when it answered.
    pub response_status: Option<i64>,
    pub latency_ms: i64,
    /// What went wrong, when something did.
    pub error: Option<String>,
    /// Unix milliseconds, after a failure.
    pub next_attempt_at: Option<i64>,
    pub attempted_at: String,
    /// A redelivery asked for by the owner.
    pub manual: bool,
}

impl From<Delivery> for DeliveryDto {
    fn from(d: Delivery) -> Self {
        DeliveryDto {
            id: d.id,
            message_id: d.message_id,
            event_id: d.event_id,
            attempt: d.attempt,
            outcome: d.outcome,
            response_status: d.response_status,
            latency_ms: d.latency_ms,
            error: d.error,
            next_attempt_at: d.next_attempt_at,
            attempted_at: d.attempted_at,
            manual: d.manual,
        }
    }
}

http_edge::list_dto!(DeliveryList, DeliveryDto);

#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct EndpointPath {
    pub id: String,
}

#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct DeliveryPath {
    pub id: String,
    pub delivery_id: i64,
}
