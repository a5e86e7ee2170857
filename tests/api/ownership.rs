//! Who may do what with `API_AUTH=tokens` (docs/SECURITY.md, "Ownership"): every stored
//! resource records the user that created it; a user's token changes only what that user
//! owns (403, nothing written), an account and its events are its owner's and the operator's
//! (another user's answers as if it did not exist), operator data needs the operator key, and
//! every successful write is in the audit trail with its user and token.

use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};
use server::Secret;
use server::auth::ApiAuth;
use storage::diesel::connection::SimpleConnection;

use crate::helpers::{Backend, TestApp, TestDb, json, problem, test_settings};
use crate::{api_tests, backend_tests};

backend_tests!(
    users_change_only_what_they_own,
    accounts_are_private_to_their_owner,
    operator_data_needs_the_operator_key,
    every_write_is_in_the_audit_trail,
    rows_of_the_previous_release_belong_to_the_operator,
    event_streams_follow_the_accounts_rules,
);

api_tests!(
    creates_answer_the_location_of_what_they_made,
    writes_are_audited_with_authentication_off,
);

const OPERATOR_KEY: &str = "operator-key-for-the-ownership-tests-01234567";

/// A credential: a user's raw bearer token, the operator key, or nothing.
#[derive(Clone)]
enum Cred {
    Bearer(String),
    Operator,
    None,
}

struct Users {
    ann: i64,
    bob: i64,
    /// ann's write, read and admin tokens (raw, id).
    ann_write: (Cred, i64),
    ann_read: Cred,
    bob_write: Cred,
    bob_admin: Cred,
}

async fn tokens_app(backend: Backend) -> TestApp {
    TestApp::spawn_with(backend, tokens_mode).await.unwrap()
}

fn tokens_mode(s: &mut server::Settings) {
    s.api_auth = ApiAuth::Tokens;
    s.api_keys = vec![Secret::new(OPERATOR_KEY)];
}

async fn send(
    app: &TestApp,
    cred: &Cred,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Response {
    let mut req = app.request(method, path);
    req = match cred {
        Cred::Bearer(token) => req.bearer_auth(token),
        Cred::Operator => req.header("X-API-Key", OPERATOR_KEY),
        Cred::None => req,
    };
    if let Some(body) = body {
        req = req.json(body);
    }
    req.send().await.unwrap()
}

async fn user(app: &TestApp, name: &str) -> i64 {
    let res = send(
        app,
        &Cred::Operator,
        Method::POST,
        "/users",
        Some(&json!({"name": name})),
    )
    .await;
    json(res, StatusCode::CREATED).await["id"].as_i64().unwrap()
}

async fn token(app: &TestApp, user: i64, scope: &str) -> (Cred, i64) {
    let res = send(
        app,
        &Cred::Operator,
        Method::POST,
        &format!("/users/{user}/tokens"),
        Some(&json!({"scope": scope})),
    )
    .await;
    let body = json(res, StatusCode::CREATED).await;
    (
        Cred::Bearer(body["token"].as_str().unwrap().to_owned()),
        body["id"].as_i64().unwrap(),
    )
}

async fn users(app: &TestApp) -> Users {
    let ann = user(app, "ann").await;
    let bob = user(app, "bob").await;
    Users {
        ann,
        bob,
        ann_write: token(app, ann, "write").await,
        ann_read: token(app, ann, "read").await.0,
        bob_write: token(app, bob, "write").await.0,
        bob_admin: token(app, bob, "admin").await.0,
    }
}

async fn created(app: &TestApp, cred: &Cred, path: &str, body: Value) -> Value {
    json(
        send(app, cred, Method::POST, path, Some(&body)).await,
        StatusCode::CREATED,
    )
    .await
}

async fn body_of(app: &TestApp, cred: &Cred, path: &str) -> Value {
    json(
        send(app, cred, Method::GET, path, None).await,
        StatusCode::OK,
    )
    .await
}

async fn users_change_only_what_they_own(backend: Backend) {
    let app = tokens_app(backend).await;
    let u = users(&app).await;
    let ann = &u.ann_write.0;
    let note = created(&app, ann, "/notes", json!({"title": "ann's", "body": "b"})).await;
    let tag = created(&app, ann, "/tags", json!({"name": "ann-tag"})).await;
    let comment = created(
        &app,
        ann,
        &format!("/notes/{}/comments", note["id"]),
        json!({"body": "ann's comment"}),
    )
    .await;
    // Bob may comment on a note he can read; the comment is his, not the note's owner's.
    let bobs = created(
        &app,
        &u.bob_write,
        &format!("/notes/{}/comments", note["id"]),
        json!({"body": "bob's"}),
    )
    .await;
    let operators = created(
        &app,
        &Cred::Operator,
        "/notes",
        json!({"title": "ops", "body": "b"}),
    )
    .await;

    let items: Vec<(String, Value)> = vec![
        (
            format!("/notes/{}", note["id"]),
            json!({"title": "x", "body": "y"}),
        ),
        (
            format!("/examples/notes/{}", note["id"]),
            json!({"title": "x", "body": "y"}),
        ),
        (format!("/tags/{}", tag["id"]), json!({"name": "renamed"})),
        (
            format!("/examples/tags/{}", tag["id"]),
            json!({"name": "renamed"}),
        ),
        (
            format!("/notes/{}/comments/{}", note["id"], comment["id"]),
            json!({"body": "x"}),
        ),
    ];
    for (path, put) in &items {
        let before = body_of(&app, &u.bob_write, path).await;
        let etag = send(&app, &u.bob_write, Method::GET, path, None)
            .await
            .headers()["etag"]
            .to_str()
            .unwrap()
            .to_owned();
        // Another user's write or admin token: 403, with or without a matching If-Match.
        for cred in [&u.bob_write, &u.bob_admin] {
            for method in [Method::PUT, Method::DELETE] {
                let body = (method == Method::PUT).then_some(put);
                let res = send(&app, cred, method.clone(), path, body).await;
                let p = problem(res, StatusCode::FORBIDDEN, "forbidden").await;
                assert!(
                    p["detail"]
                        .as_str()
                        .unwrap()
                        .contains("belongs to another user"),
                    "{method} {path}: {p}"
                );
                let res = app
                    .request(method.clone(), path)
                    .bearer_auth(match cred {
                        Cred::Bearer(t) => t,
                        _ => unreachable!(),
                    })
                    .header("If-Match", &etag)
                    .json(put)
                    .send()
                    .await
                    .unwrap();
                problem(res, StatusCode::FORBIDDEN, "forbidden").await;
            }
        }
        // The owner's read token: too small a scope.
        let res = send(&app, &u.ann_read, Method::PUT, path, Some(put)).await;
        problem(res, StatusCode::FORBIDDEN, "forbidden").await;
        assert_eq!(
            body_of(&app, &u.bob_write, path).await,
            before,
            "{path}: nothing written"
        );
    }
    // The owner and the operator may.
    for (path, put) in &items {
        let res = send(&app, ann, Method::PUT, path, Some(put)).await;
        assert_eq!(res.status(), StatusCode::OK, "{path}");
        let res = send(&app, &Cred::Operator, Method::PUT, path, Some(put)).await;
        assert_eq!(res.status(), StatusCode::OK, "{path}");
    }
    // Bob's comment on ann's note is bob's: ann may not change it, bob may.
    let bobs_path = format!("/notes/{}/comments/{}", note["id"], bobs["id"]);
    let res = send(
        &app,
        ann,
        Method::PUT,
        &bobs_path,
        Some(&json!({"body": "x"})),
    )
    .await;
    problem(res, StatusCode::FORBIDDEN, "forbidden").await;
    let res = send(
        &app,
        &u.bob_write,
        Method::PUT,
        &bobs_path,
        Some(&json!({"body": "edited"})),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    // What the operator made (and rows older than owners) only the operator changes.
    let ops_path = format!("/notes/{}", operators["id"]);
    for cred in [ann, &u.bob_admin] {
        let res = send(&app, cred, Method::DELETE, &ops_path, None).await;
        problem(res, StatusCode::FORBIDDEN, "forbidden").await;
    }
    // A missing resource is still 404 for anyone.
    let res = send(
        &app,
        &u.bob_write,
        Method::PUT,
        "/notes/987654",
        Some(&json!({"title": "t", "body": "b"})),
    )
    .await;
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
    // Reads are shared: every token sees every note, and the list total agrees.
    let list = body_of(&app, &u.bob_write, "/notes").await;
    assert_eq!(list["total"], 2);
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
    // The owner deletes: the note goes with every comment on it (bob's too).
    for path in [
        format!("/notes/{}/comments/{}", note["id"], comment["id"]),
        format!("/tags/{}", tag["id"]),
        format!("/notes/{}", note["id"]),
    ] {
        let res = send(&app, ann, Method::DELETE, &path, None).await;
        assert_eq!(res.status(), StatusCode::NO_CONTENT, "{path}");
    }
    let res = send(&app, &u.bob_write, Method::GET, &bobs_path, None).await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let res = send(&app, &Cred::Operator, Method::DELETE, &ops_path, None).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
}

async fn accounts_are_private_to_their_owner(backend: Backend) {
    let app = tokens_app(backend).await;
    let u = users(&app).await;
    let ann = &u.ann_write.0;
    let opened = created(
        &app,
        ann,
        "/accounts",
        json!({"account_id": "ann-1", "owner": "Ann"}),
    )
    .await;
    assert_eq!(
        opened["payload"],
        json!({"owner": "Ann"}),
        "the event keeps its spec payload"
    );
    created(
        &app,
        &u.bob_write,
        "/accounts",
        json!({"account_id": "bob-1", "owner": "Bob"}),
    )
    .await;
    created(
        &app,
        &Cred::Operator,
        "/accounts",
        json!({"account_id": "ops-1", "owner": "Ops"}),
    )
    .await;
    let deposit = json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 500}});
    let withdraw = json!({"event_type": "MoneyWithdrawn", "payload": {"amount_cents": 100}});
    let close = json!({"event_type": "AccountClosed", "payload": {}});
    created(&app, ann, "/accounts/ann-1/events", deposit.clone()).await;

    // Another user (write or admin) finds nothing there: 404 on reads and appends, an empty
    // event list (as for an unknown account), and nothing written.
    for cred in [&u.bob_write, &u.bob_admin] {
        let res = send(&app, cred, Method::GET, "/accounts/ann-1", None).await;
        problem(res, StatusCode::NOT_FOUND, "not-found").await;
        for body in [&deposit, &withdraw, &close] {
            let res = app
                .request(Method::POST, "/accounts/ann-1/events")
                .bearer_auth(match cred {
                    Cred::Bearer(t) => t,
                    _ => unreachable!(),
                })
                .header("Idempotency-Key", "same-key-as-anyone")
                .json(body)
                .send()
                .await
                .unwrap();
            problem(res, StatusCode::NOT_FOUND, "not-found").await;
        }
        let events = body_of(&app, cred, "/accounts/ann-1/events").await;
        assert_eq!(
            (events["total"].clone(), events["items"].clone()),
            (json!(0), json!([]))
        );
        let list = body_of(&app, cred, "/accounts").await;
        let ids: Vec<&str> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["account_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["bob-1"], "a user lists only its own accounts");
        assert_eq!(list["total"], 1, "and the total agrees");
    }
    // The operator's account is not a user's either.
    let res = send(&app, ann, Method::GET, "/accounts/ops-1", None).await;
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
    // The owner reads with any scope and appends with write; the operator does everything.
    let account = body_of(&app, &u.ann_read, "/accounts/ann-1").await;
    assert_eq!(
        account["balance_cents"], 500,
        "bob's attempts wrote nothing"
    );
    assert_eq!(account["last_sequence"], 2);
    let res = send(
        &app,
        &u.ann_read,
        Method::POST,
        "/accounts/ann-1/events",
        Some(&deposit),
    )
    .await;
    problem(res, StatusCode::FORBIDDEN, "forbidden").await;
    assert_eq!(
        body_of(&app, &u.ann_read, "/accounts/ann-1/events").await["total"],
        2
    );
    created(&app, ann, "/accounts/ann-1/events", withdraw.clone()).await;
    created(
        &app,
        &Cred::Operator,
        "/accounts/ann-1/events",
        deposit.clone(),
    )
    .await;
    let list = body_of(&app, &Cred::Operator, "/accounts").await;
    assert_eq!(list["total"], 3);
    let account = body_of(&app, ann, "/accounts/ann-1").await;
    assert_eq!(account["balance_cents"], 900);
    let list = body_of(&app, ann, "/accounts").await;
    assert_eq!(
        (
            list["total"].clone(),
            list["items"][0]["account_id"].clone()
        ),
        (json!(1), json!("ann-1"))
    );

    // Concurrent appends by the owner and another user: only the owner's land.
    let appends = (0..16).map(|i| {
        let cred = if i % 2 == 0 {
            ann.clone()
        } else {
            u.bob_write.clone()
        };
        let app = &app;
        let deposit = json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 1}});
        async move {
            send(
                app,
                &cred,
                Method::POST,
                "/accounts/ann-1/events",
                Some(&deposit),
            )
            .await
            .status()
        }
    });
    let statuses = futures_util::future::join_all(appends).await;
    for (i, status) in statuses.iter().enumerate() {
        let want = if i % 2 == 0 {
            StatusCode::CREATED
        } else {
            StatusCode::NOT_FOUND
        };
        assert_eq!(*status, want, "append {i}");
    }
    let account = body_of(&app, &Cred::Operator, "/accounts/ann-1").await;
    assert_eq!(account["balance_cents"], 908);
    assert_eq!(account["last_sequence"], 12);
}

async fn operator_data_needs_the_operator_key(backend: Backend) {
    let app = tokens_app(backend).await;
    let u = users(&app).await;
    for path in ["/webhook/events", "/metrics/v1-usage", "/audit"] {
        for cred in [&u.ann_read, &u.ann_write.0, &u.bob_admin] {
            let res = send(&app, cred, Method::GET, path, None).await;
            let p = problem(res, StatusCode::FORBIDDEN, "forbidden").await;
            assert!(
                p["detail"].as_str().unwrap().contains("operator"),
                "{path}: {p}"
            );
        }
        let res = send(&app, &Cred::None, Method::GET, path, None).await;
        problem(res, StatusCode::UNAUTHORIZED, "unauthorized").await;
        let res = send(&app, &Cred::Operator, Method::GET, path, None).await;
        assert_eq!(res.status(), StatusCode::OK, "{path}");
    }
}

async fn audit(app: &TestApp, query: &str) -> Value {
    body_of(app, &Cred::Operator, &format!("/audit{query}")).await
}

/// (method, route, resource) of each row of an audit page.
fn rows(page: &Value) -> Vec<(String, String, String)> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["method"].as_str().unwrap().to_owned(),
                r["route"].as_str().unwrap().to_owned(),
                r["resource"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn row(method: &str, route: &str, resource: &str) -> (String, String, String) {
    (method.to_owned(), route.to_owned(), resource.to_owned())
}

async fn every_write_is_in_the_audit_trail(backend: Backend) {
    let app = tokens_app(backend).await;
    let u = users(&app).await;
    let (ann, ann_token) = (&u.ann_write.0, u.ann_write.1);
    let note = created(&app, ann, "/notes", json!({"title": "t", "body": "b"})).await;
    let note_path = format!("/notes/{}", note["id"]);
    let res = send(
        &app,
        ann,
        Method::PUT,
        &note_path,
        Some(&json!({"title": "t2", "body": "b"})),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    // Refused writes leave no row.
    let res = send(&app, &u.bob_write, Method::DELETE, &note_path, None).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    created(
        &app,
        ann,
        "/accounts",
        json!({"account_id": "a", "owner": "Ann"}),
    )
    .await;
    // A keyed create and its replay: one row.
    for _ in 0..2 {
        let res = app
            .request(Method::POST, "/accounts/a/events")
            .bearer_auth(match ann {
                Cred::Bearer(t) => t,
                _ => unreachable!(),
            })
            .header("Idempotency-Key", "k1")
            .json(&json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 5}}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED);
    }
    let tag = created(&app, &Cred::Operator, "/tags", json!({"name": "ops"})).await;
    let res = send(&app, ann, Method::DELETE, &note_path, None).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);

    let anns = audit(&app, &format!("?user_id={}", u.ann)).await;
    assert_eq!(
        rows(&anns),
        [
            row("DELETE", "/notes/{note_id}", &note_path),
            row("POST", "/accounts/{id}/events", "/accounts/a/events/2"),
            row("POST", "/accounts", "/accounts/a"),
            row("PUT", "/notes/{note_id}", &note_path),
            row("POST", "/notes", &note_path),
        ],
        "newest first, creates naming what they made"
    );
    for r in anns["items"].as_array().unwrap() {
        assert_eq!(r["actor"], "user");
        assert_eq!(r["user_id"], u.ann);
        assert_eq!(r["token_id"], ann_token, "the token's id, never the token");
        assert!(r["at"].as_str().unwrap().ends_with('Z'));
    }
    assert_eq!(
        audit(&app, &format!("?user_id={}", u.bob)).await["items"],
        json!([])
    );
    // The operator's writes (users, tokens, the tag) name no user.
    let all = audit(&app, "?limit=100").await;
    let newest = &all["items"][1];
    assert_eq!(
        (
            &newest["actor"],
            &newest["user_id"],
            &newest["token_id"],
            &newest["resource"]
        ),
        (
            &json!("operator"),
            &Value::Null,
            &Value::Null,
            &json!(format!("/tags/{}", tag["id"]))
        )
    );
    let issued = rows(&all)
        .iter()
        .filter(|(m, r, _)| m == "POST" && r == "/users/{userId}/tokens")
        .count();
    assert_eq!(issued, 4);
    // Paged by cursor, newest first.
    let first = audit(&app, "?limit=2").await;
    assert_eq!(first["has_more"], true);
    let next = first["next_cursor"].as_i64().unwrap();
    let second = audit(&app, &format!("?limit=2&before={next}")).await;
    assert!(second["items"][0]["id"].as_i64().unwrap() < next);
    let res = send(
        &app,
        &Cred::Operator,
        Method::GET,
        "/audit?limit=0&before=x",
        None,
    )
    .await;
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
}

/// Creates answer `Location`, the path of what they made, which a GET finds; a replay carries
/// it too. Articles and users have no path of their own.
async fn creates_answer_the_location_of_what_they_made(app: TestApp) {
    let note = app.create_note("n", "b").await;
    for (path, body) in [
        ("/notes".to_owned(), json!({"title": "t", "body": "b"})),
        (
            "/examples/notes".to_owned(),
            json!({"title": "t", "body": "b"}),
        ),
        ("/tags".to_owned(), json!({"name": "t1"})),
        ("/examples/tags".to_owned(), json!({"name": "t2"})),
        (
            format!("/notes/{}/comments", note["id"]),
            json!({"body": "c"}),
        ),
        ("/v1/notes".to_owned(), json!({"title": "t"})),
        ("/v2/notes".to_owned(), json!({"title": "t"})),
        (
            "/accounts".to_owned(),
            json!({"account_id": "acc", "owner": "o"}),
        ),
    ] {
        let mut locations = Vec::new();
        for _ in 0..2 {
            let res = app
                .request(Method::POST, &path)
                .header("Idempotency-Key", format!("loc-{path}"))
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), StatusCode::CREATED, "{path}");
            let location = res
                .headers()
                .get("location")
                .unwrap_or_else(|| panic!("{path}: no Location"));
            locations.push(location.to_str().unwrap().to_owned());
        }
        assert_eq!(
            locations[0], locations[1],
            "{path}: the replay names the same resource"
        );
        let res = app.get(&locations[0]).await;
        assert_eq!(res.status(), StatusCode::OK, "{path} -> {}", locations[0]);
    }
    for (path, body) in [
        ("/articles", json!({"title": "t", "author": "a"})),
        ("/users", json!({"name": "u"})),
    ] {
        let res = app.post_json(path, &body).await;
        assert_eq!(res.status(), StatusCode::CREATED);
        assert!(res.headers().get("location").is_none(), "{path}");
    }
}

/// With authentication off nothing is restricted, and the trail names nobody.
async fn writes_are_audited_with_authentication_off(app: TestApp) {
    let note = app.create_note("n", "b").await;
    let page = json(app.get("/audit").await, StatusCode::OK).await;
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    let r = &page["items"][0];
    assert_eq!(r["actor"], "anonymous");
    assert_eq!(
        (&r["user_id"], &r["token_id"]),
        (&Value::Null, &Value::Null)
    );
    assert_eq!(r["resource"], format!("/notes/{}", note["id"]));
}

/// The migration that added owners, on a database the previous release wrote: its rows belong
/// to no user, so in tokens mode only the operator changes them (and a user sees no account).
async fn rows_of_the_previous_release_belong_to_the_operator(backend: Backend) {
    let db = TestDb::create(backend).unwrap();
    let (down, up) = match backend {
        Backend::Sqlite => (
            include_str!("../../migrations/sqlite/2026-11-29-000013_owners_and_audit/down.sql"),
            include_str!("../../migrations/sqlite/2026-11-29-000013_owners_and_audit/up.sql"),
        ),
        Backend::Postgres => (
            include_str!("../../migrations/postgres/2026-11-29-000013_owners_and_audit/down.sql"),
            include_str!("../../migrations/postgres/2026-11-29-000013_owners_and_audit/up.sql"),
        ),
    };
    let url = db.url.clone();
    tokio::task::spawn_blocking(move || {
        let mut c = storage::Database::parse(&url).unwrap().establish().unwrap();
        storage::run_migrations(&mut c).unwrap();
        c.batch_execute(down).unwrap();
        // As the previous release wrote them.
        c.batch_execute(
            "INSERT INTO notes (title, body) VALUES ('old', 'note');
             INSERT INTO tags (name) VALUES ('old-tag');
             INSERT INTO comments (note_id, body) VALUES (1, 'old comment');
             INSERT INTO articles (title, author, created_at) VALUES ('a', 'b', '2026-11-01T00:00:00Z');
             INSERT INTO versioned_notes (title, created_at, updated_at) VALUES ('v', '2026-11-01T00:00:00Z', '2026-11-01T00:00:00Z');
             INSERT INTO accounts (account_id, owner, balance_cents, is_open, last_sequence, updated_at)
                 VALUES ('legacy', 'Old', 0, TRUE, 1, '2026-11-01 00:00:00');
             INSERT INTO account_events (aggregate_id, aggregate_type, event_type, payload, sequence, occurred_at)
                 VALUES ('legacy', 'account', 'AccountOpened', '{\"owner\":\"Old\"}', 1, '2026-11-01 00:00:00');",
        )
        .unwrap();
        c.batch_execute(up).unwrap();
    })
    .await
    .unwrap();
    let mut settings = test_settings(&db);
    tokens_mode(&mut settings);
    let app = server::Application::build(settings).await.unwrap();
    let app = TestApp::start(app, backend, db);
    let u = users(&app).await;
    let ann = &u.ann_write.0;
    // Every row is still there, readable by any token.
    assert_eq!(body_of(&app, ann, "/notes/1").await["title"], "old");
    assert_eq!(
        body_of(&app, ann, "/notes/1/comments/1").await["body"],
        "old comment"
    );
    assert_eq!(body_of(&app, ann, "/tags/1").await["name"], "old-tag");
    assert_eq!(
        body_of(&app, ann, "/v2/notes/1").await["data"]["title"],
        "v"
    );
    assert_eq!(body_of(&app, ann, "/articles/offset").await["total"], 1);
    // A user changes none of them; the operator does.
    for (path, put) in [
        ("/notes/1/comments/1", json!({"body": "x"})),
        ("/notes/1", json!({"title": "x", "body": "y"})),
        ("/tags/1", json!({"name": "x"})),
    ] {
        let res = send(&app, ann, Method::PUT, path, Some(&put)).await;
        problem(res, StatusCode::FORBIDDEN, "forbidden").await;
        let res = send(&app, &Cred::Operator, Method::PUT, path, Some(&put)).await;
        assert_eq!(res.status(), StatusCode::OK, "{path}");
    }
    // The account is the operator's: a user does not see it.
    let res = send(&app, ann, Method::GET, "/accounts/legacy", None).await;
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
    assert_eq!(body_of(&app, ann, "/accounts").await["total"], 0);
    let deposit = json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 3}});
    let res = send(
        &app,
        ann,
        Method::POST,
        "/accounts/legacy/events",
        Some(&deposit),
    )
    .await;
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
    created(&app, &Cred::Operator, "/accounts/legacy/events", deposit).await;
    assert_eq!(
        body_of(&app, &Cred::Operator, "/accounts/legacy").await["balance_cents"],
        3
    );
}

/// An account's stream is its owner's (any scope) and the operator's; another user's is not
/// found. The feed of every account is the operator's alone.
async fn event_streams_follow_the_accounts_rules(backend: Backend) {
    let app = tokens_app(backend).await;
    let u = users(&app).await;
    let body = json!({"account_id": "ann-1", "owner": "Ann"});
    created(&app, &u.ann_write.0, "/accounts", body).await;
    let stream = "/accounts/ann-1/events/stream";
    for cred in [&u.ann_read, &u.ann_write.0, &Cred::Operator] {
        let res = send(&app, cred, Method::GET, stream, None).await;
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.headers()["content-type"], "text/event-stream");
    }
    let res = send(&app, &u.bob_admin, Method::GET, stream, None).await;
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
    let res = send(&app, &Cred::None, Method::GET, stream, None).await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    for cred in [&u.ann_write.0, &u.bob_admin] {
        let res = send(&app, cred, Method::GET, "/events/stream", None).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN);
    }
    let res = send(&app, &Cred::Operator, Method::GET, "/events/stream", None).await;
    assert_eq!(res.status(), StatusCode::OK);
}
