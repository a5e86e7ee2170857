//! The dispatcher sends at the lowest CPU priority (nice 19, in the idle scheduling class), and
//! only its sending thread does so: the threads that run its reads (which hold pooled
//! connections) stay in the normal class at nice 19, its writer (which may hold the SQLite
//! write lock) keeps the normal priority, and the thread that started it is left as it was.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use outbound_webhooks::SigningKey;
use outbound_webhooks::dispatch::{Dispatcher, Settings};
use storage::testing::{
    TestDatabase, nice_of, nice_values_once, policies_once, policy_of, threads_named,
};
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
    let own = (nice_of("self"), policy_of("self"));
    let dispatcher = Dispatcher::start(store, settings).unwrap();
    let niced = nice_values_once("webhook-dispatc", storage::CHECKPOINTER_NICE);
    assert_eq!(niced, [storage::CHECKPOINTER_NICE]);
    // The class is set after the nice value, by the same thread: wait for it too.
    const SCHED_IDLE: i32 = 5;
    let policies = policies_once("webhook-dispatc", SCHED_IDLE);
    assert_eq!(policies, [SCHED_IDLE]);
    // The readers: niced, but not in the idle class (a thread the sender created would be).
    let readers = nice_values_once("webhook-reads", storage::CHECKPOINTER_NICE);
    assert!(
        !readers.is_empty() && readers.iter().all(|&n| n == storage::CHECKPOINTER_NICE),
        "{readers:?}"
    );
    let classes: Vec<_> = threads_named("webhook-reads")
        .iter()
        .filter_map(|t| policy_of(t))
        .collect();
    assert!(classes.iter().all(|&p| p == 0), "{classes:?}");
    assert_eq!(
        (nice_of("self"), policy_of("self")),
        own,
        "the caller's priority changed"
    );
    drop(dispatcher);
}
