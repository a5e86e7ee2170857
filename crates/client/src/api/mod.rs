//! The typed methods, one per OpenAPI operation (the `operation` of an error is its
//! `operationId`): the service-wide ones here, each area behind a small handle made by an
//! accessor of [`Client`] (`notes()`, `articles()`, `users()`, `accounts()`, …).

mod accounts;
mod articles;
mod endpoints;
mod resource;
mod streams;
mod users;
mod versioned;
mod webhooks;

pub use accounts::Accounts;
pub use articles::Articles;
pub use endpoints::WebhookEndpoints;
pub use resource::{Comments, Notes, Operations, Resource, Tags};
pub use streams::{StreamedEvent, Subscription};
pub use users::{Tokens, Users};
pub use versioned::{V1Notes, V2Notes};
pub use webhooks::Webhooks;

use futures_util::Stream;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use problem_details::Slug;
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;

use crate::error::ClientError;
use crate::transport::{Call, Client};
use crate::types::{
    AuditPage, AuditRequest, DegradedPolicy, Health, HealthReport, HealthStatus, MachineHealth,
    Page, PageRequest, Pong, ProblemTypeDoc, Protected, Readiness, ServiceInfo, V1Usage,
};
use crate::walk::walk;

/// What may stand unescaped in a path segment (RFC 3986 unreserved).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `value` as one path segment. `.` and `..` are refused: URL parsing would resolve them, and
/// the request would go to another route.
pub(crate) fn segment(op: &'static str, value: &str) -> Result<String, ClientError> {
    if matches!(value, "" | "." | "..") {
        return Err(ClientError::InvalidInput(format!(
            "{op}: {value:?} cannot be a path segment"
        )));
    }
    Ok(utf8_percent_encode(value, SEGMENT).to_string())
}

impl Client {
    /// A list of the `{items, limit, offset, total, next_offset}` envelope at `path`, followed
    /// page by page through `next_offset`.
    pub(crate) fn offset_stream<T: DeserializeOwned + Send + 'static>(
        &self,
        op: &'static str,
        path: String,
        limit: u32,
    ) -> impl Stream<Item = Result<T, ClientError>> + Send + 'static {
        let client = self.clone();
        walk(op, 0u64, move |offset| {
            let (client, path) = (client.clone(), path.clone());
            async move {
                let page = PageRequest::new(limit, offset).query();
                let call = Call::new(op, Method::GET, path).query(page);
                let page: Page<T> = client.fetch(call, StatusCode::OK).await?.0;
                let next = page.next_offset.and_then(|n| u64::try_from(n).ok());
                Ok((page.items, next))
            }
        })
    }

    fn check_service(&self, operation: &'static str, actual: &str) -> Result<(), ClientError> {
        match self.expected_service() {
            Some(expected) if expected != actual => Err(ClientError::ServiceMismatch {
                operation,
                expected: expected.to_owned(),
                actual: actual.to_owned(),
            }),
            _ => Ok(()),
        }
    }

    /// `GET /`: service metadata (its `name` is checked against
    /// [`expect_service`](crate::ClientBuilder::expect_service)).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// println!("{}", api.service_info().await?.version);
    /// # Ok(()) }
    /// ```
    pub async fn service_info(&self) -> Result<ServiceInfo, ClientError> {
        let call = Call::new("service_info", Method::GET, "/");
        let (info, _): (ServiceInfo, _) = self.fetch(call, StatusCode::OK).await?;
        self.check_service("service_info", &info.name)?;
        Ok(info)
    }

    /// `GET /health`. A 503 is [`Health::Degraded`] with [`DegradedPolicy::Accept`], else
    /// [`ClientError::Degraded`]; it is never retried. The `service` member is checked first.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// api.health(client::DegradedPolicy::Reject).await?; // Err while the database is down
    /// # Ok(()) }
    /// ```
    pub async fn health(&self, policy: DegradedPolicy) -> Result<Health, ClientError> {
        const OP: &str = "health";
        let mut call = Call::new(OP, Method::GET, "/health");
        call.answers = &[503];
        let reply = self.execute(&call).await?;
        let degraded = reply.status == StatusCode::SERVICE_UNAVAILABLE
            && reply.content_type().as_deref() == Some("application/json");
        if !degraded {
            reply.expect(StatusCode::OK)?;
        }
        let report: HealthReport = reply.decode()?;
        self.check_service(OP, &report.service)?;
        match (degraded, report.status, policy) {
            (false, HealthStatus::Ok, _) => Ok(Health::Healthy(report)),
            (true, HealthStatus::Degraded, DegradedPolicy::Accept) => Ok(Health::Degraded(report)),
            (true, HealthStatus::Degraded, DegradedPolicy::Reject) => {
                Err(ClientError::Degraded(report))
            }
            (_, status, _) => Err(ClientError::invalid(
                OP,
                format!(
                    "status {status:?} does not match HTTP {}",
                    reply.status.as_u16()
                ),
            )),
        }
    }

    /// `GET /health/live`: `Ok` while the server process serves requests.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// api.live().await?;
    /// # Ok(()) }
    /// ```
    pub async fn live(&self) -> Result<(), ClientError> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Live {
            status: String,
        }
        let call = Call::new("health_live", Method::GET, "/health/live");
        let (live, _): (Live, _) = self.fetch(call, StatusCode::OK).await?;
        match live.status.as_str() {
            "live" => Ok(()),
            other => Err(ClientError::invalid(
                "health_live",
                format!("status {other:?} is not \"live\""),
            )),
        }
    }

    /// `GET /health/ready`: its answer, 200 (ready) or 503 (not ready) alike; an error only
    /// when the server answers something else.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// if !api.ready().await?.is_ready() {
    ///     println!("send no traffic here");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn ready(&self) -> Result<Readiness, ClientError> {
        const OP: &str = "health_ready";
        let mut call = Call::new(OP, Method::GET, "/health/ready");
        call.answers = &[503];
        let reply = self.execute(&call).await?;
        let not_ready = reply.status == StatusCode::SERVICE_UNAVAILABLE
            && reply.content_type().as_deref() == Some("application/json");
        if !not_ready {
            reply.expect(StatusCode::OK)?;
        }
        let ready: Readiness = reply.decode()?;
        if ready.is_ready() == not_ready {
            return Err(ClientError::invalid(
                OP,
                format!(
                    "status {:?} does not match HTTP {}",
                    ready.status,
                    reply.status.as_u16()
                ),
            ));
        }
        Ok(ready)
    }

    /// `GET /metrics`: the Prometheus text exposition, as sent (with `API_AUTH=tokens` the
    /// client needs the operator key).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let text = api.metrics().await?;
    /// assert!(text.contains("http_requests_total"));
    /// # Ok(()) }
    /// ```
    pub async fn metrics(&self) -> Result<String, ClientError> {
        const OP: &str = "metrics";
        let reply = self
            .execute(&Call::new(OP, Method::GET, "/metrics"))
            .await?;
        reply.expect(StatusCode::OK)?;
        let text_format = reply
            .content_type()
            .is_some_and(|t| t.starts_with("text/plain"));
        if !text_format {
            return Err(ClientError::invalid(OP, "the metrics are not text/plain"));
        }
        reply.text()
    }

    /// `GET /machine/health` with the configured API key.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), client::ClientError> {
    /// let api = client::Client::builder("http://127.0.0.1:8080").api_key("key").build()?;
    /// api.machine_health().await?;
    /// # Ok(()) }
    /// ```
    pub async fn machine_health(&self) -> Result<MachineHealth, ClientError> {
        let call = Call::new("machine_health", Method::GET, "/machine/health");
        let (health, _): (MachineHealth, _) = self.fetch(call, StatusCode::OK).await?;
        self.check_service("machine_health", &health.service)?;
        Ok(health)
    }

    /// `GET /examples/ping`.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// api.ping().await?;
    /// # Ok(()) }
    /// ```
    pub async fn ping(&self) -> Result<Pong, ClientError> {
        let call = Call::new("example_ping", Method::GET, "/examples/ping");
        let (pong, _): (Pong, _) = self.fetch(call, StatusCode::OK).await?;
        if pong.message == "pong" {
            Ok(pong)
        } else {
            Err(ClientError::invalid(
                "example_ping",
                format!("message is {:?}, not \"pong\"", pong.message),
            ))
        }
    }

    /// `GET /examples/protected` with the configured bearer JWT.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), client::ClientError> {
    /// let api = client::Client::builder("http://127.0.0.1:8080").bearer_token("eyJ…").build()?;
    /// println!("{:?}", api.protected().await?.claims);
    /// # Ok(()) }
    /// ```
    pub async fn protected(&self) -> Result<Protected, ClientError> {
        let call = Call::new("example_protected", Method::GET, "/examples/protected");
        Ok(self.fetch(call, StatusCode::OK).await?.0)
    }

    /// `GET /problems/{slug}`: what a problem type means, as JSON.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let doc = api.problem_type(client::Slug::IdempotencyKeyReused).await?;
    /// println!("{}", doc.description);
    /// # Ok(()) }
    /// ```
    pub async fn problem_type(&self, slug: Slug) -> Result<ProblemTypeDoc, ClientError> {
        let path = format!("/problems/{}", slug.as_str());
        let call = Call::new("problem_type", Method::GET, path);
        Ok(self.fetch(call, StatusCode::OK).await?.0)
    }

    /// `GET /metrics/v1-usage`: who still calls the deprecated V1 API, most calls first.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let usage = api.v1_usage(client::PageRequest::new(100, 0)).await?;
    /// println!("{} callers", usage.total);
    /// # Ok(()) }
    /// ```
    pub async fn v1_usage(&self, page: PageRequest) -> Result<Page<V1Usage>, ClientError> {
        let call = Call::new("v1_usage", Method::GET, "/metrics/v1-usage").query(page.query());
        Ok(self.fetch(call, StatusCode::OK).await?.0)
    }

    /// `GET /audit`: who made each successful write, newest first (operator data: with
    /// authentication on, build the client with the operator key).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// for row in api.audit(client::AuditRequest::new(50).user(7)).await?.items {
    ///     println!("{} {} {} by token {:?}", row.at, row.method, row.resource, row.token_id);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn audit(&self, page: AuditRequest) -> Result<AuditPage, ClientError> {
        let call = Call::new("list_audit", Method::GET, "/audit").query(page.query());
        Ok(self.fetch(call, StatusCode::OK).await?.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every operation of the committed OpenAPI document is called by a method of this module:
    /// its `operationId` is the `operation` the method names in its errors. A route added to
    /// the service without a method here fails this test.
    #[test]
    fn every_operation_has_a_method() {
        let doc: serde_json::Value =
            serde_json::from_str(include_str!("../../../../docs/openapi.json")).unwrap();
        let sources = [
            include_str!("mod.rs"),
            include_str!("accounts.rs"),
            include_str!("articles.rs"),
            include_str!("endpoints.rs"),
            include_str!("resource.rs"),
            include_str!("streams.rs"),
            include_str!("users.rs"),
            include_str!("versioned.rs"),
            include_str!("webhooks.rs"),
        ]
        .concat();
        let paths = doc["paths"].as_object().unwrap();
        let ids: Vec<&str> = paths
            .values()
            .flat_map(|ops| ops.as_object().unwrap().values())
            .filter_map(|op| op.get("operationId")?.as_str())
            .collect();
        assert!(ids.len() >= 50, "{ids:?}");
        for id in ids {
            assert!(
                sources.contains(&format!("\"{id}\"")),
                "no method calls {id}"
            );
        }
    }

    #[test]
    fn segments_are_escaped_and_dot_segments_refused() {
        assert_eq!(segment("op", "acc-1.x_y~").unwrap(), "acc-1.x_y~");
        assert_eq!(segment("op", "a/b?c#d").unwrap(), "a%2Fb%3Fc%23d");
        assert_eq!(segment("op", "é").unwrap(), "%C3%A9");
        for bad in ["", ".", ".."] {
            assert!(matches!(
                segment("op", bad),
                Err(ClientError::InvalidInput(_))
            ));
        }
    }
}
