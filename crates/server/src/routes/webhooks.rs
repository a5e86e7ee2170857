//! Area F: signed webhook intake (`POST /webhook`) and the received events
//! (`GET /webhook/events`).

use std::future::Future;
use std::pin::Pin;
use std::time::{SystemTime, UNIX_EPOCH};

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
use pagination::Page;
use problem_details::Problem;
use schemars::JsonSchema;
use serde::Serialize;
use webhooks::{Delivery, Intake, Recorder, SIGNATURE_HEADER, WebhookEvent, repo};

use apistos::schemars;

use super::dto::PageQuery;
use crate::settings::Settings;
use http_edge::db::Db;
use http_edge::error::ApiError;
use http_edge::extract::{RawQuery, read_body};
use http_edge::links::Linked;

/// The verifier built from the configuration, and the clock.
pub struct WebhookState {
    intake: Intake,
    fixed_now: Option<i64>,
}

impl WebhookState {
    /// From `WEBHOOK_SECRET` / `WEBHOOK_SECRET_PREVIOUS`. An unset secret is allowed (every
    /// delivery is then refused, and this warns); a blank one stops start-up.
    pub fn from_settings(settings: &Settings) -> anyhow::Result<WebhookState> {
        let intake = match &settings.webhook_secret {
            None => {
                log::warn!(
                    "WEBHOOK_SECRET is not set: every webhook delivery will be refused with 401"
                );
                Intake::new(None)
            }
            Some(secret) => {
                let intake = Intake::with_secret(secret.expose().as_bytes())
                    .map_err(|_| anyhow!("WEBHOOK_SECRET: must not be empty or whitespace only"))?;
                match &settings.webhook_secret_previous {
                    None => intake,
                    Some(previous) => {
                        intake
                            .and_previous(previous.expose().as_bytes())
                            .map_err(|_| {
                                anyhow!(
                                    "WEBHOOK_SECRET_PREVIOUS: must not be empty or whitespace only"
                                )
                            })?
                    }
                }
            }
        };
        Ok(WebhookState {
            intake,
            fixed_now: settings.webhook_fixed_now,
        })
    }

    fn now(&self) -> i64 {
        self.fixed_now.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
                .unwrap_or(0)
        })
    }
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
            let state = req
                .app_data::<Data<WebhookState>>()
                .ok_or_else(|| ApiError::internal("webhook state is not registered"))?;
            let signatures: Vec<&[u8]> = req
                .headers()
                .get_all(SIGNATURE_HEADER)
                .map(HeaderValue::as_bytes)
                .collect();
            match state.intake.accept(&signatures, &body, state.now()) {
                Ok(delivery) => Ok(VerifiedDelivery(delivery)),
                Err(err) => Err(refused(err)),
            }
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

crate::list_dto!(WebhookEventList, WebhookEventDto);

/// Receive a signed webhook
///
/// Reads the raw body, verifies `X-Webhook-Signature` over those bytes (401
/// `invalid-signature`, `detail` naming the reason), and only then requires a JSON object with
/// a string `event_type` (400 `invalid-body`). Any content type is accepted. An exact replay
/// (same `t`, `v1` and body) answers 202 with the original id and stores nothing.
#[api_operation(
    operation_id = "receive_webhook",
    tag = "webhooks",
    success_description = "Stored; for an exact replay, the original delivery's id.",
    error_code = 400,
    error_code = 401,
    error_code = 413,
    error_code = 422,
    error_code = 503
)]
pub async fn receive(
    recorder: Data<Recorder>,
    delivery: VerifiedDelivery,
) -> Result<AcceptedJson<WebhookReceipt>, ApiError> {
    let VerifiedDelivery(delivery) = delivery;
    let recorded = recorder.record(delivery).await?;
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
    let page = Page::strict(q.get("limit"), q.get("offset")).map_err(Problem::validation)?;
    let (items, total) = db.read(move |c| repo::list(c, page)).await?;
    Ok(Linked::new(
        pagination::ListEnvelope::new(items, page, total).into(),
    ))
}

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(resource("/webhook").route(post().to(receive)))
        .service(resource("/webhook/events").route(get().to(list)));
}
