use apistos::ApiComponent;
use notes::{Note, NoteInput, repo};
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

impl http_edge::idempotent::Addressable for NoteDto {
    fn id_segment(&self) -> Option<String> {
        Some(self.id.to_string())
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

http_edge::list_dto!(NoteList, NoteDto);

// The operations behind `/notes` and `/examples/notes` (same store, same shapes): the handlers
// `crud_routes!` declares for each prefix call these.

pub(crate) async fn list_page(db: &Db, q: &RawQuery<PageQuery>) -> Result<NoteList, ApiError> {
    offset_page(db, q, repo::notes::list).await
}

pub(crate) async fn create_one(
    db: &Db,
    keyed: &KeyedCreate,
    scope: Scope,
    body: &JsonObject<NoteBody>,
) -> Result<Created<NoteDto>, ApiError> {
    let input = NoteInput::from_json(body)?;
    let owner = db.actor().owner_id();
    keyed
        .create(db, scope, body, move |c| {
            repo::notes::create(c, &input, owner).map(NoteDto::from)
        })
        .await
}

pub(crate) async fn fetch_one(db: &Db, id: i64) -> Result<NoteDto, ApiError> {
    Ok(db.read(move |c| repo::notes::get(c, id)).await?.into())
}

pub(crate) async fn replace_one(
    db: &Db,
    id: i64,
    if_match: IfMatch,
    body: &JsonObject<NoteBody>,
) -> Result<NoteDto, ApiError> {
    let input = NoteInput::from_json(body)?;
    let actor = db.actor();
    Ok(db
        .write(move |c| {
            if_match.guard::<_, NoteDto, _>(actor, || repo::notes::lock(c, id))?;
            repo::notes::update(c, id, &input).map_err(Precondition::Op)
        })
        .await?
        .into())
}

pub(crate) async fn delete_one(db: &Db, id: i64, if_match: IfMatch) -> Result<(), ApiError> {
    let actor = db.actor();
    db.write(move |c| {
        if_match.guard::<_, NoteDto, _>(actor, || repo::notes::lock(c, id))?;
        repo::notes::delete(c, id).map_err(Precondition::Op)
    })
    .await
}

crate::routes::crud::crud_routes! {
    mod handlers;
    ops: crate::routes::notes;
    types: list NoteList, item NoteDto, body NoteBody, path NotePath => note_id;
    paths: "/notes", "/notes/{note_id}";
    tag: "notes", conflicts: [];
    /// List notes
    ///
    /// Notes by id ascending, paged by `limit` and `offset`.
    list "list_notes";
    /// Create a note
    create "create_note";
    /// Get a note
    get "get_note";
    /// Replace a note's title and body
    update "update_note";
    /// Delete a note and its comments
    delete "delete_note";
}

pub use handlers::{ACCESS, configure};
