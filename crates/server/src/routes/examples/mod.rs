//! Area H: the example routes a client library calls (spec §4.8). `/examples/notes` and
//! `/examples/tags` serve the same store and shapes as `/notes` and `/tags` through the same
//! operations; `/machine/health` takes an API key and `/examples/protected` an HS256 JWT.

use actix_web::web::{Data, Json};
use apistos::web::{ServiceConfig, get, resource};
use apistos::{ApiComponent, api_operation};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use apistos::schemars;

use crate::auth::{ApiKeyAuth, BearerClaims};

use super::notes::{NoteBody, NoteDto, NoteList};
use super::tags::{TagBody, TagDto, TagList};
use crate::auth::{Access, Rule};
use crate::context::Context;
use actix_web::http::Method;
use http_edge::error::ApiError;

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
    context: Data<Context>,
) -> Result<Json<MachineHealth>, ApiError> {
    Ok(Json(MachineHealth {
        status: "ok".to_owned(),
        service: context.info.service_name.clone(),
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
        // The NENE2 contract's example message: clients written against it check for it.
        message: "Welcome, authenticated user.".to_owned(),
        claims: claims.0,
    }))
}

crate::routes::crud::crud_routes! {
    mod note_handlers;
    ops: crate::routes::notes;
    types: list NoteList, item NoteDto, body NoteBody, path IdPath => id;
    paths: "/examples/notes", "/examples/notes/{id}";
    tag: "examples", conflicts: [];
    /// List notes (example route)
    list "example_list_notes";
    /// Create a note (example route)
    create "example_create_note";
    /// Get a note (example route)
    get "example_get_note";
    /// Replace a note (example route)
    update "example_update_note";
    /// Delete a note (example route)
    delete "example_delete_note";
}

crate::routes::crud::crud_routes! {
    mod tag_handlers;
    ops: crate::routes::tags;
    types: list TagList, item TagDto, body TagBody, path IdPath => id;
    paths: "/examples/tags", "/examples/tags/{id}";
    tag: "examples", conflicts: [409];
    /// List tags (example route)
    list "example_list_tags";
    /// Create a tag (example route)
    create "example_create_tag";
    /// Get a tag (example route)
    get "example_get_tag";
    /// Rename a tag (example route)
    update "example_update_tag";
    /// Delete a tag (example route)
    delete "example_delete_tag";
}

/// `/examples/ping` is public; `/machine/health` and `/examples/protected` check their own
/// credential (an API key, a JWT); the example notes and tags need a bearer token.
pub const ACCESS: &[Rule] = &[
    Rule::only(Method::GET, "/examples/ping", Access::Public),
    Rule::any("/machine/health", Access::Public),
    Rule::any("/examples/protected", Access::Public),
];

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(resource("/examples/ping").route(get().to(ping)))
        .service(resource("/machine/health").route(get().to(machine_health)))
        .service(resource("/examples/protected").route(get().to(protected)));
    note_handlers::configure(cfg);
    tag_handlers::configure(cfg);
}
