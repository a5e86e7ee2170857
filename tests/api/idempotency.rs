//! `Idempotency-Key` on every create (crates/idempotency): a retry with the same key and body
//! gets the first answer and writes nothing; another body is 422; keys belong to the caller;
//! concurrent retries write once; expired keys are pruned.

use std::time::Duration;

use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{Backend, TestApp, json, problem, test_settings, with_conn};
use crate::{api_tests, backend_tests};

api_tests!(
    every_create_answers_a_retry_with_its_first_answer,
    the_same_key_with_another_request_is_422_and_writes_nothing,
    keys_belong_to_the_caller,
    concurrent_requests_with_one_key_write_once,
    a_malformed_key_is_422,
    a_retry_across_the_upgrade_that_respelled_scopes_still_replays,
);

backend_tests!(
    a_step_of_the_wall_clock_expires_no_key,
    the_ledger_knows_a_request_for_longer_than_the_ttl,
    expired_keys_are_forgotten_and_pruned,
    three_instances_on_one_database_write_once,
);

const REPLAYED: &str = "idempotent-replayed";

async fn post_keyed(app: &TestApp, path: &str, key: &str, body: &Value) -> Response {
    app.request(Method::POST, path)
        .header("Idempotency-Key", key)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// The `total` of a list (V2's is in `meta`).
async fn count(app: &TestApp, list: &str) -> i64 {
    let page = json(app.get(list).await, StatusCode::OK).await;
    page["total"]
        .as_i64()
        .or_else(|| page["meta"]["total"].as_i64())
        .unwrap()
}

async fn every_create_answers_a_retry_with_its_first_answer(app: TestApp) {
    let note = app.create_note("parent", "of comments").await;
    let comments = format!("/notes/{}/comments", note["id"]);
    let routes: [(&str, &str, Value); 10] = [
        ("/notes", "/notes", json!({"title": "t", "body": "b"})),
        (
            "/examples/notes",
            "/notes",
            json!({"title": "e", "body": "b"}),
        ),
        ("/tags", "/tags", json!({"name": "retried"})),
        (&comments, &comments, json!({"body": "a comment"})),
        // V1 and V2 share one store; V1's list has no total.
        (
            "/v1/notes",
            "/v2/notes",
            json!({"title": "v1", "content": "c"}),
        ),
        (
            "/v2/notes",
            "/v2/notes",
            json!({"title": "v2", "body": "b", "tags": ["x"]}),
        ),
        (
            "/articles",
            "/articles/offset",
            json!({"title": "a", "author": "Ann", "category": "c"}),
        ),
        ("/users", "/users", json!({"name": "retried user"})),
        (
            "/accounts",
            "/accounts",
            json!({"account_id": "retried", "owner": "Ann"}),
        ),
        (
            "/accounts/retried/events",
            "/accounts/retried/events",
            json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 5}}),
        ),
    ];
    for (i, (path, list, body)) in routes.iter().enumerate() {
        let key = format!("create-{i}");
        let first = post_keyed(&app, path, &key, body).await;
        assert_eq!(first.status(), StatusCode::CREATED, "{path}");
        assert!(first.headers().get(REPLAYED).is_none(), "{path}");
        let first = first.bytes().await.unwrap();
        let before = if *list == "/users" {
            None
        } else {
            Some(count(&app, list).await)
        };

        // Member order does not make it another request.
        let reordered: serde_json::Map<String, Value> = body
            .as_object()
            .unwrap()
            .iter()
            .rev()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for retry in [body.clone(), Value::Object(reordered)] {
            let again = post_keyed(&app, path, &key, &retry).await;
            assert_eq!(again.status(), StatusCode::CREATED, "{path}");
            assert_eq!(again.headers()[REPLAYED], "true", "{path}");
            assert_eq!(
                again.bytes().await.unwrap(),
                first,
                "{path}: the first answer, as sent"
            );
        }
        if let Some(before) = before {
            assert_eq!(
                count(&app, list).await,
                before,
                "{path}: nothing written by a retry"
            );
        }
    }
    // Without a key every POST writes.
    let before = count(&app, "/notes").await;
    for _ in 0..2 {
        json(
            app.post_json("/notes", &json!({"title": "t", "body": "b"}))
                .await,
            StatusCode::CREATED,
        )
        .await;
    }
    assert_eq!(count(&app, "/notes").await, before + 2);
}

async fn the_same_key_with_another_request_is_422_and_writes_nothing(app: TestApp) {
    let body = json!({"title": "first", "body": "b"});
    json(
        post_keyed(&app, "/notes", "k1", &body).await,
        StatusCode::CREATED,
    )
    .await;
    let before = count(&app, "/notes").await;
    let other = json!({"title": "second", "body": "b"});
    let p = problem(
        post_keyed(&app, "/notes", "k1", &other).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency-key-reused",
    )
    .await;
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("nothing was written")
    );
    // The same body on another route is another request too.
    problem(
        post_keyed(
            &app,
            "/v2/notes",
            "k1",
            &json!({"title": "first", "body": "b", "tags": []}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency-key-reused",
    )
    .await;
    assert_eq!(count(&app, "/notes").await, before);
    assert_eq!(count(&app, "/v2/notes").await, 0);
    // Area D answers its refusals as {"error": message}, this one too.
    json(
        post_keyed(&app, "/users", "k2", &json!({"name": "a"})).await,
        StatusCode::CREATED,
    )
    .await;
    let res = post_keyed(&app, "/users", "k2", &json!({"name": "b"})).await;
    let body = json(res, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(
        body["error"].as_str().unwrap().contains("Idempotency-Key"),
        "{body}"
    );
}

async fn keys_belong_to_the_caller(app: TestApp) {
    let body = json!({"title": "mine", "body": "b"});
    let mut ids = Vec::new();
    for user in ["1", "2"] {
        let res = app
            .request(Method::POST, "/notes")
            .header("Idempotency-Key", "shared")
            .header("X-User-Id", user)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(res.headers().get(REPLAYED).is_none());
        ids.push(json(res, StatusCode::CREATED).await["id"].clone());
    }
    assert_ne!(ids[0], ids[1], "another caller's key is another key");
    // Each caller's retry replays their own answer.
    let res = app
        .request(Method::POST, "/notes")
        .header("Idempotency-Key", "shared")
        .header("X-User-Id", "2")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()[REPLAYED], "true");
    assert_eq!(json(res, StatusCode::CREATED).await["id"], ids[1]);

    // The ledger's keys too.
    json(
        app.post_json("/accounts", &json!({"account_id": "shared", "owner": "S"}))
            .await,
        StatusCode::CREATED,
    )
    .await;
    let deposit = json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 3}});
    for (user, sequence, replayed) in [("1", 2, false), ("2", 3, false), ("1", 2, true)] {
        let res = app
            .request(Method::POST, "/accounts/shared/events")
            .header("Idempotency-Key", "ledger")
            .header("X-User-Id", user)
            .json(&deposit)
            .send()
            .await
            .unwrap();
        assert_eq!(res.headers().get(REPLAYED).is_some(), replayed, "{user}");
        assert_eq!(
            json(res, StatusCode::CREATED).await["sequence"],
            sequence,
            "{user}"
        );
    }
}

async fn concurrent_requests_with_one_key_write_once(app: TestApp) {
    let before = count(&app, "/notes").await;
    let body = json!({"title": "at once", "body": "b"});
    let answers = futures_util::future::join_all(
        (0..8).map(|_| post_keyed(&app, "/notes", "concurrent", &body)),
    )
    .await;
    let mut created = Vec::new();
    for res in answers {
        match res.status() {
            StatusCode::CREATED => created.push(json(res, StatusCode::CREATED).await),
            StatusCode::CONFLICT => {
                problem(res, StatusCode::CONFLICT, "request-in-progress").await;
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert!(!created.is_empty());
    assert!(
        created.iter().all(|c| c == &created[0]),
        "every 201 is the one first answer"
    );
    assert_eq!(count(&app, "/notes").await, before + 1, "written once");
}

async fn a_malformed_key_is_422(app: TestApp) {
    for key in ["has space", &"k".repeat(256)] {
        let p = problem(
            post_keyed(&app, "/tags", key, &json!({"name": "n"})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation-failed",
        )
        .await;
        assert_eq!(p["errors"][0]["field"], "Idempotency-Key");
    }
    assert_eq!(count(&app, "/tags").await, 0);
}

async fn expired_keys_are_forgotten_and_pruned(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, |s| {
        s.idempotency_ttl = Duration::from_secs(1);
    })
    .await
    else {
        return;
    };
    let body = json!({"title": "old", "body": "b"});
    let first = json(
        post_keyed(&app, "/notes", "old", &body).await,
        StatusCode::CREATED,
    )
    .await;
    // Timestamps have whole seconds: 2.1 s later the key is certainly past 1 s old.
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let res = post_keyed(&app, "/notes", "old", &body).await;
    assert!(
        res.headers().get(REPLAYED).is_none(),
        "an expired key is unused"
    );
    assert_ne!(json(res, StatusCode::CREATED).await["id"], first["id"]);
    // The pruner (every TTL here) deletes what expired, in the background.
    let kept = || {
        with_conn(&app.db, |c| {
            use idempotency::schema::idempotency_keys::dsl::*;
            use storage::diesel::prelude::*;
            idempotency_keys.count().get_result::<i64>(c).unwrap()
        })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while kept().await > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(kept().await, 0, "expired keys are pruned");
}

/// A deposit to a new account `id` under key `d-1` and a note under key `n-1`, and their
/// first answers.
struct Keyed {
    deposit: Value,
    path: String,
    first: Value,
    note: Value,
    made: Value,
}

async fn keyed_deposit_and_note(app: &TestApp, id: &str) -> Keyed {
    app.open_account(id, "Ann").await;
    let deposit = json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 100}});
    let path = format!("/accounts/{id}/events");
    let first = post_keyed(app, &path, "d-1", &deposit).await;
    let first = json(first, StatusCode::CREATED).await;
    let note = json!({"title": "t", "body": "b"});
    let made = json(
        post_keyed(app, "/notes", "n-1", &note).await,
        StatusCode::CREATED,
    )
    .await;
    Keyed {
        deposit,
        path,
        first,
        note,
        made,
    }
}

impl Keyed {
    /// The deposit sent again with its key: the first answer, nothing written.
    async fn deposit_replays(&self, app: &TestApp) {
        let again = post_keyed(app, &self.path, "d-1", &self.deposit).await;
        assert_eq!(again.headers()[REPLAYED], "true");
        assert_eq!(json(again, StatusCode::CREATED).await, self.first);
    }
}

/// The wall clock jumps a day and an hour forward (an NTP step, a resumed VM) between a
/// request and its retry: by the wall clock alone every key would have expired, and the
/// retried deposit would apply twice.
async fn a_step_of_the_wall_clock_expires_no_key(backend: Backend) {
    let clock = idempotency::Clock::steppable();
    let for_app = clock.clone();
    let Some(app) = TestApp::spawn_with(backend, move |s| s.key_clock = for_app).await else {
        return;
    };
    let keyed = keyed_deposit_and_note(&app, "stepped").await;

    assert!(clock.step_wall(25 * 3600));
    keyed.deposit_replays(&app).await;
    let again = post_keyed(&app, "/notes", "n-1", &keyed.note).await;
    assert_eq!(again.headers()[REPLAYED], "true");
    assert_eq!(
        json(again, StatusCode::CREATED).await["id"],
        keyed.made["id"]
    );
    assert_eq!(app.account("stepped").await["balance_cents"], 100);
}

/// Records made before a step that happened while no server ran look old to the next one:
/// made a day and a half ago by the wall clock (TTL a day). A note's key is free again; the
/// ledger still knows the very same deposit for 7 TTLs and replays it, and lets the key go
/// after that.
async fn the_ledger_knows_a_request_for_longer_than_the_ttl(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let keyed = keyed_deposit_and_note(&app, "late").await;
    let (path, note) = (keyed.path.as_str(), &keyed.note);
    let age_keys = |hours: i64| {
        with_conn(&app.db, move |c| {
            use idempotency::schema::idempotency_keys::dsl::*;
            use storage::diesel::prelude::*;
            let then = chrono::Utc::now() - chrono::Duration::hours(hours);
            let then = then.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            storage::diesel::update(idempotency_keys)
                .set(created_at.eq(then))
                .execute(c)
                .unwrap()
        })
    };
    age_keys(36).await;

    keyed.deposit_replays(&app).await;
    let other = json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 7}});
    let res = post_keyed(&app, path, "d-1", &other).await;
    assert!(
        res.headers().get(REPLAYED).is_none(),
        "another request: the key is free"
    );
    json(res, StatusCode::CREATED).await;
    let res = post_keyed(&app, "/notes", "n-1", note).await;
    assert!(
        res.headers().get(REPLAYED).is_none(),
        "a note's key expires with the TTL"
    );
    assert_ne!(json(res, StatusCode::CREATED).await["id"], keyed.made["id"]);
    assert_eq!(app.account("late").await["balance_cents"], 107);

    post_keyed(&app, path, "d-2", &keyed.deposit).await;
    age_keys(7 * 24 + 1).await;
    let res = post_keyed(&app, path, "d-2", &keyed.deposit).await;
    assert!(
        res.headers().get(REPLAYED).is_none(),
        "past 7 TTLs the key is free"
    );
    json(res, StatusCode::CREATED).await;
    assert_eq!(app.account("late").await["balance_cents"], 307);
}

/// Every create documents the `Idempotency-Key` parameter and the `Idempotent-Replayed`
/// header of its 201; token issuance (whose raw token is never stored) does neither.
#[tokio::test]
async fn the_document_shows_the_key_and_the_replay_header_on_every_create() {
    let doc = serde_json::to_value(server::openapi::generate().await).unwrap();
    let creates = [
        "/notes",
        "/examples/notes",
        "/tags",
        "/examples/tags",
        "/notes/{note_id}/comments",
        "/v1/notes",
        "/v2/notes",
        "/articles",
        "/users",
        "/accounts",
        "/accounts/{id}/events",
    ];
    for path in creates {
        let op = &doc["paths"][path]["post"];
        let params = op["parameters"]
            .as_array()
            .unwrap_or_else(|| panic!("{path}"));
        assert!(
            params
                .iter()
                .any(|p| p["name"] == "Idempotency-Key" && p["in"] == "header"),
            "{path}"
        );
        assert!(
            op["responses"]["201"]["headers"]["Idempotent-Replayed"].is_object(),
            "{path}"
        );
    }
    let issue = &doc["paths"]["/users/{userId}/tokens"]["post"];
    let params = issue["parameters"].as_array().unwrap();
    assert!(params.iter().all(|p| p["name"] != "Idempotency-Key"));
}

/// Three servers on one database: the same keyed request sent to all of them at once, three
/// times over, creates one note, and every 201 is its answer.
async fn three_instances_on_one_database_write_once(backend: Backend) {
    let app = TestApp::spawn(backend).await.unwrap();
    let mut bases = vec![app.address.clone()];
    let mut handles = Vec::new();
    for _ in 0..2 {
        let other = server::Application::build(test_settings(&app.db))
            .await
            .unwrap();
        bases.push(format!("http://127.0.0.1:{}", other.port()));
        handles.push(other.handle());
        tokio::spawn(other.run_until_stopped());
    }
    let body = json!({"title": "everywhere", "body": "b"});
    let sends = bases.iter().cycle().take(9).map(|base| {
        app.client
            .post(format!("{base}/notes"))
            .header("Idempotency-Key", "three-instances")
            .json(&body)
            .send()
    });
    let mut created = Vec::new();
    for res in futures_util::future::join_all(sends).await {
        let res = res.unwrap();
        if res.status() == StatusCode::CONFLICT {
            problem(res, StatusCode::CONFLICT, "request-in-progress").await;
        } else {
            created.push(json(res, StatusCode::CREATED).await);
        }
    }
    assert!(!created.is_empty());
    assert!(created.iter().all(|c| c == &created[0]));
    assert_eq!(count(&app, "/notes").await, 1);
    for handle in handles {
        handle.stop(false).await;
    }
}

/// Scopes were respelled as operation ids (`create_note`, `create_comment:5`); a key an
/// earlier release recorded under the old spelling (`/notes`, `POST /v2/notes`) within the TTL
/// must still replay its first answer, not be refused as reused.
async fn a_retry_across_the_upgrade_that_respelled_scopes_still_replays(app: TestApp) {
    let body = json!({"title": "before the upgrade", "body": "b"});
    let object = body.as_object().unwrap().clone();
    let first = r#"{"id":4242,"title":"before the upgrade","body":"b"}"#;
    for (path, former, key) in [
        ("/notes", "/notes", "up-notes"),
        ("/v2/notes", "POST /v2/notes", "up-v2"),
    ] {
        let recorded = idempotency::Key::new(key, former, &object).unwrap();
        let answer = idempotency::Answer {
            status: 201,
            location: Some(format!("{path}/4242")),
            body: first.to_owned(),
        };
        with_conn(&app.db, move |c| {
            let now = storage::timestamp::now_rfc3339();
            idempotency::repo::record(c, "anonymous", &recorded, &answer, &now).unwrap();
        })
        .await;
        let before = count(&app, path).await;
        let res = post_keyed(&app, path, key, &body).await;
        assert_eq!(res.status(), StatusCode::CREATED, "{path}");
        assert_eq!(res.headers()[REPLAYED], "true", "{path}");
        assert_eq!(res.text().await.unwrap(), first, "{path}");
        assert_eq!(count(&app, path).await, before, "{path}: nothing written");
    }
}
