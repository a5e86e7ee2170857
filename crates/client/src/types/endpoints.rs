//! Outbound webhooks: endpoints and their delivery log (docs/events.md).

use serde::{Deserialize, Serialize};

/// A registered endpoint (schema `EndpointDto`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WebhookEndpoint {
    pub id: i64,
    pub url: String,
    pub event_types: Vec<String>,
    pub enabled: bool,
    pub secret_version: i64,
    pub created_at: String,
    pub updated_at: String,
    pub failed_attempts: i64,
    pub next_attempt_at: Option<i64>,
}

/// An endpoint and its `whsec_` secret: the answer of a registration or a rotation, the only
/// times the secret is shown (schema `EndpointWithSecretDto`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct EndpointSecret {
    #[serde(flatten)]
    pub endpoint: WebhookEndpoint,
    pub secret: String,
}

/// A new endpoint: where, and which event types (all four when `None`).
///
/// ```
/// let input = client::NewEndpoint::new("https://hooks.example.com/in")
///     .only(&["MoneyDeposited"]);
/// assert_eq!(input.event_types.as_deref(), Some(&["MoneyDeposited".to_owned()][..]));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewEndpoint {
    pub url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_types: Option<Vec<String>>,
}

impl NewEndpoint {
    pub fn new(url: impl Into<String>) -> Self {
        NewEndpoint {
            url: url.into(),
            event_types: None,
        }
    }

    /// Only these event types.
    pub fn only(mut self, types: &[&str]) -> Self {
        self.event_types = Some(types.iter().map(|t| (*t).to_owned()).collect());
        self
    }
}

/// A change to an endpoint: each field when `Some`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EndpointChange {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_types: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// One attempt at delivering one event (schema `DeliveryDto`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WebhookDelivery {
    pub id: i64,
    /// The `webhook-id` sent (`evt_<event id>`), the same on every attempt.
    pub message_id: String,
    pub event_id: i64,
    pub attempt: i64,
    /// `delivered`, `failed` or `gave_up`.
    pub outcome: String,
    pub response_status: Option<i64>,
    pub latency_ms: i64,
    pub error: Option<String>,
    pub next_attempt_at: Option<i64>,
    pub attempted_at: String,
    pub manual: bool,
}
