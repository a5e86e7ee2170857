//! The delivery log on both backends: a batch of attempts, logged in one statement, reads back
//! field for field and in the order it was logged.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use outbound_webhooks::repo::{self, NewDelivery};
use pagination::Page;

mod common;
use common::endpoint;

#[test]
fn a_logged_batch_reads_back_field_for_field_in_its_order() {
    storage::testing::on_each_backend(|_, c| {
        let now = storage::timestamp::now_sql();
        let id = endpoint(c);
        // Every kind of value a column takes: nulls, large numbers, and text that JSON and SQL
        // must both carry unchanged (quotes, a backslash, a newline, non-ASCII).
        let errors = [
            "connection refused".to_string(),
            r#"said "no" \ then'; DROP TABLE x; --"#.to_string(),
            "line\nbreak, \u{e9}t\u{e9}, \u{1f4e8}".to_string(),
        ];
        let attempts: Vec<NewDelivery<'_>> = (0..250i64)
            .map(|i| NewDelivery {
                endpoint_id: id,
                message_id: "evt_1",
                event_id: i64::MAX - i,
                attempt: i % 7 + 1,
                outcome: ["delivered", "failed", "gave_up"][usize::try_from(i % 3).unwrap()],
                response_status: (i % 2 == 0).then_some(200 + i),
                latency_ms: i * 3,
                error: (i % 2 == 1).then(|| errors[usize::try_from(i % 3).unwrap()].as_str()),
                next_attempt_at: (i % 4 == 1).then_some(1_800_000_000_000 + i),
                manual: i % 5 == 0,
            })
            .collect();
        repo::log_deliveries(c, &attempts, &now).unwrap();
        repo::log_deliveries(c, &[], &now).unwrap();

        let page = Page {
            limit: 1000,
            offset: 0,
        };
        let (mut logged, total) = repo::deliveries(c, id, page).unwrap();
        assert_eq!(total, 250);
        // Newest first: reversed, they are the attempts in the order they were given (each
        // has its own event id, compared below).
        logged.reverse();
        assert_eq!(logged.len(), attempts.len());
        for (got, want) in logged.iter().zip(&attempts) {
            assert_eq!(got.endpoint_id, want.endpoint_id);
            assert_eq!(got.message_id, want.message_id);
            assert_eq!(got.event_id, want.event_id);
            assert_eq!(got.attempt, want.attempt);
            assert_eq!(got.outcome, want.outcome);
            assert_eq!(got.response_status, want.response_status);
            assert_eq!(got.latency_ms, want.latency_ms);
            assert_eq!(got.error.as_deref(), want.error);
            assert_eq!(got.next_attempt_at, want.next_attempt_at);
            assert_eq!(got.attempted_at, now);
            assert_eq!(got.manual, want.manual, "attempt {}", want.event_id);
        }
    });
}
