//! Area C: one store of notes behind two API versions, `/v1/notes` (deprecated; every answer
//! carries the headers added by `middleware::deprecation`) and `/v2/notes`, plus
//! `GET /metrics/v1-usage`, who still calls V1.

use actix_web::web::{Data, Json, Path};
use apistos::web::{ServiceConfig, get, post, resource};
use apistos::{ApiComponent, api_operation};
use pagination::{ListEnvelope, Page};
use problem_details::Problem;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use versioned_notes::{CallerUsage, NoteInput, VersionedNote, repo};

use apistos::schemars;

use super::dto::{ClampedPageQuery, NO_NUL_PATTERN, TEXT_PATTERN};
use crate::auth::{Access, Rule};
use crate::context::Context;
use http_edge::conditional::{IfNoneMatchParam, Tagged};
use http_edge::db::Db;
use http_edge::error::ApiError;
use http_edge::extract::{JsonObject, RawQuery};
use http_edge::idempotent::{Created, KeyedCreate};
use http_edge::links::Linked;
use idempotency::Scope;

/// A note in the V1 shape: exactly these four members (the body is `content`; no tags, no
/// `updated_at`).
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct NoteV1 {
    pub id: i64,
    pub title: String,
    /// The stored body.
    pub content: String,
    /// RFC 3339, UTC.
    pub created_at: String,
}

impl From<VersionedNote> for NoteV1 {
    fn from(n: VersionedNote) -> Self {
        NoteV1 {
            id: n.id,
            title: n.title,
            content: n.body,
            created_at: n.created_at,
        }
    }
}

impl http_edge::idempotent::Addressable for NoteV1 {
    fn id_segment(&self) -> Option<String> {
        Some(self.id.to_string())
    }
}

/// A note in the V2 shape.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct NoteV2 {
    pub id: i64,
    pub title: String,
    pub body: String,
    /// In the order given, duplicates kept.
    pub tags: Vec<String>,
    /// RFC 3339, UTC.
    pub updated_at: String,
    /// RFC 3339, UTC.
    pub created_at: String,
}

impl From<VersionedNote> for NoteV2 {
    fn from(n: VersionedNote) -> Self {
        NoteV2 {
            id: n.id,
            title: n.title,
            body: n.body,
            tags: n.tags,
            updated_at: n.updated_at,
            created_at: n.created_at,
        }
    }
}

/// A V1 note to create: `title` required and not blank, `content` optional (default "").
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct NoteV1Body {
    #[schemars(length(min = 1, max = versioned_notes::NOTE_TITLE_MAX), regex(pattern = TEXT_PATTERN))]
    pub title: String,
    #[schemars(length(max = versioned_notes::NOTE_BODY_MAX), regex(pattern = NO_NUL_PATTERN))]
    pub content: Option<String>,
}

/// A V2 note to create: `title` required and not blank, `body` optional (default ""), `tags`
/// optional (default []).
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct NoteV2Body {
    #[schemars(length(min = 1, max = versioned_notes::NOTE_TITLE_MAX), regex(pattern = TEXT_PATTERN))]
    pub title: String,
    #[schemars(length(max = versioned_notes::NOTE_BODY_MAX), regex(pattern = NO_NUL_PATTERN))]
    pub body: Option<String>,
    #[schemars(
        length(max = versioned_notes::TAGS_MAX),
        inner(length(max = versioned_notes::TAG_MAX), regex(pattern = NO_NUL_PATTERN))
    )]
    pub tags: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct VersionedNotePath {
    pub id: i64,
}

/// The V1 list: `{"notes": [...]}`, id descending.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct NoteV1List {
    pub notes: Vec<NoteV1>,
}

/// A single V2 note: `{"data": {...}}`.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct NoteV2Envelope {
    pub data: NoteV2,
}

impl http_edge::idempotent::Addressable for NoteV2Envelope {
    fn id_segment(&self) -> Option<String> {
        Some(self.data.id.to_string())
    }
}

/// Paging of a V2 list.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct NoteV2Meta {
    /// The effective limit, after clamping.
    pub limit: i64,
    /// The effective offset.
    pub offset: i64,
    /// How many notes exist.
    pub total: i64,
}

/// The V2 list: `{"data": [...], "meta": {limit, offset, total}}`, id descending.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct NoteV2List {
    pub data: Vec<NoteV2>,
    pub meta: NoteV2Meta,
}

async fn get_note(db: &Db, id: i64) -> Result<VersionedNote, ApiError> {
    db.read(move |c| repo::notes::get(c, id)).await
}

/// `limit` and `offset` of the three lists here (clamped; non-integers are 422).
fn paging(q: &RawQuery<ClampedPageQuery>) -> Result<Page, ApiError> {
    Ok(Page::clamped(q.get("limit"), q.get("offset")).map_err(Problem::validation)?)
}

/// Create a note (V1, deprecated)
///
/// Deprecated: use `POST /v2/notes`. The body text is `content`.
#[api_operation(
    operation_id = "create_note_v1",
    tag = "notes-v1",
    deprecated,
    error_code = 422
)]
pub async fn create_v1(
    db: Db,
    keyed: KeyedCreate,
    body: JsonObject<NoteV1Body>,
) -> Result<Created<NoteV1>, ApiError> {
    let input = NoteInput::from_v1_json(&body)?;
    let owner = db.actor().owner_id();
    keyed
        .create(
            &db,
            Scope::of("create_note_v1", &[]).formerly("POST /v1/notes"),
            &body,
            move |c| repo::notes::create(c, &input, owner).map(NoteV1::from),
        )
        .await
}

/// List notes (V1, deprecated)
///
/// Deprecated: use `GET /v2/notes`. Id descending; `limit` (default 20, clamped into 1..100)
/// and `offset` (default 0).
#[api_operation(
    operation_id = "list_notes_v1",
    tag = "notes-v1",
    deprecated,
    error_code = 422
)]
pub async fn list_v1(db: Db, q: RawQuery<ClampedPageQuery>) -> Result<Json<NoteV1List>, ApiError> {
    let page = paging(&q)?;
    let notes = db.read(move |c| repo::notes::page(c, page)).await?;
    Ok(Json(NoteV1List {
        notes: notes.into_iter().map(NoteV1::from).collect(),
    }))
}

/// Get a note (V1, deprecated)
///
/// Deprecated: use `GET /v2/notes/{id}`.
#[api_operation(
    operation_id = "get_note_v1",
    tag = "notes-v1",
    deprecated,
    error_code = 404
)]
pub async fn get_v1(db: Db, path: Path<VersionedNotePath>) -> Result<Json<NoteV1>, ApiError> {
    Ok(Json(get_note(&db, path.id).await?.into()))
}

/// Create a note (V2)
#[api_operation(operation_id = "create_note_v2", tag = "notes-v2", error_code = 422)]
pub async fn create_v2(
    db: Db,
    keyed: KeyedCreate,
    body: JsonObject<NoteV2Body>,
) -> Result<Created<NoteV2Envelope>, ApiError> {
    let input = NoteInput::from_v2_json(&body)?;
    let owner = db.actor().owner_id();
    keyed
        .create(
            &db,
            Scope::of("create_note_v2", &[]).formerly("POST /v2/notes"),
            &body,
            move |c| {
                let note = repo::notes::create(c, &input, owner)?;
                Ok::<_, versioned_notes::Error>(NoteV2Envelope { data: note.into() })
            },
        )
        .await
}

/// List notes (V2)
///
/// Id descending; `limit` (default 20, clamped into 1..100) and `offset` (default 0). The
/// paging is in `meta` only: V2 answers carry no `Link` header (spec §9.3 keeps every V1
/// header, `Link` included, off V2).
#[api_operation(operation_id = "list_notes_v2", tag = "notes-v2", error_code = 422)]
pub async fn list_v2(db: Db, q: RawQuery<ClampedPageQuery>) -> Result<Json<NoteV2List>, ApiError> {
    let page = paging(&q)?;
    let (notes, total) = db
        .read(move |c| repo::notes::page_and_total(c, page))
        .await?;
    Ok(Json(NoteV2List {
        data: notes.into_iter().map(NoteV2::from).collect(),
        meta: NoteV2Meta {
            limit: page.limit,
            offset: page.offset,
            total,
        },
    }))
}

/// Get a note (V2)
#[api_operation(operation_id = "get_note_v2", tag = "notes-v2", error_code = 404)]
pub async fn get_v2(
    db: Db,
    path: Path<VersionedNotePath>,
    _doc: IfNoneMatchParam,
) -> Result<Tagged<NoteV2Envelope>, ApiError> {
    Ok(Tagged::new(NoteV2Envelope {
        data: get_note(&db, path.id).await?.into(),
    }))
}

/// V1 calls of one caller.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct V1UsageDto {
    /// `user:<X-User-Id>`, or `ip:<client address>` for calls without a usable `X-User-Id`.
    pub caller: String,
    pub calls: i64,
    /// RFC 3339, UTC.
    pub first_seen: String,
    /// RFC 3339, UTC.
    pub last_seen: String,
}

impl From<CallerUsage> for V1UsageDto {
    fn from(u: CallerUsage) -> Self {
        V1UsageDto {
            caller: u.caller,
            calls: u.calls,
            first_seen: u.first_seen,
            last_seen: u.last_seen,
        }
    }
}

http_edge::list_dto!(V1UsageList, V1UsageDto);

/// Who still calls V1
///
/// Every request under `/v1` counted per caller (`X-User-Id`, else the client address), most
/// calls first, across every instance sharing the database: this instance's calls up to this
/// request, the other instances' up to about a second ago. `limit` (default 20, clamped into
/// 1..100) and `offset` (default 0).
#[api_operation(operation_id = "v1_usage", tag = "meta", error_code = 422)]
pub async fn v1_usage(
    db: Db,
    context: Data<Context>,
    q: RawQuery<ClampedPageQuery>,
) -> Result<Linked<V1UsageList>, ApiError> {
    let page = paging(&q)?;
    // A failure to write is logged by the recorder; the answer then lacks those calls.
    let _ = actix_web::web::block(move || context.v1_usage.write()).await;
    let (items, total) = db.read(move |c| repo::usage::list(c, page)).await?;
    Ok(Linked::new(ListEnvelope::new(items, page, total).into()))
}

/// Versioned notes need a bearer token (a write, scope write or admin); V1 usage is operator
/// data.
pub const ACCESS: &[Rule] = &[
    Rule::any("/v1/notes", Access::Bearer),
    Rule::any("/v1/notes/{id}", Access::Bearer),
    Rule::any("/v2/notes", Access::Bearer),
    Rule::any("/v2/notes/{id}", Access::Bearer),
    Rule::any("/metrics/v1-usage", Access::OperatorOnly),
];

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(
        resource("/v1/notes")
            .route(get().to(list_v1))
            .route(post().to(create_v1)),
    )
    .service(resource("/v1/notes/{id}").route(get().to(get_v1)))
    .service(
        resource("/v2/notes")
            .route(get().to(list_v2))
            .route(post().to(create_v2)),
    )
    .service(resource("/v2/notes/{id}").route(get().to(get_v2)))
    .service(resource("/metrics/v1-usage").route(get().to(v1_usage)));
}
