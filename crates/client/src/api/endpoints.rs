//! Outbound webhooks (docs/events.md): the caller's endpoints and their delivery log.

use reqwest::{Method, StatusCode};

use crate::api::segment;
use crate::error::ClientError;
use crate::transport::{Call, Client};
use crate::types::{
    EndpointChange, EndpointSecret, NewEndpoint, Page, PageRequest, WebhookDelivery,
    WebhookEndpoint,
};

/// `/webhook-endpoints`. Made by [`Client::webhook_endpoints`].
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let endpoints = api.webhook_endpoints();
/// let made = endpoints.create(&client::NewEndpoint::new("https://hooks.example.com/in")).await?;
/// println!("verify deliveries with {}", made.secret);
/// let log = endpoints.deliveries(made.endpoint.id, Default::default()).await?;
/// # let _ = log; Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct WebhookEndpoints<'a> {
    client: &'a Client,
}

fn path(op: &'static str, id: i64, rest: &str) -> Result<String, ClientError> {
    Ok(format!(
        "/webhook-endpoints/{}{rest}",
        segment(op, &id.to_string())?
    ))
}

impl WebhookEndpoints<'_> {
    /// Registers an endpoint; the answer's `secret` is shown this once. Not retried: a lost
    /// answer would leave a second endpoint behind.
    pub async fn create(&self, input: &NewEndpoint) -> Result<EndpointSecret, ClientError> {
        let call = Call::new(
            "create_webhook_endpoint",
            Method::POST,
            "/webhook-endpoints",
        )
        .json(input)?;
        Ok(self.client.fetch(call, StatusCode::CREATED).await?.0)
    }

    pub async fn list(&self, page: PageRequest) -> Result<Page<WebhookEndpoint>, ClientError> {
        let call = Call::new("list_webhook_endpoints", Method::GET, "/webhook-endpoints")
            .query(page.query());
        Ok(self.client.fetch(call, StatusCode::OK).await?.0)
    }

    pub async fn get(&self, id: i64) -> Result<WebhookEndpoint, ClientError> {
        let op = "get_webhook_endpoint";
        let call = Call::new(op, Method::GET, path(op, id, "")?);
        Ok(self.client.fetch(call, StatusCode::OK).await?.0)
    }

    pub async fn update(
        &self,
        id: i64,
        change: &EndpointChange,
    ) -> Result<WebhookEndpoint, ClientError> {
        let op = "update_webhook_endpoint";
        let call = Call::new(op, Method::PATCH, path(op, id, "")?)
            .json(change)?
            .retry_safe();
        Ok(self.client.fetch(call, StatusCode::OK).await?.0)
    }

    pub async fn delete(&self, id: i64) -> Result<(), ClientError> {
        let op = "delete_webhook_endpoint";
        let call = Call::new(op, Method::DELETE, path(op, id, "")?).retry_safe();
        self.client.fetch_empty(call, StatusCode::NO_CONTENT).await
    }

    /// A new secret, shown this once; the old one still signs for 24 hours.
    pub async fn rotate_secret(&self, id: i64) -> Result<EndpointSecret, ClientError> {
        let op = "rotate_webhook_endpoint_secret";
        let call = Call::new(op, Method::POST, path(op, id, "/rotate-secret")?);
        Ok(self.client.fetch(call, StatusCode::OK).await?.0)
    }

    /// The delivery log, newest first.
    pub async fn deliveries(
        &self,
        id: i64,
        page: PageRequest,
    ) -> Result<Page<WebhookDelivery>, ClientError> {
        let op = "list_webhook_deliveries";
        let call = Call::new(op, Method::GET, path(op, id, "/deliveries")?).query(page.query());
        Ok(self.client.fetch(call, StatusCode::OK).await?.0)
    }

    /// Sends the event of delivery `delivery_id` again, now.
    pub async fn redeliver(
        &self,
        id: i64,
        delivery_id: i64,
    ) -> Result<WebhookDelivery, ClientError> {
        let op = "redeliver_webhook";
        let rest = format!("/deliveries/{delivery_id}/redeliver");
        let call = Call::new(op, Method::POST, path(op, id, &rest)?);
        Ok(self.client.fetch(call, StatusCode::CREATED).await?.0)
    }
}

impl Client {
    /// Outbound webhook endpoints (see [`WebhookEndpoints`]).
    pub fn webhook_endpoints(&self) -> WebhookEndpoints<'_> {
        WebhookEndpoints { client: self }
    }
}
