//! Area F: signed webhook intake (`POST /webhook`) and the received events
//! (`GET /webhook/events`).

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::header::{HeaderValue, WWW_AUTHENTICATE};
use actix_web::web::{Data, Json};
use actix_web::{FromRequest, HttpRequest};
use anyhow::anyhow;
use apistos::actix::AcceptedJson;
use apistos::paths::{Parameter, ParameterDefinition, ParameterIn, ParameterStyle, RequestBody};
use apistos::reference_or::ReferenceOr;
use apistos::web::{ServiceConfig, get, post, resource};
use apistos::{ApiComponent, ApistosSchema, OpenApiVersion, api_operation};
use schemars::JsonSchema;
use serde::Serialize;
use webhooks::{Delivery, Intake, SIGNATURE_HEADER, WebhookEvent, repo};

use apistos::schemars;

use super::dto::{PageQuery, offset_page};
use crate::auth::{Access, Rule};
use crate::context::Context;
use crate::settings::Settings;
use actix_web::http::Method;
use http_edge::db::Db;
use http_edge::error::ApiError;
use http_edge::extract::{RawQuery, read_body};
use http_edge::links::Linked;

/// Counts every delivery's verification by outcome (`verified`, or why it was refused).
pub fn verifications(
    metrics: &http_edge::metrics::Metrics,
) -> Result<prometheus::IntCounterVec, prometheus::Error> {
    metrics.counter(
        "webhook_verifications_total",
        "Webhook deliveries by verification outcome: verified, missing_header, \
         malformed_header, stale_timestamp, signature_mismatch, no_secret, invalid_body, \
         invalid_event_type.",
        &["outcome"],
    )
}

/// The intake of `WEBHOOK_SECRET` / `WEBHOOK_SECRET_PREVIOUS`. An unset secret is allowed
/// (every delivery is then refused, and this warns); a blank one stops start-up.
pub fn intake(settings: &Settings) -> anyhow::Result<Intake> {
    fn expose(secret: &Option<crate::settings::Secret>) -> Option<&[u8]> {
        secret.as_ref().map(|s| s.expose().as_bytes())
    }
    let intake = Intake::from_secrets(
        expose(&settings.webhook_secret),
        expose(&settings.webhook_secret_previous),
    )
    .map_err(|bad| {
        let variable = match bad {
            webhooks::BadSecret::Current => "WEBHOOK_SECRET",
            webhooks::BadSecret::Previous => "WEBHOOK_SECRET_PREVIOUS",
        };
        anyhow!("{variable}: must not be empty or whitespace only")
    })?;
    if !intake.is_configured() {
        log::warn!("WEBHOOK_SECRET is not set: every webhook delivery will be refused with 401");
    }
    Ok(intake.with_clock(settings.webhook_clock))
}

/// The documented request body. The service reads only `event_type`; the whole body is stored
/// as sent.
#[derive(Debug, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct WebhookBody {
    /// Any string; stored as the event's type.
    pub event_type: String,
}

/// Steps 1 to 3 of spec 4.6 as an extractor: the raw body (within `MAX_BODY_BYTES`, else 413;
/// no content-type check, no parsing before the signature), the signature verified over those
/// bytes (401 with a `WWW-Authenticate` challenge), then the body read (400 / 422).
pub struct VerifiedDelivery(Delivery);

/// RFC 9110 requires a challenge on every 401; this one names the header to sign with.
const CHALLENGE: &str = "HMAC-SHA256 header=\"X-Webhook-Signature\"";

impl FromRequest for VerifiedDelivery {
    type Error = actix_web::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self, actix_web::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let req = req.clone();
        let mut payload = payload.take();
        Box::pin(async move {
            let body = read_body(&req, &mut payload).await?;
            let context = Context::of(&req)?;
            let signatures: Vec<&[u8]> = req
                .headers()
                .get_all(SIGNATURE_HEADER)
                .map(HeaderValue::as_bytes)
                .collect();
            let verified = context.intake.accept_now(&signatures, &body);
            let outcome = verified
                .as_ref()
                .map_or_else(webhooks::Error::outcome, |_| "verified");
            context
                .webhook_verifications
                .with_label_values(&[outcome])
                .inc();
            verified.map(VerifiedDelivery).map_err(refused)
        })
    }
}

fn refused(err: webhooks::Error) -> actix_web::Error {
    let challenge = matches!(err, webhooks::Error::Signature(_));
    let err = ApiError::from(err);
    match challenge {
        true => err.with_header(WWW_AUTHENTICATE, HeaderValue::from_static(CHALLENGE)),
        false => err,
    }
    .into()
}

impl ApiComponent for VerifiedDelivery {
    fn child_schemas(v: OpenApiVersion) -> Vec<(String, ReferenceOr<ApistosSchema>)> {
        WebhookBody::child_schemas(v)
    }
    fn schema(v: OpenApiVersion) -> Option<(String, ReferenceOr<ApistosSchema>)> {
        WebhookBody::schema(v)
    }
    fn request_body(v: OpenApiVersion, description: Option<String>) -> Option<RequestBody> {
        <Json<WebhookBody> as ApiComponent>::request_body(v, description)
    }
    fn parameters(v: OpenApiVersion, _: Option<String>) -> Vec<Parameter> {
        let schema = serde_json::json!({
            "type": "string",
            "example": "t=1700000000,v1=878eec4bcc8fabf4ee20d648c613dd0aeee0a977832c7ea922d19ee7f9507212"
        });
        vec![Parameter {
            name: SIGNATURE_HEADER.to_owned(),
            _in: ParameterIn::Header,
            description: Some(
                "`t=<unix seconds>,v1=<lowercase hex HMAC-SHA256 of \"<t>.<raw body>\" under \
                 WEBHOOK_SECRET>`; `t` within 300 seconds of the server's clock either way."
                    .to_owned(),
            ),
            required: Some(true),
            style: Some(ParameterStyle::Simple),
            definition: Some(ParameterDefinition::Schema(ReferenceOr::Object(
                ApistosSchema::from_value(&schema, v),
            ))),
            ..Default::default()
        }]
    }
}

#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
#[serde(rename_all = "lowercase")]
pub enum ReceiptStatus {
    Accepted,
}

/// The stored event's id (for an exact replay, the original delivery's id).
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct WebhookReceipt {
    pub id: i64,
    pub status: ReceiptStatus,
}

#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct WebhookEventDto {
    pub id: i64,
    pub event_type: String,
    /// The raw request body text, exactly as received.
    pub payload: String,
    /// When the delivery was received (RFC 3339, UTC).
    pub delivered_at: String,
}

impl From<WebhookEvent> for WebhookEventDto {
    fn from(e: WebhookEvent) -> Self {
        WebhookEventDto {
            id: e.id,
            event_type: e.event_type,
            payload: e.payload,
            delivered_at: e.delivered_at,
        }
    }
}

http_edge::list_dto!(WebhookEventList, WebhookEventDto);

/// Receive a signed webhook
///
/// Reads the raw body, verifies `X-Webhook-Signature` over those bytes (401
/// `invalid-signature`, `detail` naming the reason), and only then requires a JSON object with
/// a string `event_type` (400 `invalid-body`). Like every body, it is sent uncompressed as
/// `application/json` (or a `+json` type), else 415 before it is read. An exact replay
/// (same `t`, `v1` and body) answers 202 with the original id and stores nothing.
#[api_operation(
    operation_id = "receive_webhook",
    tag = "webhooks",
    success_description = "Stored; for an exact replay, the original delivery's id.",
    error_code = 400,
    error_code = 401,
    error_code = 422,
    error_code = 503
)]
pub async fn receive(
    context: Data<Context>,
    delivery: VerifiedDelivery,
) -> Result<AcceptedJson<WebhookReceipt>, ApiError> {
    let VerifiedDelivery(delivery) = delivery;
    let recorded = context.recorder.record(delivery).await?;
    Ok(AcceptedJson(WebhookReceipt {
        id: recorded.id,
        status: ReceiptStatus::Accepted,
    }))
}

/// List received webhook events
///
/// Newest first, paged by `limit` (1..100, default 20) and `offset`.
#[api_operation(
    operation_id = "list_webhook_events",
    tag = "webhooks",
    error_code = 422
)]
pub async fn list(db: Db, q: RawQuery<PageQuery>) -> Result<Linked<WebhookEventList>, ApiError> {
    Ok(Linked::new(offset_page(&db, &q, repo::list).await?))
}

/// A delivery's signature is its credential; the received events are operator data.
pub const ACCESS: &[Rule] = &[
    Rule::only(Method::POST, "/webhook", Access::Public),
    Rule::any("/webhook/events", Access::OperatorOnly),
];

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(resource("/webhook").route(post().to(receive)))
        .service(resource("/webhook/events").route(get().to(list)));
}
