//! Area E: event-sourced accounts (spec 2.9, 2.10, 3, 4.5, 6; DECISIONS E).

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::api_tests;
use crate::helpers::{TestApp, field_errors, json, problem};

api_tests!(
    open_returns_201_with_the_opened_event,
    open_validates_every_field,
    open_with_an_existing_id_is_409_and_writes_nothing,
    get_account_returns_the_projection,
    unknown_and_malformed_account_ids_are_404,
    list_accounts_orders_by_id_and_pages,
    appends_move_the_balance_and_the_sequence,
    append_rejects_invalid_events_with_422,
    append_to_an_unknown_account_is_404,
    withdrawal_above_the_balance_is_insufficient_funds,
    closed_account_refuses_every_append,
    expected_sequence_guards_against_stale_writes,
    idempotency_key_replays_the_first_answer,
    idempotency_key_with_another_body_is_422,
    idempotent_retry_after_the_state_moved_on,
    invalid_idempotency_keys_are_422,
    event_list_orders_pages_and_counts,
    event_list_of_an_unknown_account_is_empty,
    event_list_rejects_bad_parameters,
    concurrent_opens_of_one_id_create_it_once,
    concurrent_retries_with_one_key_write_once,
    concurrent_appends_are_gapless,
    racing_withdrawals_never_overdraw,
    ledger_check_reports_a_tampered_projection,
);

impl TestApp {
    pub async fn open_account(&self, id: &str, owner: &str) -> Value {
        let res = self
            .post_json("/accounts", &json!({"account_id": id, "owner": owner}))
            .await;
        json(res, StatusCode::CREATED).await
    }

    pub async fn append(&self, id: &str, body: &Value) -> reqwest::Response {
        self.post_json(&format!("/accounts/{id}/events"), body)
            .await
    }

    pub async fn deposit(&self, id: &str, amount: i64) -> Value {
        let res = self
            .append(
                id,
                &json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": amount}}),
            )
            .await;
        json(res, StatusCode::CREATED).await
    }

    pub async fn account(&self, id: &str) -> Value {
        json(self.get(&format!("/accounts/{id}")).await, StatusCode::OK).await
    }

    pub async fn events(&self, id: &str) -> Value {
        json(
            self.get(&format!("/accounts/{id}/events")).await,
            StatusCode::OK,
        )
        .await
    }

    /// Every event of an account, following `after_sequence` page by page.
    pub async fn all_events(&self, id: &str) -> Vec<Value> {
        let mut out = Vec::new();
        let mut after = 0;
        loop {
            let page = json(
                self.get(&format!("/accounts/{id}/events?after_sequence={after}"))
                    .await,
                StatusCode::OK,
            )
            .await;
            let items = page["items"].as_array().unwrap().clone();
            let Some(last) = items.last() else { break };
            after = last["sequence"].as_i64().unwrap();
            out.extend(items);
        }
        out
    }

    /// Replays the events with the ledger crate's checker, straight on the database.
    pub async fn ledger_check(&self) -> ledger::check::Report {
        let url = self.db.url.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = storage::Database::parse(&url).unwrap().establish().unwrap();
            ledger::check::check_all(&mut conn).unwrap()
        })
        .await
        .unwrap()
    }
}

fn assert_timestamp(s: &Value) {
    let s = s.as_str().unwrap();
    assert_eq!(s.len(), 19, "{s}");
    let b = s.as_bytes();
    for (i, c) in b.iter().enumerate() {
        match i {
            4 | 7 => assert_eq!(*c, b'-'),
            10 => assert_eq!(*c, b' '),
            13 | 16 => assert_eq!(*c, b':'),
            _ => assert!(c.is_ascii_digit(), "{s}"),
        }
    }
}

async fn open_returns_201_with_the_opened_event(app: TestApp) {
    let res = app
        .post_json("/accounts", &json!({"account_id": "acc-1", "owner": "Ann"}))
        .await;
    assert_eq!(res.headers()["location"], "/accounts/acc-1");
    let ev = json(res, StatusCode::CREATED).await;
    assert_eq!(ev["event_type"], "AccountOpened");
    assert_eq!(ev["aggregate_id"], "acc-1");
    assert_eq!(ev["aggregate_type"], "account");
    assert_eq!(ev["sequence"], 1);
    assert_eq!(ev["payload"], json!({"owner": "Ann"}));
    assert!(ev["id"].as_i64().unwrap() > 0);
    assert_timestamp(&ev["occurred_at"]);
    let acc = app.account("acc-1").await;
    assert_eq!(
        acc,
        json!({"account_id": "acc-1", "owner": "Ann", "balance_cents": 0, "is_open": true, "last_sequence": 1})
    );
    let events = app.events("acc-1").await;
    assert_eq!(events["total"], 1);
    assert_eq!(events["items"][0], ev);
}

async fn open_validates_every_field(app: TestApp) {
    let cases = [
        (
            json!({}),
            vec![("account_id", "required"), ("owner", "required")],
        ),
        (
            json!({"account_id": "", "owner": "  "}),
            vec![("account_id", "required"), ("owner", "required")],
        ),
        (
            json!({"account_id": "a b", "owner": "o"}),
            vec![("account_id", "invalid")],
        ),
        (
            json!({"account_id": "é", "owner": "o"}),
            vec![("account_id", "invalid")],
        ),
        (
            json!({"account_id": "x".repeat(65), "owner": "o"}),
            vec![("account_id", "too_long")],
        ),
        (
            json!({"account_id": 5, "owner": "x".repeat(201)}),
            vec![("account_id", "invalid_type"), ("owner", "too_long")],
        ),
        (
            json!({"account_id": "ok", "owner": "a\u{0}b"}),
            vec![("owner", "invalid")],
        ),
    ];
    for (body, expected) in cases {
        let res = app.post_json("/accounts", &body).await;
        let p = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
        let expected: Vec<(String, String)> = expected
            .into_iter()
            .map(|(f, c)| (f.to_owned(), c.to_owned()))
            .collect();
        assert_eq!(field_errors(&p), expected, "{body}");
    }
    for body in ["[]", "\"x\"", "{", "null"] {
        let res = app
            .send_raw(Method::POST, "/accounts", "application/json", body)
            .await;
        let p = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
        assert_eq!(field_errors(&p)[0].0, "body");
    }
    // Boundaries that are valid.
    let id = "A-z_0.9".to_owned() + &"x".repeat(57);
    assert_eq!(id.len(), 64);
    app.open_account(&id, &"é".repeat(200)).await;
    app.open_account("emoji", " 🎉 ").await;
    assert_eq!(app.account("emoji").await["owner"], " 🎉 ");
    let list = json(app.get("/accounts").await, StatusCode::OK).await;
    assert_eq!(list["total"], 2);
}

async fn open_with_an_existing_id_is_409_and_writes_nothing(app: TestApp) {
    app.open_account("dup", "First").await;
    app.deposit("dup", 100).await;
    let res = app
        .post_json(
            "/accounts",
            &json!({"account_id": "dup", "owner": "Second"}),
        )
        .await;
    let p = problem(res, StatusCode::CONFLICT, "conflict").await;
    assert!(p["detail"].as_str().unwrap().contains("dup"));
    let acc = app.account("dup").await;
    assert_eq!(acc["owner"], "First");
    assert_eq!(acc["balance_cents"], 100);
    assert_eq!(acc["last_sequence"], 2);
    assert_eq!(app.events("dup").await["total"], 2);
}

async fn get_account_returns_the_projection(app: TestApp) {
    app.open_account("p", "Pat").await;
    app.deposit("p", 250).await;
    let acc = app.account("p").await;
    assert_eq!(
        acc,
        json!({"account_id": "p", "owner": "Pat", "balance_cents": 250, "is_open": true, "last_sequence": 2})
    );
}

async fn unknown_and_malformed_account_ids_are_404(app: TestApp) {
    let p = problem(
        app.get("/accounts/nobody").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    assert_eq!(p["detail"], "Account nobody does not exist.");
    let long = "x".repeat(65);
    for path in [
        "/accounts/a%20b",
        "/accounts/%00",
        "/accounts/%C3%A9",
        &format!("/accounts/{long}"),
        "/accounts/a%2Fb",
    ] {
        let res = app.get(path).await;
        problem(res, StatusCode::NOT_FOUND, "not-found").await;
    }
}

async fn list_accounts_orders_by_id_and_pages(app: TestApp) {
    for id in ["c", "a", "B", "b-2", "A"] {
        app.open_account(id, "o").await;
    }
    let list = json(app.get("/accounts").await, StatusCode::OK).await;
    let ids: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["account_id"].as_str().unwrap())
        .collect();
    // Bytewise order on both backends: upper case before lower case.
    assert_eq!(ids, ["A", "B", "a", "b-2", "c"]);
    assert_eq!(list["total"], 5);
    assert_eq!(list["limit"], 20);
    assert_eq!(list["offset"], 0);
    assert_eq!(
        list["items"][0],
        json!({"account_id": "A", "owner": "o", "balance_cents": 0, "is_open": true, "last_sequence": 1})
    );
    let page = json(app.get("/accounts?limit=2&offset=2").await, StatusCode::OK).await;
    let ids: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["account_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a", "b-2"]);
    assert_eq!(
        (page["limit"].clone(), page["offset"].clone()),
        (json!(2), json!(2))
    );
    assert_eq!(page["total"], 5);
    let past = json(app.get("/accounts?offset=50").await, StatusCode::OK).await;
    assert_eq!(past["items"], json!([]));
    for (q, field, code) in [
        ("limit=0", "limit", "out_of_range"),
        ("limit=101", "limit", "out_of_range"),
        ("limit=x", "limit", "invalid"),
        ("offset=-1", "offset", "out_of_range"),
        ("offset=1.5", "offset", "invalid"),
    ] {
        let res = app.get(&format!("/accounts?{q}")).await;
        let p = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
        assert_eq!(field_errors(&p), vec![(field.to_owned(), code.to_owned())]);
    }
}

async fn appends_move_the_balance_and_the_sequence(app: TestApp) {
    app.open_account("m", "Max").await;
    let d = app.deposit("m", 1_000).await;
    assert_eq!(d["event_type"], "MoneyDeposited");
    assert_eq!(d["sequence"], 2);
    assert_eq!(d["aggregate_id"], "m");
    assert_eq!(d["aggregate_type"], "account");
    assert_eq!(d["payload"], json!({"amount_cents": 1000}));
    assert_timestamp(&d["occurred_at"]);
    let res = app
        .append(
            "m",
            &json!({"event_type": "MoneyWithdrawn", "payload": {"amount_cents": 400, "memo": "rent"}}),
        )
        .await;
    let w = json(res, StatusCode::CREATED).await;
    assert_eq!(w["sequence"], 3);
    assert_eq!(w["payload"], json!({"amount_cents": 400, "memo": "rent"}));
    let acc = app.account("m").await;
    assert_eq!(acc["balance_cents"], 600);
    assert_eq!(acc["last_sequence"], 3);
    // Withdrawing the exact balance is allowed.
    let res = app
        .append(
            "m",
            &json!({"event_type": "MoneyWithdrawn", "payload": {"amount_cents": 600}}),
        )
        .await;
    json(res, StatusCode::CREATED).await;
    let res = app
        .append(
            "m",
            &json!({"event_type": "AccountClosed", "payload": {"reason": {"any": ["object"]}}}),
        )
        .await;
    let c = json(res, StatusCode::CREATED).await;
    assert_eq!(c["sequence"], 5);
    assert_eq!(c["payload"], json!({"reason": {"any": ["object"]}}));
    let acc = app.account("m").await;
    assert_eq!(
        acc,
        json!({"account_id": "m", "owner": "Max", "balance_cents": 0, "is_open": false, "last_sequence": 5})
    );
    // Accounts count independently from 1.
    app.open_account("other", "O").await;
    assert_eq!(app.deposit("other", 1).await["sequence"], 2);
    assert!(app.ledger_check().await.is_consistent());
}

async fn append_rejects_invalid_events_with_422(app: TestApp) {
    app.open_account("v", "V").await;
    app.deposit("v", 10).await;
    let cases = [
        (json!({}), vec![("event_type", "required")]),
        (
            json!({"event_type": "MoneyStolen", "payload": {}}),
            vec![("event_type", "invalid")],
        ),
        (
            json!({"event_type": "moneydeposited", "payload": {"amount_cents": 1}}),
            vec![("event_type", "invalid")],
        ),
        (
            json!({"event_type": "AccountOpened", "payload": {"owner": "x"}}),
            vec![("event_type", "invalid")],
        ),
        (
            json!({"event_type": 3, "payload": {}}),
            vec![("event_type", "invalid_type")],
        ),
        (
            json!({"event_type": "MoneyDeposited"}),
            vec![("payload.amount_cents", "required")],
        ),
        (
            json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 0}}),
            vec![("payload.amount_cents", "out_of_range")],
        ),
        (
            json!({"event_type": "MoneyWithdrawn", "payload": {"amount_cents": -5}}),
            vec![("payload.amount_cents", "out_of_range")],
        ),
        (
            json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 1_000_000_000_001i64}}),
            vec![("payload.amount_cents", "out_of_range")],
        ),
        (
            json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 1.5}}),
            vec![("payload.amount_cents", "invalid_type")],
        ),
        (
            json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": "5"}}),
            vec![("payload.amount_cents", "invalid_type")],
        ),
        (
            json!({"event_type": "MoneyDeposited", "payload": [1]}),
            vec![("payload", "invalid_type")],
        ),
        (
            json!({"event_type": "AccountClosed", "payload": "bye"}),
            vec![("payload", "invalid_type")],
        ),
        (
            json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 1}, "expected_sequence": -1}),
            vec![("expected_sequence", "out_of_range")],
        ),
        (
            json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 1}, "expected_sequence": "2"}),
            vec![("expected_sequence", "invalid_type")],
        ),
        (
            json!({"event_type": "Nope", "payload": 1, "expected_sequence": 1.5}),
            vec![
                ("event_type", "invalid"),
                ("payload", "invalid_type"),
                ("expected_sequence", "invalid_type"),
            ],
        ),
    ];
    for (body, expected) in cases {
        let res = app.append("v", &body).await;
        let p = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
        let expected: Vec<(String, String)> = expected
            .into_iter()
            .map(|(f, c)| (f.to_owned(), c.to_owned()))
            .collect();
        assert_eq!(field_errors(&p), expected, "{body}");
    }
    let res = app
        .send_raw(
            Method::POST,
            "/accounts/v/events",
            "application/json",
            "[1]",
        )
        .await;
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    let res = app
        .send_raw(Method::POST, "/accounts/v/events", "text/plain", "{}")
        .await;
    problem(
        res,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported-media-type",
    )
    .await;
    // The maximum amount is accepted; nothing else was written.
    let res = app
        .append(
            "v",
            &json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 1_000_000_000_000i64}}),
        )
        .await;
    assert_eq!(json(res, StatusCode::CREATED).await["sequence"], 3);
    assert_eq!(app.events("v").await["total"], 3);
    assert_eq!(
        app.account("v").await["balance_cents"],
        1_000_000_000_010i64
    );
}

async fn append_to_an_unknown_account_is_404(app: TestApp) {
    let body = json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 1}});
    let p = problem(
        app.append("ghost", &body).await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    assert_eq!(p["detail"], "Account ghost does not exist.");
    let res = app
        .request(Method::POST, "/accounts/a%20b/events")
        .json(&body)
        .send()
        .await
        .unwrap();
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
    // Nothing was created on the way.
    let list = json(app.get("/accounts").await, StatusCode::OK).await;
    assert_eq!(list["total"], 0);
    assert_eq!(
        app.events("ghost").await,
        json!({"total": 0, "items": [], "has_more": false, "next_cursor": null})
    );
}

async fn withdrawal_above_the_balance_is_insufficient_funds(app: TestApp) {
    app.open_account("poor", "P").await;
    app.deposit("poor", 100).await;
    let res = app
        .append(
            "poor",
            &json!({"event_type": "MoneyWithdrawn", "payload": {"amount_cents": 101}}),
        )
        .await;
    let p = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "insufficient-funds").await;
    assert_eq!(p["title"], "Insufficient funds.");
    assert_eq!(p["balance_cents"], 100);
    assert_eq!(p["amount_cents"], 101);
    let acc = app.account("poor").await;
    assert_eq!(acc["balance_cents"], 100);
    assert_eq!(acc["last_sequence"], 2);
    assert_eq!(app.events("poor").await["total"], 2);
    // The next event still gets the next sequence: the failed attempt left no gap.
    assert_eq!(app.deposit("poor", 1).await["sequence"], 3);
    app.open_account("empty", "E").await;
    let res = app
        .append(
            "empty",
            &json!({"event_type": "MoneyWithdrawn", "payload": {"amount_cents": 1}}),
        )
        .await;
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "insufficient-funds").await;
}

async fn closed_account_refuses_every_append(app: TestApp) {
    app.open_account("shut", "S").await;
    app.deposit("shut", 50).await;
    let res = app
        .append("shut", &json!({"event_type": "AccountClosed"}))
        .await;
    let closed = json(res, StatusCode::CREATED).await;
    assert_eq!(closed["payload"], json!({}));
    for body in [
        json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 1}}),
        json!({"event_type": "MoneyWithdrawn", "payload": {"amount_cents": 1}}),
        json!({"event_type": "AccountClosed", "payload": {}}),
        json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 1}, "expected_sequence": 3}),
    ] {
        let res = app.append("shut", &body).await;
        let p = problem(res, StatusCode::CONFLICT, "account-closed").await;
        assert_eq!(p["title"], "Account closed.");
    }
    // Invalid input is still 422 first; unknown types too.
    let res = app
        .append("shut", &json!({"event_type": "Bogus", "payload": {}}))
        .await;
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    let acc = app.account("shut").await;
    assert_eq!(acc["is_open"], false);
    assert_eq!(acc["balance_cents"], 50);
    assert_eq!(acc["last_sequence"], 3);
    assert_eq!(app.events("shut").await["total"], 3);
}

async fn expected_sequence_guards_against_stale_writes(app: TestApp) {
    app.open_account("occ", "O").await;
    let body = |seq: i64| json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 5}, "expected_sequence": seq});
    let ok = json(app.append("occ", &body(1)).await, StatusCode::CREATED).await;
    assert_eq!(ok["sequence"], 2);
    for stale in [1, 0, 3, 99] {
        let p = problem(
            app.append("occ", &body(stale)).await,
            StatusCode::CONFLICT,
            "conflict",
        )
        .await;
        assert_eq!(p["last_sequence"], 2);
    }
    let acc = app.account("occ").await;
    assert_eq!(
        (acc["balance_cents"].clone(), acc["last_sequence"].clone()),
        (json!(5), json!(2))
    );
    assert_eq!(app.events("occ").await["total"], 2);
    let ok = json(app.append("occ", &body(2)).await, StatusCode::CREATED).await;
    assert_eq!(ok["sequence"], 3);
    // null means "not given".
    let res = app
        .append(
            "occ",
            &json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 5}, "expected_sequence": null}),
        )
        .await;
    json(res, StatusCode::CREATED).await;
}

async fn post_with_key(app: &TestApp, path: &str, key: &str, body: &Value) -> reqwest::Response {
    app.request(Method::POST, path)
        .header("Idempotency-Key", key)
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn idempotency_key_replays_the_first_answer(app: TestApp) {
    let open = json!({"account_id": "idem", "owner": "I"});
    let first = post_with_key(&app, "/accounts", "open-1", &open).await;
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first = json(first, StatusCode::CREATED).await;
    let again = post_with_key(&app, "/accounts", "open-1", &open).await;
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(json(again, StatusCode::CREATED).await, first);
    // Members in another order are the same body.
    let reordered = json!({"owner": "I", "account_id": "idem"});
    let again = post_with_key(&app, "/accounts", "open-1", &reordered).await;
    assert_eq!(json(again, StatusCode::CREATED).await, first);

    let dep = json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 70}});
    let d1 = json(
        post_with_key(&app, "/accounts/idem/events", "dep-1", &dep).await,
        StatusCode::CREATED,
    )
    .await;
    for _ in 0..3 {
        let d = json(
            post_with_key(&app, "/accounts/idem/events", "dep-1", &dep).await,
            StatusCode::CREATED,
        )
        .await;
        assert_eq!(d, d1);
    }
    // Without a key, the same body is a new event.
    let d2 = app.deposit("idem", 70).await;
    assert_eq!(d2["sequence"], 3);
    let acc = app.account("idem").await;
    assert_eq!(acc["balance_cents"], 140);
    assert_eq!(acc["last_sequence"], 3);
    assert_eq!(app.events("idem").await["total"], 3);
    let list = json(app.get("/accounts").await, StatusCode::OK).await;
    assert_eq!(list["total"], 1);
}

async fn idempotency_key_with_another_body_is_422(app: TestApp) {
    let open = json!({"account_id": "k1", "owner": "K"});
    json(
        post_with_key(&app, "/accounts", "same", &open).await,
        StatusCode::CREATED,
    )
    .await;
    let other = json!({"account_id": "k2", "owner": "K"});
    let res = post_with_key(&app, "/accounts", "same", &other).await;
    let p = problem(
        res,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency-key-reused",
    )
    .await;
    assert!(p["detail"].as_str().unwrap().contains("Idempotency-Key"));
    problem(
        app.get("/accounts/k2").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    // The same key on another route is another request too.
    let dep = json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 1}});
    let res = post_with_key(&app, "/accounts/k1/events", "same", &dep).await;
    problem(
        res,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency-key-reused",
    )
    .await;
    let d = json(
        post_with_key(&app, "/accounts/k1/events", "dep", &dep).await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(d["sequence"], 2);
    let bigger = json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 2}});
    let res = post_with_key(&app, "/accounts/k1/events", "dep", &bigger).await;
    problem(
        res,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency-key-reused",
    )
    .await;
    assert_eq!(app.account("k1").await["balance_cents"], 1);
    assert_eq!(app.events("k1").await["total"], 2);
}

async fn idempotent_retry_after_the_state_moved_on(app: TestApp) {
    app.open_account("r", "R").await;
    app.deposit("r", 10).await;
    let w = json!({"event_type": "MoneyWithdrawn", "payload": {"amount_cents": 10}, "expected_sequence": 2});
    let first = json(
        post_with_key(&app, "/accounts/r/events", "w-1", &w).await,
        StatusCode::CREATED,
    )
    .await;
    // Without the key this retry would be 409 (stale sequence) or 422 (no funds left): the key
    // makes it the same answer as the first time.
    let again = json(
        post_with_key(&app, "/accounts/r/events", "w-1", &w).await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(again, first);
    // A failed request is not recorded: after a 422, the same key may succeed later.
    let w2 = json!({"event_type": "MoneyWithdrawn", "payload": {"amount_cents": 5}});
    let res = post_with_key(&app, "/accounts/r/events", "w-2", &w2).await;
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "insufficient-funds").await;
    app.deposit("r", 5).await;
    let ok = json(
        post_with_key(&app, "/accounts/r/events", "w-2", &w2).await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(ok["sequence"], 5);
    assert_eq!(app.account("r").await["balance_cents"], 0);
}

async fn invalid_idempotency_keys_are_422(app: TestApp) {
    let open = json!({"account_id": "bad-key", "owner": "B"});
    let long = "k".repeat(256);
    for key in ["", "has space", long.as_str(), "tab\tkey"] {
        let res = post_with_key(&app, "/accounts", key, &open).await;
        let p = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
        assert_eq!(
            field_errors(&p),
            vec![("Idempotency-Key".to_owned(), "invalid".to_owned())]
        );
    }
    let res = app
        .request(Method::POST, "/accounts")
        .header(
            "Idempotency-Key",
            reqwest::header::HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap(),
        )
        .json(&open)
        .send()
        .await
        .unwrap();
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    assert_eq!(
        json(app.get("/accounts").await, StatusCode::OK).await["total"],
        0
    );
    let ok = post_with_key(&app, "/accounts", &"k".repeat(255), &open).await;
    json(ok, StatusCode::CREATED).await;
}

async fn event_list_orders_pages_and_counts(app: TestApp) {
    app.open_account("e", "E").await;
    for i in 1..=9 {
        app.deposit("e", i).await;
    }
    let all = app.events("e").await;
    assert_eq!(all["total"], 10);
    let seqs: Vec<i64> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=10).collect::<Vec<_>>());
    for e in all["items"].as_array().unwrap() {
        assert_eq!(e["aggregate_id"], "e");
        assert_eq!(e["aggregate_type"], "account");
        assert!(e["payload"].is_object());
        assert_eq!(e.as_object().unwrap().len(), 7);
    }
    let page = json(
        app.get("/accounts/e/events?after_sequence=3&limit=4").await,
        StatusCode::OK,
    )
    .await;
    let seqs: Vec<i64> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [4, 5, 6, 7]);
    assert_eq!(page["total"], 10, "total counts all the account's events");
    assert_eq!(page["items"][0]["payload"], json!({"amount_cents": 3}));
    let end = json(
        app.get("/accounts/e/events?after_sequence=10").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        end,
        json!({"total": 10, "items": [], "has_more": false, "next_cursor": null})
    );
    let one = json(app.get("/accounts/e/events?limit=1").await, StatusCode::OK).await;
    assert_eq!(one["items"].as_array().unwrap().len(), 1);
    assert_eq!(one["items"][0]["event_type"], "AccountOpened");
    let max = json(
        app.get("/accounts/e/events?limit=1000").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(max["items"].as_array().unwrap().len(), 10);
    // Other accounts' events never mix in.
    app.open_account("f", "F").await;
    assert_eq!(app.events("e").await["total"], 10);
    assert_eq!(app.events("f").await["total"], 1);
}

async fn event_list_of_an_unknown_account_is_empty(app: TestApp) {
    for path in [
        "/accounts/nobody/events",
        "/accounts/nobody/events?after_sequence=5&limit=3",
        "/accounts/a%20b/events",
        "/accounts/%00/events",
    ] {
        let body = json(app.get(path).await, StatusCode::OK).await;
        assert_eq!(
            body,
            json!({"total": 0, "items": [], "has_more": false, "next_cursor": null}),
            "{path}"
        );
    }
}

async fn event_list_rejects_bad_parameters(app: TestApp) {
    app.open_account("q", "Q").await;
    for (q, expected) in [
        ("limit=0", vec![("limit", "out_of_range")]),
        ("limit=1001", vec![("limit", "out_of_range")]),
        ("limit=ten", vec![("limit", "invalid")]),
        (
            "after_sequence=-1",
            vec![("after_sequence", "out_of_range")],
        ),
        ("after_sequence=1.5", vec![("after_sequence", "invalid")]),
        (
            "after_sequence=x&limit=-3",
            vec![("after_sequence", "invalid"), ("limit", "out_of_range")],
        ),
    ] {
        let res = app.get(&format!("/accounts/q/events?{q}")).await;
        let p = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
        let expected: Vec<(String, String)> = expected
            .into_iter()
            .map(|(f, c)| (f.to_owned(), c.to_owned()))
            .collect();
        assert_eq!(field_errors(&p), expected, "{q}");
    }
}

async fn concurrent_opens_of_one_id_create_it_once(app: TestApp) {
    let app = Arc::new(app);
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let app = app.clone();
            tokio::spawn(async move {
                let res = app
                    .post_json(
                        "/accounts",
                        &json!({"account_id": "race", "owner": format!("owner {i}")}),
                    )
                    .await;
                res.status()
            })
        })
        .collect();
    let mut created = 0;
    for t in tasks {
        match t.await.unwrap() {
            StatusCode::CREATED => created += 1,
            StatusCode::CONFLICT => {}
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(created, 1);
    assert_eq!(app.events("race").await["total"], 1);
    assert!(app.ledger_check().await.is_consistent());
}

async fn concurrent_retries_with_one_key_write_once(app: TestApp) {
    app.open_account("retry", "R").await;
    let app = Arc::new(app);
    let body = json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 42}});
    let tasks: Vec<_> = (0..12)
        .map(|_| {
            let (app, body) = (app.clone(), body.clone());
            tokio::spawn(async move {
                let res = post_with_key(&app, "/accounts/retry/events", "once", &body).await;
                json(res, StatusCode::CREATED).await
            })
        })
        .collect();
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    assert!(answers.iter().all(|a| *a == answers[0]));
    assert_eq!(answers[0]["sequence"], 2);
    let acc = app.account("retry").await;
    assert_eq!(acc["balance_cents"], 42);
    assert_eq!(acc["last_sequence"], 2);
    // Concurrent opens with one key: one account, one answer.
    let open = json!({"account_id": "retry-open", "owner": "R"});
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (app, open) = (app.clone(), open.clone());
            tokio::spawn(async move {
                let res = post_with_key(&app, "/accounts", "open-once", &open).await;
                json(res, StatusCode::CREATED).await
            })
        })
        .collect();
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    assert!(answers.iter().all(|a| *a == answers[0]));
    assert_eq!(app.events("retry-open").await["total"], 1);
}

/// Writers × appends per writer. 32 × 200 = 6,400 appends (+1 opening event).
const WRITERS: i64 = 32;

/// 200 per writer in the test suite; `just stress` sets `LEDGER_STRESS_APPENDS=2000`.
fn appends_per_writer() -> i64 {
    std::env::var("LEDGER_STRESS_APPENDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200)
}

/// The concurrency proof: many writers append to one account through HTTP at once. Every
/// request is answered 201, the sequences are exactly 1..=n with no gap and no duplicate, and
/// the projection equals the replay.
async fn concurrent_appends_are_gapless(app: TestApp) {
    app.open_account("hot", "H").await;
    let app = Arc::new(app);
    let per_writer = appends_per_writer();
    let started = std::time::Instant::now();
    let tasks: Vec<_> = (0..WRITERS)
        .map(|w| {
            let app = app.clone();
            tokio::spawn(async move {
                let mut sum = 0;
                for i in 0..per_writer {
                    let amount = (w * per_writer + i) % 997 + 1;
                    let res = app
                        .append(
                            "hot",
                            &json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": amount}}),
                        )
                        .await;
                    let status = res.status();
                    let text = res.text().await.unwrap();
                    assert_eq!(status, StatusCode::CREATED, "{text}");
                    sum += amount;
                }
                sum
            })
        })
        .collect();
    let mut expected_balance = 0;
    for t in tasks {
        expected_balance += t.await.unwrap();
    }
    let elapsed = started.elapsed();
    let n = WRITERS * per_writer + 1;
    eprintln!(
        "{:?}: {} appends in {:.1?} ({:.0}/s)",
        app.backend,
        n - 1,
        elapsed,
        (n - 1) as f64 / elapsed.as_secs_f64()
    );
    let events = app.all_events("hot").await;
    let seqs: Vec<i64> = events
        .iter()
        .map(|e| e["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=n).collect::<Vec<_>>(), "gapless, no duplicates");
    let replayed: i64 = events
        .iter()
        .skip(1)
        .map(|e| e["payload"]["amount_cents"].as_i64().unwrap())
        .sum();
    assert_eq!(replayed, expected_balance);
    let acc = app.account("hot").await;
    assert_eq!(acc["balance_cents"], expected_balance);
    assert_eq!(acc["last_sequence"], n);
    assert_eq!(app.events("hot").await["total"], n);
    let report = app.ledger_check().await;
    assert!(report.is_consistent(), "{:?}", report.mismatches);
    assert_eq!(report.events, n as u64);
}

/// Deposits and withdrawals racing near a zero balance: every answer is 201 or 422
/// insufficient-funds, the balance never goes negative, and it equals the replay.
async fn racing_withdrawals_never_overdraw(app: TestApp) {
    app.open_account("edge", "E").await;
    app.deposit("edge", 50).await;
    let app = Arc::new(app);
    let tasks: Vec<_> = (0..16i64)
        .map(|w| {
            let app = app.clone();
            tokio::spawn(async move {
                let mut refused = 0;
                for i in 0..25i64 {
                    let withdraw = (w + i) % 3 != 0;
                    let (ty, amount) = if withdraw {
                        ("MoneyWithdrawn", 20 + (w * 7 + i) % 30)
                    } else {
                        ("MoneyDeposited", 30)
                    };
                    let res = app
                        .append(
                            "edge",
                            &json!({"event_type": ty, "payload": {"amount_cents": amount}}),
                        )
                        .await;
                    match res.status() {
                        StatusCode::CREATED => {}
                        StatusCode::UNPROCESSABLE_ENTITY => {
                            let p = res.json::<Value>().await.unwrap();
                            assert!(
                                p["type"].as_str().unwrap().ends_with("/insufficient-funds"),
                                "{p}"
                            );
                            assert!(withdraw);
                            refused += 1;
                        }
                        other => panic!("unexpected {other}: {}", res.text().await.unwrap()),
                    }
                }
                refused
            })
        })
        .collect();
    let mut refused = 0;
    for t in tasks {
        refused += t.await.unwrap();
    }
    assert!(refused > 0, "the race should refuse some withdrawals");
    let events = app.all_events("edge").await;
    let mut balance: i64 = 0;
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["sequence"].as_i64().unwrap(), i as i64 + 1);
        let amount = e["payload"]["amount_cents"].as_i64().unwrap_or(0);
        match e["event_type"].as_str().unwrap() {
            "MoneyDeposited" => balance += amount,
            "MoneyWithdrawn" => balance -= amount,
            _ => {}
        }
        assert!(balance >= 0, "negative balance after event {}", i + 1);
    }
    let acc = app.account("edge").await;
    assert_eq!(acc["balance_cents"], balance);
    assert_eq!(acc["last_sequence"], events.len() as i64);
    assert_eq!(events.len() as i64, 2 + 16 * 25 - refused);
    assert!(app.ledger_check().await.is_consistent());
}

/// `ledger-check`'s replay notices a projection that no longer matches its events.
async fn ledger_check_reports_a_tampered_projection(app: TestApp) {
    app.open_account("t1", "T").await;
    app.deposit("t1", 10).await;
    app.open_account("t2", "T").await;
    let report = app.ledger_check().await;
    assert!(report.is_consistent());
    assert_eq!((report.accounts, report.events), (2, 3));
    let url = app.db.url.clone();
    tokio::task::spawn_blocking(move || {
        use storage::diesel::RunQueryDsl;
        let mut conn = storage::Database::parse(&url).unwrap().establish().unwrap();
        storage::diesel::sql_query(
            "UPDATE accounts SET balance_cents = 999 WHERE account_id = 't1'",
        )
        .execute(&mut conn)
        .unwrap();
    })
    .await
    .unwrap();
    let report = app.ledger_check().await;
    assert_eq!(report.mismatches.len(), 1);
    assert_eq!(report.mismatches[0].account_id, "t1");
    assert!(report.mismatches[0].reason.contains("balance_cents 999"));
}
