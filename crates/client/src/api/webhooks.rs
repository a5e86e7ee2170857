//! Signed webhooks (area F): deliver one (as a sender would) and list what was accepted.

use std::time::{SystemTime, UNIX_EPOCH};

use futures_util::Stream;
use reqwest::{Method, StatusCode};

use crate::error::ClientError;
use crate::transport::{Call, Client};
use crate::types::{Page, PageRequest, WebhookEvent, WebhookReceipt};

const LIST: &str = "list_webhook_events";

/// `/webhook`. Made by [`Client::webhooks`].
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let receipt = api.webhooks().deliver(b"whsec_example", br#"{"event_type":"note.created"}"#).await?;
/// let latest = api.webhooks().list(client::PageRequest::new(1, 0)).await?;
/// assert_eq!(latest.items[0].id, receipt.id);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Webhooks<'a> {
    client: &'a Client,
}

impl Webhooks<'_> {
    /// `POST /webhook`: `body` as sent, signed with `secret` at the current time
    /// (`X-Webhook-Signature: t=…,v1=…`). Retried safely: every attempt carries the same
    /// signature, and the service answers an exact replay with the original id, storing
    /// nothing twice. The body must be a JSON object with a string `event_type` (else 400
    /// `invalid-body`); a wrong secret is 401 `invalid-signature`.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let body = serde_json::to_vec(&serde_json::json!({"event_type": "invoice.paid", "id": 7})).unwrap();
    /// let receipt = api.webhooks().deliver(b"whsec_example", &body).await?;
    /// # let _ = receipt; Ok(()) }
    /// ```
    pub async fn deliver(&self, secret: &[u8], body: &[u8]) -> Result<WebhookReceipt, ClientError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let signature = webhook_verify::header(secret, now, body);
        let call = Call::new("receive_webhook", Method::POST, "/webhook")
            .bytes(body.to_vec())
            .header("x-webhook-signature", &signature)?
            .retry_safe();
        Ok(self.client.fetch(call, StatusCode::ACCEPTED).await?.0)
    }

    /// `GET /webhook/events`: one page, newest first.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let page = api.webhooks().list(client::PageRequest::new(20, 0)).await?;
    /// # let _ = page; Ok(()) }
    /// ```
    pub async fn list(&self, page: PageRequest) -> Result<Page<WebhookEvent>, ClientError> {
        let call = Call::new(LIST, Method::GET, "/webhook/events").query(page.query());
        Ok(self.client.fetch(call, StatusCode::OK).await?.0)
    }

    /// Every accepted delivery, newest first, read `limit` (1 to 100) at a time.
    ///
    /// ```no_run
    /// use client::TryStreamExt;
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let all: Vec<client::WebhookEvent> = api.webhooks().stream(100).try_collect().await?;
    /// # let _ = all; Ok(()) }
    /// ```
    pub fn stream(
        &self,
        limit: u32,
    ) -> impl Stream<Item = Result<WebhookEvent, ClientError>> + Send + 'static {
        self.client
            .offset_stream(LIST, "/webhook/events".to_owned(), limit)
    }
}

impl Client {
    /// Webhooks (see [`Webhooks`]).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let page = api.webhooks().list(Default::default()).await?;
    /// # let _ = page; Ok(()) }
    /// ```
    pub fn webhooks(&self) -> Webhooks<'_> {
        Webhooks { client: self }
    }
}
