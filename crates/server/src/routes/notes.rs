use actix_web::web::{Data, Json, Path};
use apistos::actix::{CreatedJson, NoContent};
use apistos::web::{ServiceConfig, delete, get, post, put, resource};
use apistos::{ApiComponent, api_operation};
use notes::{Note, NoteInput, repo};
use pagination::Page;
use problem_details::Problem;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use apistos::schemars;

use super::dto::PageQuery;
use crate::db::Db;
use crate::error::ApiError;
use crate::extract::{JsonObject, RawQuery};

#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct NoteDto {
    pub id: i64,
    pub title: String,
    pub body: String,
}

impl From<Note> for NoteDto {
    fn from(n: Note) -> Self {
        NoteDto {
            id: n.id,
            title: n.title,
            body: n.body,
        }
    }
}

/// A note's title and body; both required and not blank.
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct NoteBody {
    #[schemars(length(min = 1, max = notes::NOTE_TITLE_MAX), regex(pattern = super::dto::TEXT_PATTERN))]
    pub title: String,
    #[schemars(length(min = 1, max = notes::NOTE_BODY_MAX), regex(pattern = super::dto::TEXT_PATTERN))]
    pub body: String,
}

#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct NotePath {
    pub note_id: i64,
}

crate::list_dto!(NoteList, NoteDto);

// The operations behind `/notes` and `/examples/notes` (same store, same shapes).

pub(crate) async fn list_page(db: &Db, q: &RawQuery<PageQuery>) -> Result<NoteList, ApiError> {
    let page = Page::strict(q.get("limit"), q.get("offset")).map_err(Problem::validation)?;
    let (items, total) = db.read(move |c| repo::notes::list(c, page)).await?;
    Ok(pagination::ListEnvelope::new(items, page, total).into())
}

pub(crate) async fn create_one(db: &Db, body: &JsonObject<NoteBody>) -> Result<NoteDto, ApiError> {
    let input = NoteInput::from_json(body)?;
    Ok(db
        .write(move |c| repo::notes::create(c, &input))
        .await?
        .into())
}

pub(crate) async fn fetch_one(db: &Db, id: i64) -> Result<NoteDto, ApiError> {
    Ok(db.read(move |c| repo::notes::get(c, id)).await?.into())
}

pub(crate) async fn replace_one(
    db: &Db,
    id: i64,
    body: &JsonObject<NoteBody>,
) -> Result<NoteDto, ApiError> {
    let input = NoteInput::from_json(body)?;
    Ok(db
        .write(move |c| repo::notes::update(c, id, &input))
        .await?
        .into())
}

pub(crate) async fn delete_one(db: &Db, id: i64) -> Result<(), ApiError> {
    db.write(move |c| repo::notes::delete(c, id)).await
}

/// List notes
///
/// Notes by id ascending, paged by `limit` and `offset`.
#[api_operation(operation_id = "list_notes", tag = "notes", error_code = 422)]
pub async fn list(db: Data<Db>, q: RawQuery<PageQuery>) -> Result<Json<NoteList>, ApiError> {
    Ok(Json(list_page(&db, &q).await?))
}

/// Create a note
#[api_operation(
    operation_id = "create_note",
    tag = "notes",
    error_code = 413,
    error_code = 415,
    error_code = 422
)]
pub async fn create(
    db: Data<Db>,
    body: JsonObject<NoteBody>,
) -> Result<CreatedJson<NoteDto>, ApiError> {
    Ok(CreatedJson(create_one(&db, &body).await?))
}

/// Get a note
#[api_operation(operation_id = "get_note", tag = "notes", error_code = 404)]
pub async fn get_one(db: Data<Db>, path: Path<NotePath>) -> Result<Json<NoteDto>, ApiError> {
    Ok(Json(fetch_one(&db, path.note_id).await?))
}

/// Replace a note's title and body
#[api_operation(
    operation_id = "update_note",
    tag = "notes",
    error_code = 404,
    error_code = 413,
    error_code = 415,
    error_code = 422
)]
pub async fn update(
    db: Data<Db>,
    path: Path<NotePath>,
    body: JsonObject<NoteBody>,
) -> Result<Json<NoteDto>, ApiError> {
    Ok(Json(replace_one(&db, path.note_id, &body).await?))
}

/// Delete a note and its comments
#[api_operation(operation_id = "delete_note", tag = "notes", error_code = 404)]
pub async fn remove(db: Data<Db>, path: Path<NotePath>) -> Result<NoContent, ApiError> {
    delete_one(&db, path.note_id).await?;
    Ok(NoContent)
}

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(
        resource("/notes")
            .route(get().to(list))
            .route(post().to(create)),
    )
    .service(
        resource("/notes/{note_id}")
            .route(get().to(get_one))
            .route(put().to(update))
            .route(delete().to(remove)),
    );
}
