use actix_web::web::{Data, Json, Path};
use apistos::actix::{CreatedJson, NoContent};
use apistos::web::{ServiceConfig, delete, get, post, put, resource};
use apistos::{ApiComponent, api_operation};
use notes::{Tag, TagInput, repo};
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
pub struct TagDto {
    pub id: i64,
    pub name: String,
}

impl From<Tag> for TagDto {
    fn from(t: Tag) -> Self {
        TagDto {
            id: t.id,
            name: t.name,
        }
    }
}

/// A tag's name: required, not blank, unique.
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct TagBody {
    #[schemars(length(min = 1, max = notes::TAG_NAME_MAX), regex(pattern = super::dto::TEXT_PATTERN))]
    pub name: String,
}

#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct TagPath {
    pub tag_id: i64,
}

crate::list_dto!(TagList, TagDto);

// The operations behind `/tags` and `/examples/tags` (same store, same shapes).

pub(crate) async fn list_page(db: &Db, q: &RawQuery<PageQuery>) -> Result<TagList, ApiError> {
    let page = Page::strict(q.get("limit"), q.get("offset")).map_err(Problem::validation)?;
    let (items, total) = db.read(move |c| repo::tags::list(c, page)).await?;
    Ok(pagination::ListEnvelope::new(items, page, total).into())
}

pub(crate) async fn create_one(db: &Db, body: &JsonObject<TagBody>) -> Result<TagDto, ApiError> {
    let input = TagInput::from_json(body)?;
    Ok(db
        .write(move |c| repo::tags::create(c, &input))
        .await?
        .into())
}

pub(crate) async fn fetch_one(db: &Db, id: i64) -> Result<TagDto, ApiError> {
    Ok(db.read(move |c| repo::tags::get(c, id)).await?.into())
}

pub(crate) async fn replace_one(
    db: &Db,
    id: i64,
    body: &JsonObject<TagBody>,
) -> Result<TagDto, ApiError> {
    let input = TagInput::from_json(body)?;
    Ok(db
        .write(move |c| repo::tags::update(c, id, &input))
        .await?
        .into())
}

pub(crate) async fn delete_one(db: &Db, id: i64) -> Result<(), ApiError> {
    db.write(move |c| repo::tags::delete(c, id)).await
}

/// List tags
#[api_operation(operation_id = "list_tags", tag = "tags", error_code = 422)]
pub async fn list(db: Data<Db>, q: RawQuery<PageQuery>) -> Result<Json<TagList>, ApiError> {
    Ok(Json(list_page(&db, &q).await?))
}

/// Create a tag
///
/// A name that exists already is 409.
#[api_operation(
    operation_id = "create_tag",
    tag = "tags",
    error_code = 409,
    error_code = 413,
    error_code = 415,
    error_code = 422
)]
pub async fn create(
    db: Data<Db>,
    body: JsonObject<TagBody>,
) -> Result<CreatedJson<TagDto>, ApiError> {
    Ok(CreatedJson(create_one(&db, &body).await?))
}

/// Get a tag
#[api_operation(operation_id = "get_tag", tag = "tags", error_code = 404)]
pub async fn get_one(db: Data<Db>, path: Path<TagPath>) -> Result<Json<TagDto>, ApiError> {
    Ok(Json(fetch_one(&db, path.tag_id).await?))
}

/// Rename a tag
#[api_operation(
    operation_id = "update_tag",
    tag = "tags",
    error_code = 404,
    error_code = 409,
    error_code = 413,
    error_code = 415,
    error_code = 422
)]
pub async fn update(
    db: Data<Db>,
    path: Path<TagPath>,
    body: JsonObject<TagBody>,
) -> Result<Json<TagDto>, ApiError> {
    Ok(Json(replace_one(&db, path.tag_id, &body).await?))
}

/// Delete a tag
#[api_operation(operation_id = "delete_tag", tag = "tags", error_code = 404)]
pub async fn remove(db: Data<Db>, path: Path<TagPath>) -> Result<NoContent, ApiError> {
    delete_one(&db, path.tag_id).await?;
    Ok(NoContent)
}

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(
        resource("/tags")
            .route(get().to(list))
            .route(post().to(create)),
    )
    .service(
        resource("/tags/{tag_id}")
            .route(get().to(get_one))
            .route(put().to(update))
            .route(delete().to(remove)),
    );
}
