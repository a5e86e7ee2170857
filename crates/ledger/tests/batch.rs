//! Group commit on a fresh migrated database: SQLite always, PostgreSQL when
//! `TEST_POSTGRES_URL` is set. A batch must answer every command exactly as if the commands had
//! run one after another, and the combiner must stay gapless under many threads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use ledger::service::{self, Append};
use ledger::{AppendEvent, Appender, CallerKey, Change, Error, IdempotencyKey, OpenAccount, check};
use ownership::Actor;
use serde_json::{Map, Value, json};
use storage::Database;
use storage::testing::on_each_backend;

fn open(c: &mut storage::DbConnection, id: &str) {
    service::open_account(c, &OpenAccount::new(id, "ann").unwrap(), None).unwrap();
}

fn job(account: &str, change: Change, expected: Option<i64>) -> Append {
    Append {
        account_id: account.into(),
        command: AppendEvent::new(change, expected),
        key: None,
        actor: Actor::Unidentified,
        audit: None,
    }
}

const DAY: std::time::Duration = std::time::Duration::from_secs(86_400);

fn keyed(account: &str, amount: i64, key: &str) -> Append {
    keyed_by("ann", account, amount, key)
}

fn keyed_by(caller: &str, account: &str, amount: i64, key: &str) -> Append {
    let body: Map<String, Value> =
        json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": amount}})
            .as_object()
            .unwrap()
            .clone();
    Append {
        account_id: account.into(),
        command: AppendEvent::from_json(&body).unwrap(),
        key: Some(CallerKey::new(
            caller,
            IdempotencyKey::new(key, &format!("append_event:{account}"), &body).unwrap(),
            DAY,
        )),
        actor: Actor::Unidentified,
        audit: None,
    }
}

fn deposit(amount_cents: i64) -> Change {
    Change::Deposited { amount_cents }
}

fn withdraw(amount_cents: i64) -> Change {
    Change::Withdrawn { amount_cents }
}

fn assert_consistent(c: &mut storage::DbConnection) {
    let report = check::check_all(c).unwrap();
    assert!(report.is_consistent(), "{:?}", report.mismatches);
}

#[test]
fn a_batch_answers_each_command_as_if_they_ran_one_after_another() {
    on_each_backend(|_, c| {
        open(c, "a");
        open(c, "b");
        let batch = vec![
            job("a", deposit(100), None),
            job("a", withdraw(80), None),
            job("a", withdraw(50), None),  // only 20 left
            job("nope", deposit(1), None), // no such account
            job("b", deposit(7), Some(1)), // b is at 1
            job("b", deposit(7), Some(1)), // b is at 2 now
            job("a", withdraw(20), Some(3)),
            job("bad id!", deposit(1), None),
        ];
        let out = service::append_batch(c, &batch);
        assert_eq!(out.len(), batch.len());
        let seq = |i: usize| out[i].as_ref().unwrap().event.sequence;
        assert_eq!((seq(0), seq(1)), (2, 3));
        assert!(matches!(
            out[2],
            Err(Error::InsufficientFunds {
                balance_cents: 20,
                amount_cents: 50
            })
        ));
        assert!(matches!(out[3], Err(Error::AccountNotFound { .. })));
        assert_eq!(seq(4), 2);
        assert!(matches!(
            out[5],
            Err(Error::SequenceMismatch {
                expected: 1,
                actual: 2
            })
        ));
        assert_eq!(seq(6), 4);
        assert_eq!(out[6].as_ref().unwrap().event.event_type, "MoneyWithdrawn");
        assert!(matches!(out[7], Err(Error::AccountNotFound { .. })));
        let a = service::get_account(c, "a", Actor::Operator).unwrap().state;
        assert_eq!((a.balance_cents, a.last_sequence), (0, 4));
        let b = service::get_account(c, "b", Actor::Operator).unwrap().state;
        assert_eq!((b.balance_cents, b.last_sequence), (7, 2));
        assert_consistent(c);
    });
}

#[test]
fn idempotency_keys_replay_inside_a_batch_and_across_batches() {
    on_each_backend(|_, c| {
        open(c, "a");
        let out = service::append_batch(
            c,
            &[
                keyed("a", 5, "k1"),
                keyed("a", 5, "k1"), // same key, same request: the same event
                keyed("a", 6, "k1"), // same key, another request
                keyed("a", 5, "k2"),
            ],
        );
        let first = out[0].as_ref().unwrap();
        assert!(!first.replayed);
        let again = out[1].as_ref().unwrap();
        assert!(again.replayed);
        assert_eq!(again.event, first.event);
        assert!(matches!(out[2], Err(Error::IdempotencyKeyReused)));
        assert_eq!(out[3].as_ref().unwrap().event.sequence, 3);

        let later = service::append_batch(c, &[keyed("a", 5, "k2"), keyed("a", 5, "k1")]);
        assert!(later.iter().all(|r| r.as_ref().unwrap().replayed));
        assert_eq!(later[1].as_ref().unwrap().event, first.event);
        let a = service::get_account(c, "a", Actor::Operator).unwrap().state;
        assert_eq!((a.balance_cents, a.last_sequence), (10, 3));

        // Keys belong to their caller: bob's k1 is a key of his own, inside a batch too.
        let bob = service::append_batch(
            c,
            &[keyed_by("bob", "a", 6, "k1"), keyed_by("bob", "a", 6, "k1")],
        );
        let bobs = bob[0].as_ref().unwrap();
        assert!(!bobs.replayed);
        assert_eq!(bobs.event.sequence, 4);
        assert_eq!(bob[1].as_ref().unwrap().event, bobs.event);

        // Past its TTL the ledger still knows the very same request (a clock step must not
        // move money twice)...
        let mut stale = keyed("a", 5, "k1");
        if let Some(key) = &mut stale.key {
            key.not_before = "9999-01-01T00:00:00Z".into();
        }
        let known = service::append_batch(c, std::slice::from_ref(&stale));
        assert!(known[0].as_ref().unwrap().replayed);
        // ...and past the wider bound too, the record counts as unused: a new event.
        if let Some(key) = &mut stale.key {
            key.same_request_since = "9999-01-01T00:00:00Z".into();
        }
        let fresh = service::append_batch(c, &[stale]);
        assert!(!fresh[0].as_ref().unwrap().replayed);
        assert_eq!(fresh[0].as_ref().unwrap().event.sequence, 5);
        let a = service::get_account(c, "a", Actor::Operator).unwrap().state;
        assert_eq!((a.balance_cents, a.last_sequence), (21, 5));
        assert_consistent(c);
    });
}

#[test]
fn a_batch_of_refusals_writes_nothing() {
    on_each_backend(|_, c| {
        open(c, "a");
        let out = service::append_batch(
            c,
            &[job("a", withdraw(1), None), job("a", deposit(1), Some(9))],
        );
        assert!(matches!(out[0], Err(Error::InsufficientFunds { .. })));
        assert!(matches!(out[1], Err(Error::SequenceMismatch { .. })));
        let (events, total) =
            service::list_events(c, "a", Default::default(), Actor::Operator).unwrap();
        assert_eq!((events.items.len(), total), (1, 1));
        assert_eq!(
            service::get_account(c, "a", Actor::Operator)
                .unwrap()
                .state
                .last_sequence,
            1
        );
    });
}

/// 16 threads × 50 appends to one account through one [`Appender`]: every append answered,
/// sequences without gap or duplicate, and withdrawals racing the deposits never take the
/// balance below zero.
#[test]
fn the_combiner_stays_gapless_under_many_threads() {
    on_each_backend(|db, c| {
        open(c, "hot");
        let store = storage::Store::open(Database::parse(&db.url).unwrap(), 8).unwrap();
        let appender = Arc::new(Appender::new(store));
        let threads: Vec<_> = (0..16)
            .map(|t| {
                let appender = Arc::clone(&appender);
                std::thread::spawn(move || {
                    (0..50)
                        .map(|_| {
                            let change = if t % 2 == 0 { deposit(3) } else { withdraw(5) };
                            appender.append_blocking(job("hot", change, None))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let outcomes: Vec<_> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        let mut sequences: Vec<i64> = outcomes
            .iter()
            .filter_map(|r| match r {
                Ok(r) => Some(r.event.sequence),
                Err(Error::InsufficientFunds { .. }) => None,
                Err(e) => panic!("unexpected {e:?}"),
            })
            .collect();
        sequences.sort_unstable();
        let n = sequences.len() as i64;
        assert_eq!(sequences, (2..=n + 1).collect::<Vec<_>>());
        let state = service::get_account(c, "hot", Actor::Operator)
            .unwrap()
            .state;
        assert_eq!(state.last_sequence, n + 1);
        let deposits = outcomes
            .iter()
            .filter(|r| matches!(r, Ok(r) if r.event.event_type == "MoneyDeposited"))
            .count() as i64;
        assert_eq!(deposits, 400);
        assert_eq!(state.balance_cents, 3 * deposits - 5 * (n - deposits));
        assert!(state.balance_cents >= 0);
        assert_consistent(c);
    });
}
