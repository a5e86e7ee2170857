//! Articles (area B): one list, id descending, paged by offset (with a total) or by cursor.

use serde::{Deserialize, Serialize};

use super::paging::query;

/// An article (schema `ArticleDto`).
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let made: client::Article =
///     api.articles().create(&client::ArticleInput::new("Title", "Ann")).await?;
/// assert_eq!(made.category, None);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Article {
    /// The ordering key of both lists (descending).
    pub id: i64,
    pub title: String,
    pub author: String,
    /// `None` when the article has no category.
    #[serde(default)]
    pub category: Option<String>,
    pub created_at: String,
}

/// A new article (schema `ArticleBody`): `title` and `author` non-blank, `category` optional.
///
/// ```
/// let input = client::ArticleInput::new("Title", "Ann").category("rust");
/// assert_eq!(input.category.as_deref(), Some("rust"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArticleInput {
    pub title: String,
    pub author: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
}

impl ArticleInput {
    /// An article without a category.
    ///
    /// ```
    /// assert_eq!(client::ArticleInput::new("t", "a").author, "a");
    /// ```
    pub fn new(title: impl Into<String>, author: impl Into<String>) -> Self {
        ArticleInput {
            title: title.into(),
            author: author.into(),
            category: None,
        }
    }

    /// In this category.
    ///
    /// ```
    /// let _ = client::ArticleInput::new("t", "a").category("c");
    /// ```
    pub fn category(mut self, category: impl Into<String>) -> Self {
        self.category = Some(category.into());
        self
    }
}

/// `limit` and `after` of a cursor page; `None` leaves the defaults (20; the first page).
///
/// ```
/// let first = client::CursorRequest::new(20);
/// let next = first.after(1234);
/// assert_eq!((next.limit, next.after), (Some(20), Some(1234)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CursorRequest {
    pub limit: Option<u32>,
    /// Only articles with a smaller id: the `next_cursor` of the previous page.
    pub after: Option<i64>,
}

impl CursorRequest {
    /// The first page of `limit` articles.
    ///
    /// ```
    /// assert_eq!(client::CursorRequest::new(5).after, None);
    /// ```
    pub fn new(limit: u32) -> Self {
        CursorRequest {
            limit: Some(limit),
            after: None,
        }
    }

    /// The page below `cursor`.
    ///
    /// ```
    /// assert_eq!(client::CursorRequest::new(5).after(9).after, Some(9));
    /// ```
    pub fn after(mut self, cursor: i64) -> Self {
        self.after = Some(cursor);
        self
    }

    pub(crate) fn query(&self) -> Vec<(&'static str, String)> {
        query([
            ("limit", self.limit.map(i128::from)),
            ("after", self.after.map(i128::from)),
        ])
    }
}

/// An offset page (schema `ArticleOffsetPage`), checked: `limit` in 1..=100, no more items than
/// `limit`, `has_more` exactly when there is a `next_offset`.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let page = api.articles().list_offset(client::PageRequest::new(20, 0)).await?;
/// println!("{} articles, more: {}", page.total, page.has_more);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawOffsetPage")]
pub struct ArticleOffsetPage {
    pub items: Vec<Article>,
    /// The effective limit, after clamping.
    pub limit: i64,
    pub offset: i64,
    pub total: i64,
    pub has_more: bool,
    /// `offset + limit` when `has_more`.
    pub next_offset: Option<i64>,
}

#[derive(Deserialize)]
struct RawOffsetPage {
    items: Vec<Article>,
    limit: i64,
    offset: i64,
    total: i64,
    has_more: bool,
    #[serde(default)]
    next_offset: Option<i64>,
}

impl TryFrom<RawOffsetPage> for ArticleOffsetPage {
    type Error = String;
    fn try_from(raw: RawOffsetPage) -> Result<Self, String> {
        check_page(raw.items.len(), raw.limit, raw.has_more, raw.next_offset)?;
        if raw.next_offset.is_some_and(|next| next <= raw.offset) {
            return Err("next_offset does not move forward".to_owned());
        }
        Ok(ArticleOffsetPage {
            items: raw.items,
            limit: raw.limit,
            offset: raw.offset,
            total: raw.total,
            has_more: raw.has_more,
            next_offset: raw.next_offset,
        })
    }
}

/// A cursor page (schema `ArticleCursorPage`): no total; pass `next_cursor` as `after`. Checked
/// like the offset page, and `next_cursor` must be the id of the last item.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let page = api.articles().list_cursor(client::CursorRequest::new(20)).await?;
/// if let Some(cursor) = page.next_cursor {
///     let _next = api.articles().list_cursor(client::CursorRequest::new(20).after(cursor)).await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawCursorPage")]
pub struct ArticleCursorPage {
    pub items: Vec<Article>,
    /// The effective limit, after clamping.
    pub limit: i64,
    /// More articles exist below this page.
    pub has_more: bool,
    /// The id of the last item when `has_more`.
    pub next_cursor: Option<i64>,
}

#[derive(Deserialize)]
struct RawCursorPage {
    items: Vec<Article>,
    limit: i64,
    has_more: bool,
    #[serde(default)]
    next_cursor: Option<i64>,
}

impl TryFrom<RawCursorPage> for ArticleCursorPage {
    type Error = String;
    fn try_from(raw: RawCursorPage) -> Result<Self, String> {
        check_page(raw.items.len(), raw.limit, raw.has_more, raw.next_cursor)?;
        if raw.next_cursor.is_some() && raw.next_cursor != raw.items.last().map(|a| a.id) {
            return Err("next_cursor is not the id of the last item".to_owned());
        }
        Ok(ArticleCursorPage {
            items: raw.items,
            limit: raw.limit,
            has_more: raw.has_more,
            next_cursor: raw.next_cursor,
        })
    }
}

/// The rules both article pages share.
fn check_page(count: usize, limit: i64, has_more: bool, next: Option<i64>) -> Result<(), String> {
    if !(1..=100).contains(&limit) {
        return Err(format!("limit {limit} is outside 1..=100"));
    }
    if count as i64 > limit {
        return Err(format!("{count} items in a page of limit {limit}"));
    }
    if has_more != next.is_some() {
        return Err("has_more disagrees with the next page's position".to_owned());
    }
    Ok(())
}
