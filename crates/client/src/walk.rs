//! Lists followed to their end as a [`Stream`], one page at a time. The walks follow the
//! pagination fields of each page's body (`next_offset`, `next_cursor`) rather than its `Link`
//! header: the body's fields are typed and checked with the page, while `Link` holds relative
//! references the service derives from those same values.

use std::collections::VecDeque;
use std::future::Future;

use futures_util::{Stream, stream};

use crate::error::ClientError;

/// One page's items and where the next page starts (`None` after the last).
pub(crate) type Step<T, C> = (Vec<T>, Option<C>);

struct Walk<C, T, F> {
    fetch: F,
    next: Option<C>,
    buffer: VecDeque<T>,
}

/// The items of every page, in order, from the page at `first`; `fetch` reads one page. Stops
/// at the first error (the stream then ends).
pub(crate) fn walk<C, T, F, Fut>(
    op: &'static str,
    first: C,
    fetch: F,
) -> impl Stream<Item = Result<T, ClientError>> + Send + 'static
where
    C: Clone + PartialEq + Send + 'static,
    T: Send + 'static,
    F: FnMut(C) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Step<T, C>, ClientError>> + Send + 'static,
{
    let start = Walk {
        fetch,
        next: Some(first),
        buffer: VecDeque::new(),
    };
    stream::try_unfold(start, move |mut walk| async move {
        loop {
            if let Some(item) = walk.buffer.pop_front() {
                return Ok(Some((item, walk)));
            }
            let Some(at) = walk.next.take() else {
                return Ok(None);
            };
            let (items, next) = (walk.fetch)(at.clone()).await?;
            // A page that leads back to itself, or on without items, would never end.
            if next.is_some() && (items.is_empty() || next.as_ref() == Some(&at)) {
                return Err(ClientError::invalid(
                    op,
                    "the next page does not move past this one",
                ));
            }
            walk.buffer.extend(items);
            walk.next = next;
        }
    })
}

#[cfg(test)]
mod tests {
    use futures_util::TryStreamExt;

    use super::*;

    fn pages(size: u32, total: u32) -> impl Stream<Item = Result<u32, ClientError>> {
        walk("test", 0u32, move |offset| async move {
            let end = (offset + size).min(total);
            Ok(((offset..end).collect(), (end < total).then_some(end)))
        })
    }

    #[tokio::test]
    async fn every_item_once_in_order() {
        let all: Vec<u32> = pages(3, 10).try_collect().await.unwrap();
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        let none: Vec<u32> = pages(3, 0).try_collect().await.unwrap();
        assert!(none.is_empty());
    }

    #[tokio::test]
    async fn a_page_that_does_not_move_on_is_an_error() {
        let stuck = walk("test", 0u32, |at| async move { Ok((vec![1u8], Some(at))) });
        let err = stuck.try_collect::<Vec<_>>().await.unwrap_err();
        assert!(
            matches!(err, ClientError::InvalidResponse { .. }),
            "{err:?}"
        );
        let empty = walk("test", 0u32, |at| async move {
            Ok((Vec::<u8>::new(), Some(at + 1)))
        });
        assert!(empty.try_collect::<Vec<_>>().await.is_err());
    }
}
