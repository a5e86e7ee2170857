//! Articles (area B): one list, id descending, paged by offset or by cursor, page by page or
//! followed to its end as a stream.

use futures_util::Stream;
use reqwest::{Method, StatusCode};

use crate::error::ClientError;
use crate::idempotency::{Created, IdempotencyKey};
use crate::transport::{Call, Client};
use crate::types::{
    Article, ArticleCursorPage, ArticleInput, ArticleOffsetPage, CursorRequest, PageRequest,
};
use crate::walk::walk;

const LIST_OFFSET: &str = "list_articles_offset";
const LIST_CURSOR: &str = "list_articles_cursor";

/// `/articles`. Made by [`Client::articles`].
///
/// ```no_run
/// use client::{ArticleInput, TryStreamExt};
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// api.articles().create(&ArticleInput::new("Hello", "Ann")).await?;
/// let all: Vec<client::Article> = api.articles().cursor_stream(100).try_collect().await?;
/// # let _ = all; Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Articles<'a> {
    client: &'a Client,
}

async fn offset_page(client: &Client, page: PageRequest) -> Result<ArticleOffsetPage, ClientError> {
    let call = Call::new(LIST_OFFSET, Method::GET, "/articles/offset").query(page.query());
    Ok(client.fetch(call, StatusCode::OK).await?.0)
}

async fn cursor_page(
    client: &Client,
    page: CursorRequest,
) -> Result<ArticleCursorPage, ClientError> {
    let call = Call::new(LIST_CURSOR, Method::GET, "/articles/cursor").query(page.query());
    Ok(client.fetch(call, StatusCode::OK).await?.0)
}

impl Articles<'_> {
    /// `POST /articles`, under a fresh random `Idempotency-Key` (so retried safely).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let article = api.articles().create(&client::ArticleInput::new("t", "a").category("c")).await?;
    /// # let _ = article; Ok(()) }
    /// ```
    pub async fn create(&self, input: &ArticleInput) -> Result<Article, ClientError> {
        Ok(self.created(input, None).await?.value)
    }

    /// `POST /articles` under the caller's `key`.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let key = client::IdempotencyKey::new("article-42")?;
    /// let made = api.articles().create_with_key(&client::ArticleInput::new("t", "a"), &key).await?;
    /// # let _ = made; Ok(()) }
    /// ```
    pub async fn create_with_key(
        &self,
        input: &ArticleInput,
        key: &IdempotencyKey,
    ) -> Result<Created<Article>, ClientError> {
        self.created(input, Some(key)).await
    }

    async fn created(
        &self,
        input: &ArticleInput,
        key: Option<&IdempotencyKey>,
    ) -> Result<Created<Article>, ClientError> {
        let call = Call::new("create_article", Method::POST, "/articles").json(input)?;
        self.client.create(call, key).await
    }

    /// `GET /articles/offset`: one page by offset, with the total.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let page = api.articles().list_offset(client::PageRequest::new(20, 40)).await?;
    /// # let _ = page; Ok(()) }
    /// ```
    pub async fn list_offset(&self, page: PageRequest) -> Result<ArticleOffsetPage, ClientError> {
        offset_page(self.client, page).await
    }

    /// `GET /articles/cursor`: one page below a cursor (the previous page's `next_cursor`).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let page = api.articles().list_cursor(client::CursorRequest::new(20)).await?;
    /// # let _ = page; Ok(()) }
    /// ```
    pub async fn list_cursor(&self, page: CursorRequest) -> Result<ArticleCursorPage, ClientError> {
        cursor_page(self.client, page).await
    }

    /// Every article, newest first, read `limit` at a time through the offset route. An
    /// article inserted while the stream runs shifts the later pages: one article may then come
    /// twice. Prefer [`cursor_stream`](Self::cursor_stream) unless you need the offsets.
    ///
    /// ```no_run
    /// use client::TryStreamExt;
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let mut articles = std::pin::pin!(api.articles().offset_stream(50));
    /// while let Some(article) = articles.try_next().await? {
    ///     println!("{} by {}", article.title, article.author);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn offset_stream(
        &self,
        limit: u32,
    ) -> impl Stream<Item = Result<Article, ClientError>> + Send + 'static {
        let client = self.client.clone();
        walk(LIST_OFFSET, 0u64, move |offset| {
            let client = client.clone();
            async move {
                let page = offset_page(&client, PageRequest::new(limit, offset)).await?;
                let next = page.next_offset.and_then(|n| u64::try_from(n).ok());
                Ok((page.items, next))
            }
        })
    }

    /// Every article, newest first, read `limit` at a time through the cursor route: each
    /// article that existed when the stream began comes exactly once, whatever is inserted
    /// meanwhile.
    ///
    /// ```no_run
    /// use client::TryStreamExt;
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let ids: Vec<i64> = api.articles().cursor_stream(100).map_ok(|a| a.id).try_collect().await?;
    /// # let _ = ids; Ok(()) }
    /// ```
    pub fn cursor_stream(
        &self,
        limit: u32,
    ) -> impl Stream<Item = Result<Article, ClientError>> + Send + 'static {
        let client = self.client.clone();
        walk(LIST_CURSOR, None, move |after: Option<i64>| {
            let client = client.clone();
            async move {
                let page = cursor_page(
                    &client,
                    CursorRequest {
                        limit: Some(limit),
                        after,
                    },
                )
                .await?;
                Ok((page.items, page.next_cursor.map(Some)))
            }
        })
    }
}

impl Client {
    /// `/articles` (see [`Articles`]).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let page = api.articles().list_offset(Default::default()).await?;
    /// # let _ = page; Ok(()) }
    /// ```
    pub fn articles(&self) -> Articles<'_> {
        Articles { client: self }
    }
}
