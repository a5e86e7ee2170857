//! The dispatcher sends at the lowest CPU priority, and only its sending thread does: the
//! threads that run its database calls (which may hold the SQLite write lock) keep the normal
//! one, so that no append waits behind a descheduled holder.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use outbound_webhooks::SigningKey;
use outbound_webhooks::dispatch::{Dispatcher, Settings};
use storage::testing::{TestDatabase, nice_of, nice_values_once};
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
    let niced = nice_values_once("webhook-dispatc", storage::CHECKPOINTER_NICE);
    assert_eq!(niced, [storage::CHECKPOINTER_NICE]);
    assert_eq!(nice_of("self"), own, "the caller's priority changed");
    drop(dispatcher);
}
