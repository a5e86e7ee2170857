//! An endpoint's lease (which process delivers for it) on both backends: times are the
//! database's, so processes on machines whose clocks disagree still agree on who holds it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use diesel::RunQueryDsl;
use ledger::FeedPosition;
use outbound_webhooks::repo::{self, Standing};
use storage::DbConnection;
use storage::timestamp::database_ms;

mod common;
use common::endpoint;

fn lease_until(c: &mut DbConnection, id: i64) -> i64 {
    use outbound_webhooks::schema::webhook_endpoints as e;
    use storage::diesel::prelude::*;
    e::table.find(id).select(e::lease_until).first(c).unwrap()
}

/// Ends the lease `ago` ms ago by the database's clock, as if its holder had stopped renewing.
fn run_out(c: &mut DbConnection, id: i64, ago: i64) {
    let at = database_ms(c).unwrap() - ago;
    diesel::sql_query(format!(
        "UPDATE webhook_endpoints SET lease_until = {at} WHERE id = {id}"
    ))
    .execute(c)
    .unwrap();
}

#[test]
fn a_lease_is_held_until_the_databases_clock_passes_it() {
    storage::testing::on_each_backend(|_, c| {
        let id = endpoint(c);
        let before = database_ms(c).unwrap();
        let span = Duration::from_secs(30);
        assert!(repo::lease(c, id, "a", span).unwrap().is_some());
        let until = lease_until(c, id);
        let after = database_ms(c).unwrap();
        assert!(
            (before + 30_000..=after + 30_000).contains(&until),
            "{before} {until} {after}"
        );
        // Held: another process cannot take it, its holder renews it.
        assert!(repo::lease(c, id, "b", span).unwrap().is_none());
        assert!(repo::lease(c, id, "a", span).unwrap().is_some());

        // Run out by the database's clock: the next process takes it, and the old holder's
        // writes no longer land.
        run_out(c, id, 1);
        assert!(repo::lease(c, id, "b", span).unwrap().is_some());
        let standing = Standing {
            cursor: FeedPosition::default(),
            failed_attempts: 0,
            next_attempt_at: 0,
            lease_until: 0,
        };
        assert!(!repo::advance(c, id, "a", &standing).unwrap());
        assert!(repo::advance(c, id, "b", &standing).unwrap());
    });
}

#[test]
fn a_due_endpoint_is_one_whose_lease_ran_out_by_the_databases_clock() {
    storage::testing::on_each_backend(|_, c| {
        let id = endpoint(c);
        let head = FeedPosition { tx: 0, id: 1 };
        assert_eq!(repo::due(c, head, 10).unwrap(), vec![id]);
        assert!(
            repo::lease(c, id, "a", Duration::from_secs(30))
                .unwrap()
                .is_some()
        );
        assert!(repo::due(c, head, 10).unwrap().is_empty());
        run_out(c, id, 1);
        assert_eq!(repo::due(c, head, 10).unwrap(), vec![id]);
    });
}
