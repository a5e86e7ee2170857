//! The reads: one account, the accounts, an account's events.

use pagination::{Cursor, CursorPage, Page};
use storage::DbConnection;

use ownership::Actor;

use crate::{Account, Error, Event, is_valid_account_id, repo};

/// The projection of one account, as `actor` may see it: an account of another user does not
/// exist for it (its existence is private), nor does an id of the wrong form.
pub fn get_account(
    conn: &mut DbConnection,
    account_id: &str,
    actor: Actor,
) -> Result<Account, Error> {
    let found = if is_valid_account_id(account_id) {
        repo::get_account(conn, account_id)?
    } else {
        None
    };
    found
        .filter(|a| actor.sees(a.owner_id))
        .ok_or_else(|| Error::AccountNotFound {
            id: account_id.to_owned(),
        })
}

/// A page of the accounts `actor` may see (a user's own; everyone's for the operator), and
/// how many of them there are.
pub fn list_accounts(
    conn: &mut DbConnection,
    page: Page,
    actor: Actor,
) -> Result<(Vec<Account>, i64), Error> {
    repo::list_accounts(conn, page, actor.only_owner())
}

/// `after_sequence` (≥ 0, default 0) and `limit` (1 ..= 1,000, default 1,000) of an event list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventsPage {
    pub after_sequence: i64,
    pub limit: i64,
}

impl EventsPage {
    pub fn parse(after_sequence: Option<&str>, limit: Option<&str>) -> Result<Self, Error> {
        use pagination::{Params, parse_in};
        let max = crate::EVENTS_LIMIT_MAX;
        let mut params = Params::new();
        let after_sequence =
            params.take(parse_in("after_sequence", after_sequence, 0..=i64::MAX), 0);
        let limit = params.take(parse_in("limit", limit, 1..=max), max);
        params
            .finish(EventsPage {
                after_sequence,
                limit,
            })
            .map_err(Error::Validation)
    }
}

impl Default for EventsPage {
    fn default() -> Self {
        EventsPage {
            after_sequence: 0,
            limit: crate::EVENTS_LIMIT_MAX,
        }
    }
}

/// One page of an account's events (sequence ascending, at most `limit` and about
/// [`crate::model::EVENTS_PAGE_MAX_BYTES`]) and the count of all its events. An unknown account
/// simply has none, and so has another user's account for `actor`. `next_cursor` is the
/// `after_sequence` of the next page.
pub fn list_events(
    conn: &mut DbConnection,
    account_id: &str,
    page: EventsPage,
    actor: Actor,
) -> Result<(CursorPage<Event>, i64), Error> {
    let cursor = Cursor {
        limit: page.limit,
        after: Some(page.after_sequence),
    };
    let hidden = actor.is_restricted()
        && !repo::get_account(conn, account_id)?.is_some_and(|a| actor.sees(a.owner_id));
    if !is_valid_account_id(account_id) || hidden {
        return Ok((CursorPage::from_rows(Vec::new(), cursor, |e| e.sequence), 0));
    }
    let (rows, count) =
        repo::events_and_count(conn, account_id, page.after_sequence, page.limit + 1)?;
    let items = CursorPage::from_rows(rows, cursor, |e: &Event| e.sequence).within_bytes(
        crate::model::EVENTS_PAGE_MAX_BYTES,
        Event::encoded_len,
        |e| e.sequence,
    );
    // Sequences run 1, 2, 3… without gaps, so the projection's last one is the count (no scan),
    // read with the page; an empty page reads it alone.
    let total = match count {
        Some(n) => n,
        None => repo::get_account(conn, account_id)?.map_or(0, |a| a.state.last_sequence),
    };
    Ok((items, total))
}

/// Events of a stream's batch: at most this many per read.
pub const STREAM_BATCH: i64 = 100;

/// The next batch of an account's stream: events after `after_sequence`, ascending, each with
/// its sequence (where the stream resumes). The caller has checked once, with [`get_account`],
/// that the account is the actor's to see (its owner never changes).
pub fn stream_events(
    conn: &mut DbConnection,
    account_id: &str,
    after_sequence: i64,
) -> Result<Vec<(i64, Event)>, Error> {
    let events = repo::events(conn, account_id, after_sequence, None, STREAM_BATCH)?;
    Ok(events.into_iter().map(|e| (e.sequence, e)).collect())
}

/// The next batch of the feed of every account (`repo::feed_after`: commit order on both
/// backends), each event with its position.
pub fn stream_feed(
    conn: &mut DbConnection,
    after: crate::FeedPosition,
) -> Result<Vec<(crate::FeedPosition, Event)>, Error> {
    repo::feed_after(conn, after, STREAM_BATCH)
}

/// Where the feed of every account resumes: `text` (a position the feed sent as an event's
/// `id`), or the start when there is none.
pub fn feed_position(text: Option<&str>) -> Result<crate::FeedPosition, Error> {
    use problem_details::{FieldError, FieldErrorCode};
    match text {
        None => Ok(crate::FeedPosition::START),
        Some(text) => crate::FeedPosition::parse(text).ok_or_else(|| {
            Error::Validation(vec![FieldError::new(
                "after",
                FieldErrorCode::Invalid,
                "expected a position the feed sent as an event id (<tx>-<id>)",
            )])
        }),
    }
}
