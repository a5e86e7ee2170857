//! The feed of every account (`repo::feed_of`) on PostgreSQL when a transaction that got its
//! id first writes to an account after a younger transaction did, and commits last: the feed
//! must still serve the account's events in sequence order and lose none.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use diesel::connection::SimpleConnection;
use ledger::{FeedPosition, repo};
use storage::Backend;
use storage::testing::TestDatabase;

/// PostgreSQL only (SQLite has one writer: nothing to interleave); skipped, and says so,
/// without `TEST_POSTGRES_URL`.
#[test]
fn an_older_transaction_writing_after_a_younger_one_keeps_the_account_in_order() {
    let admin = std::env::var("TEST_POSTGRES_URL").ok();
    let Some(db) = TestDatabase::create(Backend::Postgres, admin.as_deref()).unwrap() else {
        return eprintln!("TEST_POSTGRES_URL not set: skipped");
    };
    let mut setup = db.migrated_connection().unwrap();
    let insert = |account: &str, sequence: i64| {
        format!(
            "INSERT INTO account_events (aggregate_id, event_type, payload, sequence, occurred_at) \
             VALUES ('{account}', 'MoneyDeposited', '{{\"amount_cents\":1}}', {sequence}, 'now');"
        )
    };
    setup
        .batch_execute(
            "INSERT INTO accounts (account_id, owner, updated_at) VALUES ('a', 'o', 'now'), ('b', 'o', 'now');",
        )
        .unwrap();
    let database = storage::Database::parse(&db.url).unwrap();
    let (mut older, mut younger) = (database.establish().unwrap(), database.establish().unwrap());
    // The older transaction takes its id first (a write to account b)...
    older
        .batch_execute(&format!("BEGIN; {}", insert("b", 1)))
        .unwrap();
    // ...the younger one writes event 1 of account a and commits...
    younger
        .batch_execute(&format!("BEGIN; {} COMMIT;", insert("a", 1)))
        .unwrap();
    // ...and the older one writes event 2 of account a after it, and commits last.
    older
        .batch_execute(&format!("{} COMMIT;", insert("a", 2)))
        .unwrap();

    let feed = repo::feed_after(&mut setup, FeedPosition::START, 100).unwrap();
    let a: Vec<i64> = feed
        .iter()
        .filter(|(_, e)| e.aggregate_id == "a")
        .map(|(_, e)| e.sequence)
        .collect();
    assert_eq!(a, [1, 2], "account a in sequence order: {feed:?}");
    assert_eq!(feed.len(), 3);
    let positions: Vec<FeedPosition> = feed.iter().map(|(p, _)| *p).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
}
