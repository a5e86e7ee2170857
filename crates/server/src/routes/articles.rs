//! Area B: `POST /articles`, `GET /articles/offset`, `GET /articles/cursor`.

use apistos::web::{ServiceConfig, get, post, resource};
use apistos::{ApiComponent, api_operation};
use articles::{Article, ArticleInput, NewArticle, repo};
use pagination::{Cursor, CursorPage, OffsetPage, Page};
use problem_details::Problem;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use apistos::schemars;

use super::dto::{ClampedPageQuery, TEXT_PATTERN};
use crate::auth::{Access, Rule};
use http_edge::db::Db;
use http_edge::error::ApiError;
use http_edge::extract::{JsonObject, RawQuery};
use http_edge::idempotent::{Created, KeyedCreate};
use http_edge::links::{Linked, Paged, Paging};
use idempotency::Scope;

#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct ArticleDto {
    /// The ordering key of both lists (descending).
    pub id: i64,
    pub title: String,
    pub author: String,
    /// Null when the article has no category.
    #[schemars(extend("type" = "string", "nullable" = true))]
    pub category: Option<String>,
    /// RFC 3339, UTC.
    pub created_at: String,
}

impl From<Article> for ArticleDto {
    fn from(a: Article) -> Self {
        ArticleDto {
            id: a.id,
            title: a.title,
            author: a.author,
            category: a.category,
            created_at: a.created_at,
        }
    }
}

/// Articles are read in pages only: no URL of their own.
impl http_edge::idempotent::Addressable for ArticleDto {
    fn id_segment(&self) -> Option<String> {
        None
    }
}

/// A new article: `title` and `author` required and not blank; `category` optional (not blank
/// when given).
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct ArticleBody {
    #[schemars(length(min = 1, max = articles::ARTICLE_TITLE_MAX), regex(pattern = TEXT_PATTERN))]
    pub title: String,
    #[schemars(length(min = 1, max = articles::ARTICLE_AUTHOR_MAX), regex(pattern = TEXT_PATTERN))]
    pub author: String,
    #[schemars(length(min = 1, max = articles::ARTICLE_CATEGORY_MAX), regex(pattern = TEXT_PATTERN))]
    pub category: Option<String>,
}

/// `limit` and `after` of the cursor route: any integer is accepted; only a value that is not
/// an integer is 422.
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct CursorQuery {
    /// Items per page (default 20); clamped into 1..100.
    pub limit: Option<i64>,
    /// Only articles with an id below this one (the previous page's `next_cursor`); absent for
    /// the first page. 0 or less gives an empty page.
    pub after: Option<i64>,
}

/// An offset page: `has_more` is `offset + limit < total`.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct ArticleOffsetPage {
    pub items: Vec<ArticleDto>,
    /// The effective limit, after clamping.
    pub limit: i64,
    /// The effective offset.
    pub offset: i64,
    /// How many articles exist.
    pub total: i64,
    pub has_more: bool,
    /// `offset + limit` when `has_more`, else null.
    pub next_offset: Option<i64>,
}

impl Paged for ArticleOffsetPage {
    fn paging(&self) -> Paging {
        Paging::Offset {
            limit: self.limit,
            offset: self.offset,
            next: self.next_offset,
        }
    }
}

impl Paged for ArticleCursorPage {
    fn paging(&self) -> Paging {
        Paging::Cursor {
            param: "after",
            next: self.next_cursor,
        }
    }
}

impl From<OffsetPage<Article>> for ArticleOffsetPage {
    fn from(p: OffsetPage<Article>) -> Self {
        let p = p.map(ArticleDto::from);
        ArticleOffsetPage {
            items: p.items,
            limit: p.limit,
            offset: p.offset,
            total: p.total,
            has_more: p.has_more,
            next_offset: p.next_offset,
        }
    }
}

/// A cursor page: no total; pass `next_cursor` as `after` for the next page.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct ArticleCursorPage {
    pub items: Vec<ArticleDto>,
    /// The effective limit, after clamping.
    pub limit: i64,
    /// More articles exist below this page.
    pub has_more: bool,
    /// The id of the last item when `has_more`, else null.
    pub next_cursor: Option<i64>,
}

impl From<CursorPage<Article>> for ArticleCursorPage {
    fn from(p: CursorPage<Article>) -> Self {
        let p = p.map(ArticleDto::from);
        ArticleCursorPage {
            items: p.items,
            limit: p.limit,
            has_more: p.has_more,
            next_cursor: p.next_cursor,
        }
    }
}

/// Create an article
#[api_operation(operation_id = "create_article", tag = "articles", error_code = 422)]
pub async fn create(
    db: Db,
    keyed: KeyedCreate,
    body: JsonObject<ArticleBody>,
) -> Result<Created<ArticleDto>, ApiError> {
    let new = NewArticle::new(
        ArticleInput::from_json(&body)?,
        storage::timestamp::now_rfc3339(),
    );
    let owner = db.actor().owner_id();
    keyed
        .create(
            &db,
            Scope::of("create_article", &[]).formerly("POST /articles"),
            &body,
            move |c| repo::create(c, &new, owner).map(ArticleDto::from),
        )
        .await
}

/// List articles by offset
///
/// Articles by id descending, `limit` (default 20, clamped into 1..100) from `offset`
/// (default 0, negative counts as 0), with the total count.
#[api_operation(
    operation_id = "list_articles_offset",
    tag = "articles",
    error_code = 422
)]
pub async fn list_offset(
    db: Db,
    q: RawQuery<ClampedPageQuery>,
) -> Result<Linked<ArticleOffsetPage>, ApiError> {
    let page = Page::clamped(q.get("limit"), q.get("offset")).map_err(Problem::validation)?;
    Ok(Linked::new(
        db.read(move |c| repo::list_offset(c, page)).await?.into(),
    ))
}

/// List articles by cursor
///
/// Articles by id descending, `limit` (default 20, clamped into 1..100) with an id below
/// `after`. One range query on the primary key: no offset, no count, the same cost at any
/// depth.
#[api_operation(
    operation_id = "list_articles_cursor",
    tag = "articles",
    error_code = 422
)]
pub async fn list_cursor(
    db: Db,
    q: RawQuery<CursorQuery>,
) -> Result<Linked<ArticleCursorPage>, ApiError> {
    let cursor = Cursor::clamped(q.get("limit"), q.get("after")).map_err(Problem::validation)?;
    Ok(Linked::new(
        db.read(move |c| repo::list_cursor(c, cursor)).await?.into(),
    ))
}

/// Articles: a bearer token (a write, scope write or admin).
pub const ACCESS: &[Rule] = &[
    Rule::any("/articles", Access::Bearer),
    Rule::any("/articles/offset", Access::Bearer),
    Rule::any("/articles/cursor", Access::Bearer),
];

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(resource("/articles").route(post().to(create)))
        .service(resource("/articles/offset").route(get().to(list_offset)))
        .service(resource("/articles/cursor").route(get().to(list_cursor)));
}
