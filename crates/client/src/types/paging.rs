//! The list envelope `{items, limit, offset, total, next_offset}` shared by notes, tags,
//! comments, accounts, webhook events and V1 usage, and the `limit`/`offset` that ask for a page.

use serde::Deserialize;

/// `limit` and `offset` of a list call; `None` leaves the server's default (20 and 0; a
/// user's tokens: every token).
///
/// ```
/// let page = client::PageRequest::new(10, 30);
/// assert_eq!((page.limit, page.offset), (Some(10), Some(30)));
/// assert_eq!(client::PageRequest::default().limit, None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PageRequest {
    pub limit: Option<u32>,
    pub offset: Option<u64>,
}

impl PageRequest {
    /// `limit` items from `offset`.
    ///
    /// ```
    /// assert_eq!(client::PageRequest::new(5, 0).offset, Some(0));
    /// ```
    pub fn new(limit: u32, offset: u64) -> Self {
        PageRequest {
            limit: Some(limit),
            offset: Some(offset),
        }
    }

    pub(crate) fn query(&self) -> Vec<(&'static str, String)> {
        query([
            ("limit", self.limit.map(i128::from)),
            ("offset", self.offset.map(i128::from)),
        ])
    }
}

/// The query string pairs of the paging parameters that are set (the others keep the
/// service's defaults). `i128` holds every integer type the parameters use.
pub(crate) fn query<const N: usize>(
    params: [(&'static str, Option<i128>); N],
) -> Vec<(&'static str, String)> {
    params
        .into_iter()
        .filter_map(|(name, value)| Some((name, value?.to_string())))
        .collect()
}

/// The list envelope `{items, limit, offset, total, next_offset}`, checked for consistency:
/// `limit` in 1..=100, `offset` and `total` not negative, no more items than `limit`, and
/// `next_offset` (when present) right after this page's items.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let page: client::Page<client::Tag> = api.tags().list(client::PageRequest::new(50, 0)).await?;
/// println!("{} of {} tags; next page at {:?}", page.items.len(), page.total, page.next_offset);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawPage<T>")]
pub struct Page<T> {
    pub items: Vec<T>,
    pub limit: i64,
    pub offset: i64,
    pub total: i64,
    /// Where the next page starts while items remain; `None` on the last page. A page of
    /// large items may end before `limit`, so this, not `offset + limit`, is the next page.
    pub next_offset: Option<i64>,
}

#[derive(Deserialize)]
struct RawPage<T> {
    items: Vec<T>,
    limit: i64,
    offset: i64,
    total: i64,
    #[serde(default)]
    next_offset: Option<i64>,
}

impl<T> TryFrom<RawPage<T>> for Page<T> {
    type Error = String;
    fn try_from(raw: RawPage<T>) -> Result<Self, String> {
        if !(1..=100).contains(&raw.limit) {
            return Err(format!("limit {} is outside 1..=100", raw.limit));
        }
        if raw.offset < 0 || raw.total < 0 {
            return Err("offset and total must not be negative".to_owned());
        }
        let count = raw.items.len() as i64;
        if count > raw.limit {
            return Err(format!("{count} items in a page of limit {}", raw.limit));
        }
        if let Some(next) = raw.next_offset
            && (count == 0 || next != raw.offset + count)
        {
            return Err(format!(
                "next_offset {next} does not follow {count} items from offset {}",
                raw.offset
            ));
        }
        Ok(Page {
            items: raw.items,
            limit: raw.limit,
            offset: raw.offset,
            total: raw.total,
            next_offset: raw.next_offset,
        })
    }
}
