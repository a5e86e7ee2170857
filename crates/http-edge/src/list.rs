//! Offset-paged lists: their query ([`PageQuery`], [`ClampedPageQuery`]), the page read
//! ([`offset_page`]) and the envelope each list declares with [`list_dto!`](crate::list_dto).

use apistos::ApiComponent;
use apistos::schemars::JsonSchema;
use pagination::Page;
use problem_details::Problem;
use serde::Deserialize;
use storage::DbConnection;

use crate::db::Db;
use crate::error::ApiError;
use crate::extract::RawQuery;

/// The crate the envelope macro names (so its callers need not depend on it).
#[doc(hidden)]
pub use pagination as __pagination;

/// `limit` and `offset` for the lists that clamp (areas B and C): any integer is accepted;
/// only a value that is not an integer is 422.
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct ClampedPageQuery {
    /// Items per page (default 20); clamped into 1..100.
    pub limit: Option<i64>,
    /// Items to skip (default 0); a negative value counts as 0.
    pub offset: Option<i64>,
}

/// `limit` 1..=100 (default 20) and `offset` ≥ 0 (default 0); anything else is 422.
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct PageQuery {
    /// Items per page, 1 to 100 (default 20).
    #[schemars(range(min = 1, max = pagination::MAX_LIMIT))]
    pub limit: Option<i64>,
    /// Items to skip, at least 0 (default 0).
    #[schemars(range(min = 0))]
    pub offset: Option<i64>,
}

/// One page of an offset-paged list: the strict `limit` and `offset` of `q` (422 naming every
/// bad one), the rows and total `read` gives for that page, in the list's envelope.
pub async fn offset_page<L, D, E, F>(
    db: &Db,
    q: &RawQuery<PageQuery>,
    mut read: F,
) -> Result<L, ApiError>
where
    F: FnMut(&mut DbConnection, Page) -> Result<(Vec<D>, i64), E> + Send + 'static,
    L: From<pagination::ListEnvelope<D>>,
    D: Send + 'static,
    E: std::error::Error + Send + 'static,
    ApiError: From<E>,
{
    let page = Page::strict(q.get("limit"), q.get("offset")).map_err(Problem::validation)?;
    let (items, total) = db.read(move |c| read(c, page)).await?;
    Ok(pagination::ListEnvelope::new(items, page, total).into())
}

/// Declares a list envelope `{items, limit, offset, total, next_offset}` of `$item`, with a schema of its
/// own name (a generic struct would give every list the same schema name).
#[macro_export]
macro_rules! list_dto {
    ($name:ident, $item:ty) => {
        #[derive(Debug, serde::Serialize, apistos::ApiComponent, apistos::JsonSchema)]
        #[schemars(crate = "apistos")]
        pub struct $name {
            pub items: Vec<$item>,
            pub limit: i64,
            pub offset: i64,
            pub total: i64,
            /// Where the next page starts (`offset` plus this page's items) while items
            /// remain; `null` on the last page. A page of large items may end before `limit`.
            pub next_offset: Option<i64>,
        }

        impl $crate::links::Paged for $name {
            fn paging(&self) -> $crate::links::Paging {
                $crate::links::Paging::Offset {
                    limit: self.limit,
                    offset: self.offset,
                    next: self.next_offset,
                }
            }
        }

        impl<D> From<$crate::list::__pagination::ListEnvelope<D>> for $name
        where
            $item: From<D>,
        {
            fn from(env: $crate::list::__pagination::ListEnvelope<D>) -> Self {
                let env = env.map(<$item>::from);
                $name {
                    items: env.items,
                    limit: env.limit,
                    offset: env.offset,
                    total: env.total,
                    next_offset: env.next_offset,
                }
            }
        }
    };
}
