use apistos::ApiComponent;
use notes::{Tag, TagInput, repo};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use apistos::schemars;

use super::dto::{PageQuery, offset_page};
use http_edge::conditional::{IfMatch, Precondition};
use http_edge::db::Db;
use http_edge::error::ApiError;
use http_edge::extract::{JsonObject, RawQuery};
use http_edge::idempotent::{Created, KeyedCreate};
use idempotency::Scope;

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

impl http_edge::idempotent::Addressable for TagDto {
    fn id_segment(&self) -> Option<String> {
        Some(self.id.to_string())
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

http_edge::list_dto!(TagList, TagDto);

// The operations behind `/tags` and `/examples/tags` (same store, same shapes): the handlers
// `crud_routes!` declares for each prefix call these.

pub(crate) async fn list_page(db: &Db, q: &RawQuery<PageQuery>) -> Result<TagList, ApiError> {
    offset_page(db, q, repo::tags::list).await
}

pub(crate) async fn create_one(
    db: &Db,
    keyed: &KeyedCreate,
    scope: Scope,
    body: &JsonObject<TagBody>,
) -> Result<Created<TagDto>, ApiError> {
    let input = TagInput::from_json(body)?;
    let owner = db.actor().owner_id();
    keyed
        .create(db, scope, body, move |c| {
            repo::tags::create(c, &input, owner).map(TagDto::from)
        })
        .await
}

pub(crate) async fn fetch_one(db: &Db, id: i64) -> Result<TagDto, ApiError> {
    Ok(db.read(move |c| repo::tags::get(c, id)).await?.into())
}

pub(crate) async fn replace_one(
    db: &Db,
    id: i64,
    if_match: IfMatch,
    body: &JsonObject<TagBody>,
) -> Result<TagDto, ApiError> {
    let input = TagInput::from_json(body)?;
    let actor = db.actor();
    Ok(db
        .write(move |c| {
            if_match.guard::<_, TagDto, _>(actor, || repo::tags::lock(c, id))?;
            repo::tags::update(c, id, &input).map_err(Precondition::Op)
        })
        .await?
        .into())
}

pub(crate) async fn delete_one(db: &Db, id: i64, if_match: IfMatch) -> Result<(), ApiError> {
    let actor = db.actor();
    db.write(move |c| {
        if_match.guard::<_, TagDto, _>(actor, || repo::tags::lock(c, id))?;
        repo::tags::delete(c, id).map_err(Precondition::Op)
    })
    .await
}

crate::routes::crud::crud_routes! {
    mod handlers;
    ops: crate::routes::tags;
    types: list TagList, item TagDto, body TagBody, path TagPath => tag_id;
    paths: "/tags", "/tags/{tag_id}";
    tag: "tags", conflicts: [409];
    /// List tags
    list "list_tags";
    /// Create a tag
    ///
    /// A name that exists already is 409.
    create "create_tag";
    /// Get a tag
    get "get_tag";
    /// Rename a tag
    update "update_tag";
    /// Delete a tag
    delete "delete_tag";
}

pub use handlers::{ACCESS, configure};
