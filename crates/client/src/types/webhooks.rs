//! Signed webhooks (area F): deliveries the service accepted.

use serde::Deserialize;

/// A delivery the service accepted (schema `WebhookEventDto`).
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// for event in api.webhooks().list(Default::default()).await?.items {
///     println!("{} {} at {}: {}", event.id, event.event_type, event.delivered_at, event.payload);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WebhookEvent {
    pub id: i64,
    pub event_type: String,
    /// The raw request body text, exactly as received.
    pub payload: String,
    pub delivered_at: String,
}

/// `status` of a receipt: always `accepted`.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let receipt = api.webhooks().deliver(b"secret", br#"{"event_type":"ping"}"#).await?;
/// assert_eq!(receipt.status, client::ReceiptStatus::Accepted);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReceiptStatus {
    Accepted,
}

/// The answer to a delivery (schema `WebhookReceipt`): the stored event's id, for an exact
/// replay the original delivery's.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let receipt: client::WebhookReceipt =
///     api.webhooks().deliver(b"secret", br#"{"event_type":"note.created"}"#).await?;
/// println!("stored as {}", receipt.id);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct WebhookReceipt {
    pub id: i64,
    pub status: ReceiptStatus,
}
