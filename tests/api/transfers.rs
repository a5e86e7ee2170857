//! Transfers (`POST /transfers`): a withdrawal and a deposit in one transaction, refused whole,
//! idempotent under a key, and conserving money under concurrent opposite transfers.

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::api_tests;
use crate::helpers::{TestApp, field_errors, json, problem};

api_tests!(
    a_transfer_moves_money_as_two_events_naming_each_other,
    a_refused_transfer_writes_nothing,
    a_keyed_transfer_happens_once,
    concurrent_opposite_transfers_conserve_money,
);

fn transfer(from: &str, to: &str, amount: i64) -> Value {
    json!({"from": from, "to": to, "amount_cents": amount})
}

/// `(balance, last_sequence)` of each account.
async fn states(app: &TestApp, ids: &[&str]) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    for id in ids {
        let a = app.account(id).await;
        out.push((
            a["balance_cents"].as_i64().unwrap(),
            a["last_sequence"].as_i64().unwrap(),
        ));
    }
    out
}

async fn a_transfer_moves_money_as_two_events_naming_each_other(app: TestApp) {
    app.open_account("ann", "Ann").await;
    app.open_account("bob", "Bob").await;
    app.deposit("ann", 1_000).await;
    let res = app
        .post_json("/transfers", &transfer("ann", "bob", 300))
        .await;
    assert_eq!(
        res.headers().get("location"),
        None,
        "a transfer has no address"
    );
    let t = json(res, StatusCode::CREATED).await;
    let id = t["transfer_id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("tr_") && id.len() == 35, "{id}");
    assert_eq!(
        (t["from"].clone(), t["to"].clone()),
        (json!("ann"), json!("bob"))
    );
    assert_eq!(t["amount_cents"], 300);
    for (leg, account, sequence, kind, counterparty) in [
        ("withdrawn", "ann", 3, "MoneyWithdrawn", "bob"),
        ("deposited", "bob", 2, "MoneyDeposited", "ann"),
    ] {
        let event = &t[leg];
        assert_eq!(event["aggregate_id"], account);
        assert_eq!(event["sequence"], sequence);
        assert_eq!(event["event_type"], kind);
        assert_eq!(
            event["payload"],
            json!({"amount_cents": 300, "transfer_id": id, "counterparty": counterparty})
        );
        // The same event on the account's own stream.
        assert_eq!(app.all_events(account).await.last().unwrap(), event);
    }
    assert_eq!(states(&app, &["ann", "bob"]).await, [(700, 3), (300, 2)]);
    assert!(app.ledger_check().await.is_consistent());
}

async fn a_refused_transfer_writes_nothing(app: TestApp) {
    app.open_account("ann", "Ann").await;
    app.open_account("bob", "Bob").await;
    app.open_account("cat", "Cat").await;
    app.deposit("ann", 500).await;
    app.append("cat", &json!({"event_type": "AccountClosed"}))
        .await;
    let before = states(&app, &["ann", "bob", "cat"]).await;

    let over = app
        .post_json("/transfers", &transfer("ann", "bob", 501))
        .await;
    problem(over, StatusCode::UNPROCESSABLE_ENTITY, "insufficient-funds").await;
    let into_closed = app
        .post_json("/transfers", &transfer("ann", "cat", 1))
        .await;
    problem(into_closed, StatusCode::CONFLICT, "account-closed").await;
    let from_closed = app
        .post_json("/transfers", &transfer("cat", "ann", 1))
        .await;
    problem(from_closed, StatusCode::CONFLICT, "account-closed").await;
    let unknown = app
        .post_json("/transfers", &transfer("ann", "nobody", 1))
        .await;
    problem(unknown, StatusCode::NOT_FOUND, "not-found").await;
    let same = app
        .post_json("/transfers", &transfer("ann", "ann", 1))
        .await;
    let same = problem(same, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    assert_eq!(
        field_errors(&same),
        [("to".to_owned(), "invalid".to_owned())]
    );
    let bad = app
        .post_json("/transfers", &json!({"from": "a b", "amount_cents": 0}))
        .await;
    let bad = problem(bad, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    let fields: Vec<String> = field_errors(&bad).into_iter().map(|(f, _)| f).collect();
    assert_eq!(fields, ["from", "to", "amount_cents"]);

    assert_eq!(states(&app, &["ann", "bob", "cat"]).await, before);
    assert!(app.ledger_check().await.is_consistent());
}

async fn a_keyed_transfer_happens_once(app: TestApp) {
    app.open_account("ann", "Ann").await;
    app.open_account("bob", "Bob").await;
    app.deposit("ann", 1_000).await;
    let send = |body: Value| {
        app.request(reqwest::Method::POST, "/transfers")
            .header("Idempotency-Key", "move-1")
            .json(&body)
            .send()
    };
    let first = send(transfer("ann", "bob", 400)).await.unwrap();
    assert_eq!(first.headers().get("idempotent-replayed"), None);
    let first = json(first, StatusCode::CREATED).await;
    let again = send(transfer("ann", "bob", 400)).await.unwrap();
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(json(again, StatusCode::CREATED).await, first);
    let other = send(transfer("ann", "bob", 401)).await.unwrap();
    assert_eq!(other.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(states(&app, &["ann", "bob"]).await, [(600, 3), (400, 2)]);
}

/// Four accounts, each writer moving money back and forth between two of them in opposite
/// directions at once: every transfer answers 201 or 422 `insufficient-funds`, the total never
/// changes, and the replay agrees with every projection. No deadlock either: each transfer
/// takes its two locks in id order in a transaction of its own (in a batch shared with other
/// transfers on PostgreSQL, two batches met in opposite orders and one of them waited out
/// `deadlock_timeout`, up to a 503), so no write ran again after a conflict.
async fn concurrent_opposite_transfers_conserve_money(app: TestApp) {
    let ids = ["a", "b", "c", "d"];
    for id in ids {
        app.open_account(id, id).await;
        app.deposit(id, 1_000).await;
    }
    let app = Arc::new(app);
    let mut tasks = Vec::new();
    for w in 0..8 {
        let app = Arc::clone(&app);
        tasks.push(tokio::spawn(async move {
            let (from, to) = (ids[w % 4], ids[(w + 1) % 4]);
            let mut answers = Vec::new();
            for n in 0..15 {
                let (from, to) = if (w + n) % 2 == 0 {
                    (from, to)
                } else {
                    (to, from)
                };
                let amount = 1 + ((w * 37 + n * 101) % 400) as i64;
                let res = app
                    .post_json("/transfers", &transfer(from, to, amount))
                    .await;
                answers.push(res.status());
            }
            answers
        }));
    }
    let mut created = 0;
    for task in tasks {
        for status in task.await.unwrap() {
            assert!(
                status == StatusCode::CREATED || status == StatusCode::UNPROCESSABLE_ENTITY,
                "{status}"
            );
            created += usize::from(status == StatusCode::CREATED);
        }
    }
    assert!(created > 60, "{created} of 120 transfers went through");
    let total: i64 = states(&app, &ids).await.iter().map(|(b, _)| b).sum();
    assert_eq!(total, 4_000, "money is conserved");
    assert!(app.ledger_check().await.is_consistent());
    let (_, _, text) = crate::metrics::metrics(&app, None).await;
    let deadlocks = [("writer", "writes"), ("cause", "deadlock")];
    let conflicts = crate::metrics::sample(&text, "db_write_conflicts_total", &deadlocks);
    assert_eq!(conflicts, 0.0, "writes ran again after a deadlock:\n{text}");
}
