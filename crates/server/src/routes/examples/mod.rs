//! Area H: the example routes a client library calls (spec §4.8). `/examples/notes` and
//! `/examples/tags` serve the same store and shapes as `/notes` and `/tags` through the same
//! operations; `/machine/health` takes an API key and `/examples/protected` an HS256 JWT.

pub mod auth;

use actix_web::web::{Data, Json, Path};
use apistos::actix::{CreatedJson, NoContent};
use apistos::web::{ServiceConfig, delete, get, post, put, resource};
use apistos::{ApiComponent, api_operation};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use apistos::schemars;

pub use auth::{ApiKeyAuth, BearerClaims, ExampleAuth};

use super::dto::PageQuery;
use super::notes::{self as note_routes, NoteBody, NoteDto, NoteList};
use super::tags::{self as tag_routes, TagBody, TagDto, TagList};
use crate::AppInfo;
use crate::db::Db;
use crate::error::ApiError;
use crate::extract::{JsonObject, RawQuery};

#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct Pong {
    /// Always `pong`
    pub message: String,
    /// Always `ok`
    pub status: String,
}

#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct IdPath {
    pub id: i64,
}

#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct MachineHealth {
    /// Always `ok`
    pub status: String,
    /// The service identity (`SERVICE_NAME`)
    pub service: String,
    /// How the caller authenticated: `api_key`
    pub credential_type: String,
}

#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct Protected {
    pub message: String,
    /// The token's verified claims, as sent
    pub claims: Map<String, Value>,
}

/// Ping
#[api_operation(operation_id = "example_ping", tag = "examples")]
pub async fn ping() -> Json<Pong> {
    Json(Pong {
        message: "pong".to_owned(),
        status: "ok".to_owned(),
    })
}

/// Machine health (API key)
///
/// Requires the API key header (`API_KEY_HEADER`, default `X-API-Key`) with one of the keys
/// in `API_KEYS`; with no key configured it always answers 401.
#[api_operation(operation_id = "machine_health", tag = "examples", error_code = 401)]
// `Result` so that OpenAPI documents the 401 its extractor answers.
pub async fn machine_health(
    _key: ApiKeyAuth,
    info: Data<AppInfo>,
) -> Result<Json<MachineHealth>, ApiError> {
    Ok(Json(MachineHealth {
        status: "ok".to_owned(),
        service: info.service_name.clone(),
        credential_type: "api_key".to_owned(),
    }))
}

/// Protected (bearer JWT)
///
/// Requires `Authorization: Bearer <JWT>` signed with HS256 under `JWT_SECRET`; any other
/// algorithm, a bad signature, an expired or not-yet-valid token is 401.
#[api_operation(operation_id = "example_protected", tag = "examples", error_code = 401)]
pub async fn protected(claims: BearerClaims) -> Result<Json<Protected>, ApiError> {
    Ok(Json(Protected {
        message: "The bearer token is valid.".to_owned(),
        claims: claims.0,
    }))
}

/// List notes (example route)
#[api_operation(
    operation_id = "example_list_notes",
    tag = "examples",
    error_code = 422
)]
pub async fn list_notes(db: Data<Db>, q: RawQuery<PageQuery>) -> Result<Json<NoteList>, ApiError> {
    Ok(Json(note_routes::list_page(&db, &q).await?))
}

/// Create a note (example route)
#[api_operation(
    operation_id = "example_create_note",
    tag = "examples",
    error_code = 413,
    error_code = 415,
    error_code = 422
)]
pub async fn create_note(
    db: Data<Db>,
    body: JsonObject<NoteBody>,
) -> Result<CreatedJson<NoteDto>, ApiError> {
    Ok(CreatedJson(note_routes::create_one(&db, &body).await?))
}

/// Get a note (example route)
#[api_operation(operation_id = "example_get_note", tag = "examples", error_code = 404)]
pub async fn get_note(db: Data<Db>, path: Path<IdPath>) -> Result<Json<NoteDto>, ApiError> {
    Ok(Json(note_routes::fetch_one(&db, path.id).await?))
}

/// Replace a note (example route)
#[api_operation(
    operation_id = "example_update_note",
    tag = "examples",
    error_code = 404,
    error_code = 413,
    error_code = 415,
    error_code = 422
)]
pub async fn update_note(
    db: Data<Db>,
    path: Path<IdPath>,
    body: JsonObject<NoteBody>,
) -> Result<Json<NoteDto>, ApiError> {
    Ok(Json(note_routes::replace_one(&db, path.id, &body).await?))
}

/// Delete a note (example route)
#[api_operation(
    operation_id = "example_delete_note",
    tag = "examples",
    error_code = 404
)]
pub async fn delete_note(db: Data<Db>, path: Path<IdPath>) -> Result<NoContent, ApiError> {
    note_routes::delete_one(&db, path.id).await?;
    Ok(NoContent)
}

/// List tags (example route)
#[api_operation(operation_id = "example_list_tags", tag = "examples", error_code = 422)]
pub async fn list_tags(db: Data<Db>, q: RawQuery<PageQuery>) -> Result<Json<TagList>, ApiError> {
    Ok(Json(tag_routes::list_page(&db, &q).await?))
}

/// Create a tag (example route)
#[api_operation(
    operation_id = "example_create_tag",
    tag = "examples",
    error_code = 409,
    error_code = 413,
    error_code = 415,
    error_code = 422
)]
pub async fn create_tag(
    db: Data<Db>,
    body: JsonObject<TagBody>,
) -> Result<CreatedJson<TagDto>, ApiError> {
    Ok(CreatedJson(tag_routes::create_one(&db, &body).await?))
}

/// Get a tag (example route)
#[api_operation(operation_id = "example_get_tag", tag = "examples", error_code = 404)]
pub async fn get_tag(db: Data<Db>, path: Path<IdPath>) -> Result<Json<TagDto>, ApiError> {
    Ok(Json(tag_routes::fetch_one(&db, path.id).await?))
}

/// Rename a tag (example route)
#[api_operation(
    operation_id = "example_update_tag",
    tag = "examples",
    error_code = 404,
    error_code = 409,
    error_code = 413,
    error_code = 415,
    error_code = 422
)]
pub async fn update_tag(
    db: Data<Db>,
    path: Path<IdPath>,
    body: JsonObject<TagBody>,
) -> Result<Json<TagDto>, ApiError> {
    Ok(Json(tag_routes::replace_one(&db, path.id, &body).await?))
}

/// Delete a tag (example route)
#[api_operation(
    operation_id = "example_delete_tag",
    tag = "examples",
    error_code = 404
)]
pub async fn delete_tag(db: Data<Db>, path: Path<IdPath>) -> Result<NoContent, ApiError> {
    tag_routes::delete_one(&db, path.id).await?;
    Ok(NoContent)
}

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(resource("/examples/ping").route(get().to(ping)))
        .service(resource("/machine/health").route(get().to(machine_health)))
        .service(resource("/examples/protected").route(get().to(protected)))
        .service(
            resource("/examples/notes")
                .route(get().to(list_notes))
                .route(post().to(create_note)),
        )
        .service(
            resource("/examples/notes/{id}")
                .route(get().to(get_note))
                .route(put().to(update_note))
                .route(delete().to(delete_note)),
        )
        .service(
            resource("/examples/tags")
                .route(get().to(list_tags))
                .route(post().to(create_tag)),
        )
        .service(
            resource("/examples/tags/{id}")
                .route(get().to(get_tag))
                .route(put().to(update_tag))
                .route(delete().to(delete_tag)),
        );
}
