//! What the crate's database tests share.

use ledger::FeedPosition;
use outbound_webhooks::EventTypes;
use outbound_webhooks::repo;
use storage::DbConnection;

/// A new endpoint of user 1 taking every event type, at the feed's start; its id.
pub fn endpoint(c: &mut DbConnection) -> i64 {
    let now = storage::timestamp::now_sql();
    let made = repo::insert(
        c,
        Some(1),
        "http://127.0.0.1:9/hook",
        &EventTypes::all(),
        "salt",
        FeedPosition::default(),
        &now,
    )
    .unwrap();
    made.id
}
