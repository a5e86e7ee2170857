//! The dispatcher sends at the lowest CPU priority, and only its sending thread does: the
//! threads that run its database calls (which may hold the SQLite write lock) keep the normal
//! one, so that no append waits behind a descheduled holder.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use outbound_webhooks::SigningKey;
use outbound_webhooks::dispatch::{Dispatcher, Settings};
use storage::testing::{TestDatabase, nice_of, threads_named};
use storage::{Backend, Database, Store};

#[test]
fn the_sending_thread_runs_at_the_lowest_priority() {
    let db = TestDatabase::create(Backend::Sqlite, None)
        .unwrap()
        .unwrap();
    let store = Store::open(Database::parse(&db.url).unwrap(), 2).unwrap();
    let settings = Settings {
        key: SigningKey::new(vec![7u8; 32]),
        ..Settings::default()
    };
    let own = nice_of("self");
    let dispatcher = Dispatcher::start(store, settings).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let niced = loop {
        let niced: Vec<i32> = threads_named("webhook-dispatc")
            .iter()
            .filter_map(|t| nice_of(t))
            .collect();
        if niced == [storage::CHECKPOINTER_NICE] || Instant::now() > deadline {
            break niced;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(niced, [storage::CHECKPOINTER_NICE]);
    assert_eq!(nice_of("self"), own, "the caller's priority changed");
    drop(dispatcher);
}
