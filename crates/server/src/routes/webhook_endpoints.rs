//! Outbound webhooks: an owner's endpoints and their delivery log. The rules, the dispatcher
//! and the SSRF checks live in crates/outbound-webhooks; this module wires.

use actix_web::web::{Data, Json, Path};
use apistos::actix::{CreatedJson, NoContent};
use apistos::api_operation;
use apistos::web::{ServiceConfig, delete, get, patch, post, resource};
use outbound_webhooks::service;
use outbound_webhooks::{EndpointInput, EndpointPatch};

pub use api_shapes::webhook_endpoints::*;

use crate::auth::{Access, Rule};
use crate::context::Context;
use crate::routes::dto::{PageQuery, offset_page};
use http_edge::db::Db;
use http_edge::error::ApiError;
use http_edge::extract::{JsonObject, RawQuery};

/// Register a webhook endpoint
///
/// Every event of the caller's accounts committed from now on (of `event_types`) is POSTed to
/// `url`, signed as Standard Webhooks with the `secret` in this answer: shown here and on
/// rotation only, never stored. No `Idempotency-Key`: its stored answer would keep the secret.
/// 409 when the caller has `WEBHOOK_ENDPOINTS_PER_OWNER` endpoints (50) already.
#[api_operation(
    operation_id = "create_webhook_endpoint",
    tag = "webhooks",
    error_code = 409,
    error_code = 422,
    error_code = 503
)]
pub async fn create(
    context: Data<Context>,
    db: Db,
    body: JsonObject<EndpointBody>,
) -> Result<CreatedJson<EndpointWithSecretDto>, ApiError> {
    let (input, actor) = (EndpointInput::from_json(&body)?, db.actor());
    let settings = context.dispatcher.settings().clone();
    let register = move |c: &mut _| service::register(c, &input, actor, &settings);
    Ok(CreatedJson(db.write(register).await?.into()))
}

/// List webhook endpoints
///
/// The caller's endpoints (every one for the operator), by id.
#[api_operation(
    operation_id = "list_webhook_endpoints",
    tag = "webhooks",
    error_code = 422
)]
pub async fn list(db: Db, q: RawQuery<PageQuery>) -> Result<Json<EndpointList>, ApiError> {
    let actor = db.actor();
    let list = move |c: &mut _, page| service::list(c, page, actor);
    Ok(Json(offset_page(&db, &q, list).await?))
}

/// Get a webhook endpoint
///
/// The endpoint and its delivery state (never its secret). Another user's is 404.
#[api_operation(
    operation_id = "get_webhook_endpoint",
    tag = "webhooks",
    error_code = 404
)]
pub async fn get_one(db: Db, path: Path<EndpointPath>) -> Result<Json<EndpointDto>, ApiError> {
    let (id, actor) = (path.into_inner().id, db.actor());
    Ok(Json(
        db.read(move |c| service::get(c, &id, actor)).await?.into(),
    ))
}

/// Update a webhook endpoint
///
/// Any of `url`, `event_types` and `enabled`. A disabled endpoint's events wait for it.
#[api_operation(
    operation_id = "update_webhook_endpoint",
    tag = "webhooks",
    error_code = 404,
    error_code = 422
)]
pub async fn update(
    context: Data<Context>,
    db: Db,
    path: Path<EndpointPath>,
    body: JsonObject<EndpointPatchBody>,
) -> Result<Json<EndpointDto>, ApiError> {
    let (id, actor, patch) = (
        path.into_inner().id,
        db.actor(),
        EndpointPatch::from_json(&body)?,
    );
    let allow = context.dispatcher.settings().allow.clone();
    let updated = db
        .write(move |c| service::update(c, &id, &patch, actor, &allow))
        .await?;
    context.dispatcher.notify();
    Ok(Json(updated.into()))
}

/// Delete a webhook endpoint
///
/// Its delivery log goes with it; nothing more is delivered to it.
#[api_operation(
    operation_id = "delete_webhook_endpoint",
    tag = "webhooks",
    error_code = 404
)]
pub async fn remove(db: Db, path: Path<EndpointPath>) -> Result<NoContent, ApiError> {
    let (id, actor) = (path.into_inner().id, db.actor());
    db.write(move |c| service::delete(c, &id, actor)).await?;
    Ok(NoContent)
}

/// Rotate a webhook endpoint's secret
///
/// A new secret, in this answer only. Deliveries are signed with the old one too (two
/// signatures in `webhook-signature`) for 24 hours, so receivers switch without a gap; a second
/// rotation within those hours is 409.
#[api_operation(
    operation_id = "rotate_webhook_endpoint_secret",
    tag = "webhooks",
    error_code = 404,
    error_code = 409,
    error_code = 503
)]
pub async fn rotate(
    context: Data<Context>,
    db: Db,
    path: Path<EndpointPath>,
) -> Result<Json<EndpointWithSecretDto>, ApiError> {
    let (id, actor) = (path.into_inner().id, db.actor());
    let settings = context.dispatcher.settings().clone();
    let (key, grace) = (settings.key, settings.rotation_grace);
    let rotated = db
        .write(move |c| service::rotate(c, &id, actor, key.as_ref(), grace))
        .await?;
    Ok(Json(rotated.into()))
}

/// List an endpoint's deliveries
///
/// Every attempt, newest first: outcome, status, latency, error, next attempt.
#[api_operation(
    operation_id = "list_webhook_deliveries",
    tag = "webhooks",
    error_code = 404,
    error_code = 422
)]
pub async fn deliveries(
    db: Db,
    path: Path<EndpointPath>,
    q: RawQuery<PageQuery>,
) -> Result<Json<DeliveryList>, ApiError> {
    let (id, actor) = (path.into_inner().id, db.actor());
    let list = move |c: &mut _, page| service::deliveries(c, &id, page, actor);
    Ok(Json(offset_page(&db, &q, list).await?))
}

/// Redeliver an event
///
/// Sends the event of this delivery again, now (a new `manual` entry of the log, with the
/// same `webhook-id`), whatever the endpoint's own progress.
#[api_operation(
    operation_id = "redeliver_webhook",
    tag = "webhooks",
    error_code = 404,
    error_code = 503
)]
pub async fn redeliver(
    context: Data<Context>,
    db: Db,
    path: Path<DeliveryPath>,
) -> Result<CreatedJson<DeliveryDto>, ApiError> {
    let DeliveryPath { id, delivery_id } = path.into_inner();
    let sent = context
        .dispatcher
        .redeliver(id, delivery_id, db.actor())
        .await;
    Ok(CreatedJson(
        sent.map_err(http_edge::db::into_api_error)?.into(),
    ))
}

/// Endpoints are their owners' (a bearer token; another user's do not exist for a user).
pub const ACCESS: &[Rule] = &[
    Rule::any("/webhook-endpoints", Access::Bearer),
    Rule::any("/webhook-endpoints/{id}", Access::Bearer),
    Rule::any("/webhook-endpoints/{id}/rotate-secret", Access::Bearer),
    Rule::any("/webhook-endpoints/{id}/deliveries", Access::Bearer),
    Rule::any(
        "/webhook-endpoints/{id}/deliveries/{delivery_id}/redeliver",
        Access::Bearer,
    ),
];

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(
        resource("/webhook-endpoints")
            .route(get().to(list))
            .route(post().to(create)),
    )
    .service(
        resource("/webhook-endpoints/{id}")
            .route(get().to(get_one))
            .route(patch().to(update))
            .route(delete().to(remove)),
    )
    .service(resource("/webhook-endpoints/{id}/rotate-secret").route(post().to(rotate)))
    .service(resource("/webhook-endpoints/{id}/deliveries").route(get().to(deliveries)))
    .service(
        resource("/webhook-endpoints/{id}/deliveries/{delivery_id}/redeliver")
            .route(post().to(redeliver)),
    );
}
