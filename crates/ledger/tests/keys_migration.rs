//! Migration 12 on a database written by the previous release, whose ledger kept its own
//! `account_idempotency_keys` (global, never pruned): every key moves into the shared
//! `idempotency_keys` and keeps answering as before, for any caller, until it expires.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use ledger::service::{self, Append};
use ledger::{AppendEvent, CallerKey, Change, Error, IdempotencyKey, OpenAccount};
use ownership::Actor;
use serde_json::{Map, Value, json};
use storage::Backend;
use storage::diesel::RunQueryDsl;
use storage::diesel::connection::SimpleConnection;
use storage::testing::TestDatabase;

const UP: [&str; 2] = [
    include_str!("../../../migrations/sqlite/2026-11-28-000012_ledger_keys_shared/up.sql"),
    include_str!("../../../migrations/postgres/2026-11-28-000012_ledger_keys_shared/up.sql"),
];
const DOWN: [&str; 2] = [
    include_str!("../../../migrations/sqlite/2026-11-28-000012_ledger_keys_shared/down.sql"),
    include_str!("../../../migrations/postgres/2026-11-28-000012_ledger_keys_shared/down.sql"),
];
const DAY: Duration = Duration::from_secs(86_400);

fn object(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn deposit_body(amount: i64) -> Map<String, Value> {
    object(json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": amount}}))
}

fn key(raw: &str, scope: &str, body: &Map<String, Value>) -> IdempotencyKey {
    IdempotencyKey::new(raw, scope, body).unwrap()
}

fn deposit(caller: &str, raw: &str, amount: i64) -> Append {
    let body = deposit_body(amount);
    Append {
        account_id: "acc".into(),
        command: AppendEvent::from_json(&body).unwrap(),
        key: Some(CallerKey::new(
            caller,
            key(raw, "append_event:acc", &body),
            DAY,
        )),
        actor: Actor::Unidentified,
        audit: None,
    }
}

fn count(c: &mut storage::DbConnection, table: &str) -> i64 {
    #[derive(storage::diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = storage::diesel::sql_types::BigInt)]
        n: i64,
    }
    storage::diesel::sql_query(format!("SELECT COUNT(*) AS n FROM {table}"))
        .get_result::<N>(c)
        .unwrap()
        .n
}

#[test]
fn the_ledger_keys_of_the_previous_release_keep_answering() {
    let admin = std::env::var("TEST_POSTGRES_URL").ok();
    for (i, backend) in [Backend::Sqlite, Backend::Postgres].into_iter().enumerate() {
        let Some(db) = TestDatabase::create(backend, admin.as_deref()).unwrap() else {
            continue;
        };
        let mut c = db.migrated_connection().unwrap();
        c.batch_execute(DOWN[i]).unwrap();
        // As the previous release wrote them: an opening, a deposit, and a day-old deposit.
        let open_body = object(json!({"account_id": "acc", "owner": "Ann"}));
        service::open_account(&mut c, &OpenAccount::new("acc", "Ann").unwrap(), None).unwrap();
        for amount in [5, 7] {
            service::append(
                &mut c,
                "acc",
                &AppendEvent::new(
                    Change::Deposited {
                        amount_cents: amount,
                    },
                    None,
                ),
                None,
            )
            .unwrap();
        }
        let now = storage::timestamp::now_sql();
        for (raw, fingerprint, sequence, at) in [
            (
                "open-1",
                key("open-1", "open_account", &open_body),
                1,
                now.as_str(),
            ),
            (
                "dep-5",
                key("dep-5", "append_event:acc", &deposit_body(5)),
                2,
                &now,
            ),
            (
                "dep-7",
                key("dep-7", "append_event:acc", &deposit_body(7)),
                3,
                "2020-01-01 00:00:00",
            ),
        ] {
            c.batch_execute(&format!(
                "INSERT INTO account_idempotency_keys \
                 (idempotency_key, fingerprint, aggregate_id, sequence, created_at) \
                 VALUES ('{raw}', '{}', 'acc', {sequence}, '{at}')",
                fingerprint.fingerprint()
            ))
            .unwrap();
        }
        c.batch_execute(UP[i]).unwrap();
        assert_eq!(count(&mut c, "idempotency_keys"), 3, "{backend:?}");

        // Any caller's retry is answered as before: the same event, nothing written.
        let out = service::append_batch(&mut c, &[deposit("user:9", "dep-5", 5)]);
        let replay = out[0].as_ref().unwrap();
        assert!(replay.replayed, "{backend:?}");
        assert_eq!(replay.event.sequence, 2);
        let open = CallerKey::new("operator", key("open-1", "open_account", &open_body), DAY);
        let reopened = service::open_account(
            &mut c,
            &OpenAccount::new("acc", "Ann").unwrap(),
            Some(&open),
        )
        .unwrap();
        assert!(reopened.replayed);
        assert_eq!(reopened.event.sequence, 1);
        // Another request with the key is refused; the expired key makes a new event.
        let out = service::append_batch(&mut c, &[deposit("anonymous", "dep-5", 6)]);
        assert!(
            matches!(out[0], Err(Error::IdempotencyKeyReused)),
            "{backend:?}"
        );
        let out = service::append_batch(&mut c, &[deposit("anonymous", "dep-7", 7)]);
        let fresh = out[0].as_ref().unwrap();
        assert!(
            !fresh.replayed,
            "{backend:?}: an expired key counts as unused"
        );
        assert_eq!(fresh.event.sequence, 4);
        let state = service::get_account(&mut c, "acc", Actor::Operator)
            .unwrap()
            .state;
        assert_eq!((state.balance_cents, state.last_sequence), (19, 4));

        // Down and up again keep the ledger's records.
        c.batch_execute(DOWN[i]).unwrap();
        assert_eq!(count(&mut c, "account_idempotency_keys"), 3, "{backend:?}");
        assert_eq!(count(&mut c, "idempotency_keys"), 0);
        c.batch_execute(UP[i]).unwrap();
        assert_eq!(count(&mut c, "idempotency_keys"), 3);
        let out = service::append_batch(&mut c, &[deposit("user:9", "dep-5", 5)]);
        assert!(out[0].as_ref().unwrap().replayed, "{backend:?}");
    }
}
