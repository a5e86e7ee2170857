//! Openings in group-committed batches (`service::open_batch`, `Appender::open`), on SQLite
//! always and on PostgreSQL when `TEST_POSTGRES_URL` is set: each job answered as if it had
//! run alone, one after another, and every account opened exactly once under many threads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;

use ledger::service::{self, Open};
use ledger::{Appender, CallerKey, Error, IdempotencyKey, OpenAccount, check};
use ownership::Actor;
use serde_json::{Map, Value, json};
use storage::Database;
use storage::testing::on_each_backend;

const DAY: std::time::Duration = std::time::Duration::from_secs(86_400);

fn open(id: &str, owner: &str) -> Open {
    Open {
        input: OpenAccount::new(id, owner).unwrap(),
        key: None,
        audit: None,
    }
}

fn keyed(id: &str, owner: &str, key: &str) -> Open {
    let body: Map<String, Value> = json!({"account_id": id, "owner": owner})
        .as_object()
        .unwrap()
        .clone();
    Open {
        key: Some(CallerKey::new(
            "ann",
            IdempotencyKey::new(key, "open_account", &body).unwrap(),
            DAY,
        )),
        ..open(id, owner)
    }
}

fn assert_consistent(c: &mut storage::DbConnection) {
    let report = check::check_all(c).unwrap();
    assert!(report.is_consistent(), "{:?}", report.mismatches);
}

#[test]
fn a_batch_answers_each_opening_as_if_they_ran_one_after_another() {
    on_each_backend(|_, c| {
        service::open_account(c, &OpenAccount::new("old", "Old").unwrap(), None).unwrap();
        let out = service::open_batch(
            c,
            &[
                open("a", "Ann"),
                open("b", "Bob"),
                open("a", "Again"), // opened earlier in this batch
                open("old", "Old"), // opened before
            ],
        );
        let (a, b) = (out[0].as_ref().unwrap(), out[1].as_ref().unwrap());
        assert!(!a.replayed && !b.replayed);
        assert_eq!(
            (a.event.sequence, a.event.event_type.as_str()),
            (1, "AccountOpened")
        );
        assert_eq!(a.event.payload.get(), r#"{"owner":"Ann"}"#);
        assert!(matches!(&out[2], Err(Error::AccountExists { id }) if id == "a"));
        assert!(matches!(&out[3], Err(Error::AccountExists { id }) if id == "old"));
        let state = service::get_account(c, "a", Actor::Operator).unwrap().state;
        assert_eq!((state.owner.as_str(), state.last_sequence), ("Ann", 1));
        let (events, total) =
            service::list_events(c, "b", Default::default(), Actor::Operator).unwrap();
        assert_eq!((events.items[0].clone(), total), (b.event.clone(), 1));
        assert_consistent(c);
    });
}

#[test]
fn idempotency_keys_replay_openings_inside_a_batch_and_across_batches() {
    on_each_backend(|_, c| {
        let out = service::open_batch(
            c,
            &[
                keyed("a", "Ann", "k1"),
                keyed("a", "Ann", "k1"), // same key, same request: the same event
                keyed("z", "Zed", "k1"), // same key, another request
                keyed("b", "Bob", "k2"), // another key, another account
            ],
        );
        let first = out[0].as_ref().unwrap();
        assert!(!first.replayed);
        let again = out[1].as_ref().unwrap();
        assert!(again.replayed);
        assert_eq!(again.event, first.event);
        assert!(matches!(out[2], Err(Error::IdempotencyKeyReused)));
        assert!(!out[3].as_ref().unwrap().replayed);

        // A later batch: the stored keys answer as then, and a new key on an existing
        // account is refused like any second opening.
        let later = service::open_batch(
            c,
            &[
                keyed("a", "Ann", "k1"),
                keyed("z", "Zed", "k1"),
                keyed("a", "Ann", "k3"),
                keyed("b", "Bob", "k2"),
            ],
        );
        let replayed = later[0].as_ref().unwrap();
        assert!(replayed.replayed);
        assert_eq!(replayed.event, first.event);
        assert!(matches!(later[1], Err(Error::IdempotencyKeyReused)));
        assert!(matches!(&later[2], Err(Error::AccountExists { id }) if id == "a"));
        assert_eq!(
            later[3].as_ref().unwrap().event,
            out[3].as_ref().unwrap().event
        );
        assert!(later[3].as_ref().unwrap().replayed);
        assert!(service::get_account(c, "z", Actor::Operator).is_err());
        assert_consistent(c);
    });
}

/// 8 threads open the same 40 ids (and a key each of their own) through one [`Appender`]:
/// every id is opened exactly once, every other attempt is refused as existing, and the
/// ledger stays consistent.
#[test]
fn concurrent_openings_open_each_account_once() {
    on_each_backend(|db, c| {
        let store = storage::Store::open(Database::parse(&db.url).unwrap(), 8).unwrap();
        let appender = Arc::new(Appender::new(store));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let appender = Arc::clone(&appender);
                std::thread::spawn(move || {
                    (0..40)
                        .map(|n| {
                            let id = format!("acc-{}", (n + t * 5) % 40);
                            (
                                id.clone(),
                                appender.open_blocking(open(&id, &format!("t{t}"))),
                            )
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut opened: HashMap<String, usize> = HashMap::new();
        for (id, outcome) in threads.into_iter().flat_map(|t| t.join().unwrap()) {
            match outcome {
                Ok(r) => {
                    assert_eq!((r.event.aggregate_id.as_str(), r.event.sequence), (&*id, 1));
                    *opened.entry(id).or_default() += 1;
                }
                Err(Error::AccountExists { id: refused }) => assert_eq!(refused, id),
                Err(e) => panic!("unexpected {e:?}"),
            }
        }
        assert_eq!(opened.len(), 40);
        assert!(opened.values().all(|n| *n == 1), "{opened:?}");
        let page = pagination::Page {
            limit: 100,
            offset: 0,
        };
        let (accounts, total) = service::list_accounts(c, page, Actor::Operator).unwrap();
        assert_eq!((accounts.len(), total), (40, 40));
        assert_consistent(c);
    });
}
