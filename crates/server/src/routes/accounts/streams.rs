//! Live event streams (Server-Sent Events, `http_edge::sse`): an account's, and the feed of
//! every account for the operator.

use actix_web::HttpRequest;
use actix_web::web::{Data, Path};
use apistos::api_operation;
use http_edge::db::Db;
use http_edge::error::ApiError;
use http_edge::extract::RawQuery;
use http_edge::sse::{EventStream, resume_from};
use ledger::FeedPosition;
use ledger::service::{self, EventsPage};

use super::{AccountPath, FeedQuery, StreamQuery, frames};
use crate::context::Context;

/// Stream an account's events
///
/// Server-Sent Events: every event after `after_sequence` (or after the `Last-Event-ID` a
/// reconnect sends), then each new event as it is committed, in sequence order; each event's
/// `id` is its sequence, so a reconnect loses and repeats nothing. Heartbeats keep an idle
/// stream open; it ends with an `end` event after 15 minutes (reconnect to go on). The
/// account's owner only, like its events (404 otherwise); 429 past a client's open streams.
#[api_operation(
    operation_id = "stream_account_events",
    tag = "accounts",
    error_code = 404,
    error_code = 422,
    error_code = 429,
    error_code = 503
)]
pub async fn account(
    req: HttpRequest,
    context: Data<Context>,
    db: Db,
    path: Path<AccountPath>,
    q: RawQuery<StreamQuery>,
) -> Result<EventStream<i64>, ApiError> {
    let (id, actor) = (path.into_inner().id, db.actor());
    let after = EventsPage::parse(resume_from(&req, q.get("after_sequence")), None)?;
    let seen = id.clone();
    db.read_primary(move |c| service::get_account(c, &seen, actor))
        .await?;
    let slot = context.streams.slot(&req)?;
    let topic = id.clone();
    let read = move |c: &mut _, after: &i64| service::stream_events(c, &id, *after).map(frames);
    Ok(EventStream::new(slot, db, after.after_sequence, read).following(topic))
}

/// Stream every account's events
///
/// Server-Sent Events for the operator: every account's events in commit order, after `after`
/// (or the `Last-Event-ID` a reconnect sends), then each new one as it is committed. Each
/// event's `id` is its place in this feed (`<tx>-<id>`), the only value `after` takes.
#[api_operation(
    operation_id = "stream_all_events",
    tag = "accounts",
    error_code = 422,
    error_code = 429,
    error_code = 503
)]
pub async fn all(
    req: HttpRequest,
    context: Data<Context>,
    db: Db,
    q: RawQuery<FeedQuery>,
) -> Result<EventStream<FeedPosition>, ApiError> {
    let after = service::feed_position(resume_from(&req, q.get("after")))?;
    let slot = context.streams.slot(&req)?;
    let read = |c: &mut _, after: &FeedPosition| service::stream_feed(c, *after).map(frames);
    Ok(EventStream::new(slot, db, after, read))
}
