//! The pruner's cut-offs on both backends: answered records go after the TTL, the ledger's
//! records (by reference) only after the wider bound.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use idempotency::{Answer, Key, Scope, repo};
use serde_json::Map;
use storage::testing::on_each_backend;

fn key(raw: &str) -> Key {
    Key::scoped(raw, &Scope::of("create_note", &[]), &Map::new()).unwrap()
}

#[test]
fn ledger_records_outlive_the_ttl_until_the_wider_bound() {
    on_each_backend(|_, c| {
        let answered = Answer {
            status: 201,
            location: None,
            body: "{}".into(),
        };
        let by_reference = Answer::by_reference(r#"{"aggregate_id":"a","sequence":2}"#.into());
        let made = "2026-01-10T00:00:00Z";
        repo::record(c, "ann", &key("note"), &answered, made).unwrap();
        repo::record(c, "ann", &key("deposit"), &by_reference, made).unwrap();

        // Both past the TTL, within the wider bound: only the answered one goes.
        let pruned = repo::prune(c, "2026-01-11T00:00:00Z", "2026-01-04T00:00:00Z").unwrap();
        assert_eq!((pruned, repo::count(c).unwrap()), (1, 1));
        // Past the wider bound, the ledger's goes too.
        let pruned = repo::prune(c, "2026-01-20T00:00:00Z", "2026-01-11T00:00:00Z").unwrap();
        assert_eq!((pruned, repo::count(c).unwrap()), (1, 0));
    });
}
