use actix_web::web::Path;
use apistos::actix::NoContent;
use apistos::web::{ServiceConfig, delete, get, post, put, resource};
use apistos::{ApiComponent, api_operation};
use notes::{Comment, CommentInput, repo};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use apistos::schemars;

use super::dto::{PageQuery, offset_page};
use super::notes::NotePath;
use crate::auth::{Access, Rule};
use http_edge::conditional::{IfMatch, IfNoneMatchParam, Precondition, Tagged, Updated};
use http_edge::db::Db;
use http_edge::error::ApiError;
use http_edge::extract::{JsonObject, RawQuery};
use http_edge::idempotent::{Created, KeyedCreate};
use http_edge::links::Linked;
use idempotency::Scope;

#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct CommentDto {
    pub id: i64,
    pub note_id: i64,
    pub body: String,
}

impl From<Comment> for CommentDto {
    fn from(c: Comment) -> Self {
        CommentDto {
            id: c.id,
            note_id: c.note_id,
            body: c.body,
        }
    }
}

impl http_edge::idempotent::Addressable for CommentDto {
    fn id_segment(&self) -> Option<String> {
        Some(self.id.to_string())
    }
}

/// A comment's body: required, not blank.
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct CommentBody {
    #[schemars(length(min = 1, max = notes::COMMENT_BODY_MAX), regex(pattern = super::dto::TEXT_PATTERN))]
    pub body: String,
}

#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct CommentPath {
    pub note_id: i64,
    pub comment_id: i64,
}

http_edge::list_dto!(CommentList, CommentDto);

/// List a note's comments
#[api_operation(
    operation_id = "list_comments",
    tag = "comments",
    error_code = 404,
    error_code = 422
)]
pub async fn list(
    db: Db,
    path: Path<NotePath>,
    q: RawQuery<PageQuery>,
) -> Result<Linked<CommentList>, ApiError> {
    let note_id = path.note_id;
    let list = move |c: &mut _, page| repo::comments::list(c, note_id, page);
    Ok(Linked::new(offset_page(&db, &q, list).await?))
}

/// Comment on a note
#[api_operation(
    operation_id = "create_comment",
    tag = "comments",
    error_code = 404,
    error_code = 422
)]
pub async fn create(
    db: Db,
    keyed: KeyedCreate,
    path: Path<NotePath>,
    body: JsonObject<CommentBody>,
) -> Result<Created<CommentDto>, ApiError> {
    let (note_id, input) = (path.note_id, CommentInput::from_json(&body)?);
    let id = note_id.to_string();
    let scope = Scope::of("create_comment", &[&id]).formerly("POST /notes/{note_id}/comments");
    let owner = db.actor().owner_id();
    keyed
        .create(&db, scope, &with_path(&body, note_id), move |c| {
            repo::comments::create(c, note_id, &input, owner).map(CommentDto::from)
        })
        .await
}

/// Get a comment
#[api_operation(operation_id = "get_comment", tag = "comments", error_code = 404)]
pub async fn get_one(
    db: Db,
    path: Path<CommentPath>,
    _doc: IfNoneMatchParam,
) -> Result<Tagged<CommentDto>, ApiError> {
    let CommentPath {
        note_id,
        comment_id,
    } = path.into_inner();
    let comment = db
        .read(move |c| repo::comments::get(c, note_id, comment_id))
        .await?;
    Ok(Tagged::new(comment.into()))
}

/// Replace a comment's body
#[api_operation(
    operation_id = "update_comment",
    tag = "comments",
    error_code = 404,
    error_code = 412,
    error_code = 422
)]
pub async fn update(
    db: Db,
    path: Path<CommentPath>,
    if_match: IfMatch,
    body: JsonObject<CommentBody>,
) -> Result<Updated<CommentDto>, ApiError> {
    let CommentPath {
        note_id,
        comment_id,
    } = path.into_inner();
    let input = CommentInput::from_json(&body)?;
    let actor = db.actor();
    let comment = db
        .write(move |c| {
            if_match.guard::<_, CommentDto, _>(actor, || {
                repo::comments::lock(c, note_id, comment_id)
            })?;
            repo::comments::update(c, note_id, comment_id, &input).map_err(Precondition::Op)
        })
        .await?;
    Ok(Updated::new(comment.into()))
}

/// Delete a comment
#[api_operation(
    operation_id = "delete_comment",
    tag = "comments",
    error_code = 404,
    error_code = 412
)]
pub async fn remove(
    db: Db,
    path: Path<CommentPath>,
    if_match: IfMatch,
) -> Result<NoContent, ApiError> {
    let CommentPath {
        note_id,
        comment_id,
    } = path.into_inner();
    let actor = db.actor();
    db.write(move |c| {
        if_match
            .guard::<_, CommentDto, _>(actor, || repo::comments::lock(c, note_id, comment_id))?;
        repo::comments::delete(c, note_id, comment_id).map_err(Precondition::Op)
    })
    .await?;
    Ok(NoContent)
}

/// A note's comments: a bearer token (a write, scope write or admin).
pub const ACCESS: &[Rule] = &[
    Rule::any("/notes/{note_id}/comments", Access::Bearer),
    Rule::any("/notes/{note_id}/comments/{comment_id}", Access::Bearer),
];

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(
        resource("/notes/{note_id}/comments")
            .route(get().to(list))
            .route(post().to(create)),
    )
    .service(
        resource("/notes/{note_id}/comments/{comment_id}")
            .route(get().to(get_one))
            .route(put().to(update))
            .route(delete().to(remove)),
    );
}

/// The body with the note it is posted to: the same comment to another note is another request.
fn with_path(
    body: &serde_json::Map<String, serde_json::Value>,
    note_id: i64,
) -> serde_json::Map<String, serde_json::Value> {
    let mut keyed = body.clone();
    keyed.insert(" note_id".to_owned(), note_id.into());
    keyed
}
