//! Repository tests on a fresh migrated database: SQLite always, PostgreSQL when
//! `TEST_POSTGRES_URL` is set.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use diesel::RunQueryDsl;
use pagination::Page;
use problem_details::testing::object;
use serde_json::json;
use versioned_notes::{Error, NoteInput, repo};

fn on_each_backend(test: impl Fn(&mut storage::DbConnection)) {
    storage::testing::on_each_backend(|_, conn| test(conn));
}

fn v2(title: &str, tags: &[&str]) -> NoteInput {
    NoteInput::from_v2_json(&object(json!({"title": title, "body": "b", "tags": tags}))).unwrap()
}

#[test]
fn notes_round_trip_with_their_tags_in_order() {
    on_each_backend(|c| {
        let n = repo::notes::create(c, &v2("t", &["z", "a", "z"]), None).unwrap();
        assert_eq!(n.tags, ["z", "a", "z"]);
        assert_eq!(n.created_at, n.updated_at);
        assert_eq!(repo::notes::get(c, n.id).unwrap(), n);
        let v1 = NoteInput::from_v1_json(&object(json!({"title": "one", "content": "c"}))).unwrap();
        let one = repo::notes::create(c, &v1, None).unwrap();
        assert!(one.tags.is_empty());
        assert!(matches!(
            repo::notes::get(c, one.id + 1),
            Err(Error::NotFound { .. })
        ));
    });
}

#[test]
fn pages_are_newest_first_and_count_every_note() {
    on_each_backend(|c| {
        let ids: Vec<i64> = (0..5)
            .map(|i| {
                repo::notes::create(c, &v2(&format!("n{i}"), &[]), None)
                    .unwrap()
                    .id
            })
            .collect();
        let page = repo::notes::page(
            c,
            Page {
                limit: 2,
                offset: 1,
            },
        )
        .unwrap();
        let got: Vec<i64> = page.iter().map(|n| n.id).collect();
        assert_eq!(got, vec![ids[3], ids[2]]);
        assert_eq!(repo::notes::count(c).unwrap(), 5);
    });
}

#[test]
fn corrupt_stored_tags_are_an_error_not_a_panic() {
    on_each_backend(|c| {
        let n = repo::notes::create(c, &v2("t", &["a"]), None).unwrap();
        diesel::sql_query(format!(
            "UPDATE versioned_notes SET tags = 'not json' WHERE id = {}",
            n.id
        ))
        .execute(c)
        .unwrap();
        assert!(matches!(
            repo::notes::get(c, n.id),
            Err(Error::CorruptTags { id, .. }) if id == n.id
        ));
    });
}

#[test]
fn usage_counts_each_caller_and_orders_by_calls() {
    on_each_backend(|c| {
        for caller in [
            "user:1",
            "ip:10.0.0.1",
            "user:1",
            "user:1",
            "ip:10.0.0.1",
            "user:2",
        ] {
            repo::usage::record(c, caller).unwrap();
        }
        let (usage, total) = repo::usage::list(
            c,
            Page {
                limit: 10,
                offset: 0,
            },
        )
        .unwrap();
        assert_eq!(total, 3);
        let calls: Vec<(&str, i64)> = usage.iter().map(|u| (u.caller.as_str(), u.calls)).collect();
        assert_eq!(
            calls,
            vec![("user:1", 3), ("ip:10.0.0.1", 2), ("user:2", 1)]
        );
        assert!(usage.iter().all(|u| u.first_seen <= u.last_seen));
    });
}
