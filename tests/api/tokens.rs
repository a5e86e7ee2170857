//! Area D: users and scoped access tokens, and the optional `API_AUTH=tokens` guard.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};
use server::Secret;
use server::auth::ApiAuth;

use crate::helpers::{Backend, TestApp, json, problem};
use crate::{api_tests, backend_tests};

api_tests!(
    create_user_returns_201_and_validates,
    issue_returns_the_raw_token_once,
    list_is_newest_first_with_revoked_tokens,
    list_pages_on_request,
    verify_reports_the_stored_record,
    verify_rejects_malformed_requests,
    revoke_keeps_the_row_and_refuses_twice,
    ownership_matrix,
    bad_input_is_a_clear_4xx,
    revocation_is_seen_by_the_next_verify,
    token_routes_ignore_api_auth_when_off,
    expiry_is_chosen_within_bounds,
    rotation_replaces_a_token_in_one_step,
);

backend_tests!(
    api_auth_guards_the_other_areas,
    secrets_never_leak,
    token_management_needs_the_operator_or_an_admin_token_of_that_user,
    every_operation_outside_the_allow_list_needs_a_credential,
    tokens_expire_and_show_their_last_use,
    active_tokens_are_capped_even_when_issued_at_once,
    the_whole_list_streams_in_chunks,
);

// ---------------------------------------------------------------------------------------------
// Helpers

/// The operator credential of the tokens-mode apps (`API_KEYS`). The helpers below always send
/// it: with `API_AUTH=off` nothing reads it, in tokens mode it is how users and their first
/// tokens are made.
pub const OPERATOR_KEY: &str = "operator-key-for-the-token-tests-0123456789";

/// An app in tokens mode with the operator key configured.
pub async fn tokens_mode(backend: Backend) -> TestApp {
    TestApp::spawn_with(backend, |s| {
        s.api_auth = ApiAuth::Tokens;
        s.api_keys = vec![Secret::new(OPERATOR_KEY)];
    })
    .await
    .unwrap()
}

pub async fn create_user(app: &TestApp, name: &str) -> i64 {
    let res = app
        .request(Method::POST, "/users")
        .header("X-API-Key", OPERATOR_KEY)
        .json(&json!({ "name": name }))
        .send()
        .await
        .unwrap();
    json(res, StatusCode::CREATED).await["id"].as_i64().unwrap()
}

/// Sends a token-area request with an optional `X-User-Id` (and the operator key).
async fn call(
    app: &TestApp,
    method: Method,
    path: &str,
    actor: Option<&str>,
    body: Option<&Value>,
) -> Response {
    let mut req = app.request(method, path).header("X-API-Key", OPERATOR_KEY);
    if let Some(actor) = actor {
        req = req.header("X-User-Id", actor);
    }
    if let Some(body) = body {
        req = req.json(body);
    }
    req.send().await.unwrap()
}

/// Issues a token as its owner; returns the 201 body.
pub async fn issue(app: &TestApp, user: i64, body: Value) -> Value {
    let res = call(
        app,
        Method::POST,
        &format!("/users/{user}/tokens"),
        Some(&user.to_string()),
        Some(&body),
    )
    .await;
    json(res, StatusCode::CREATED).await
}

async fn revoke(app: &TestApp, user: i64, token_id: i64) -> Response {
    call(
        app,
        Method::DELETE,
        &format!("/users/{user}/tokens/{token_id}"),
        Some(&user.to_string()),
        None,
    )
    .await
}

async fn list(app: &TestApp, user: i64) -> Value {
    let res = call(
        app,
        Method::GET,
        &format!("/users/{user}/tokens"),
        Some(&user.to_string()),
        None,
    )
    .await;
    json(res, StatusCode::OK).await
}

async fn verify(app: &TestApp, token: &str) -> Value {
    let res = app
        .post_json("/tokens/verify", &json!({ "token": token }))
        .await;
    json(res, StatusCode::OK).await
}

/// Asserts an area D error: this status, `application/json`, body exactly `{"error": message}`.
async fn error(res: Response, status: StatusCode, message: &str) {
    let ct = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = json(res, status).await;
    assert_eq!(ct.as_deref(), Some("application/json"), "{body}");
    assert_eq!(body, json!({ "error": message }));
}

fn is_rfc3339_utc(s: &str) -> bool {
    s.len() == 20 && s.ends_with('Z') && &s[10..11] == "T"
}

fn is_raw_token(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

// ---------------------------------------------------------------------------------------------
// Users

async fn create_user_returns_201_and_validates(app: TestApp) {
    let res = app
        .post_json("/users", &json!({"name": " Ann 🎉 ", "x": 1}))
        .await;
    let user = json(res, StatusCode::CREATED).await;
    assert!(user["id"].as_i64().unwrap() > 0);
    assert_eq!(user["name"], " Ann 🎉 ");
    assert!(is_rfc3339_utc(user["created_at"].as_str().unwrap()));
    assert_eq!(user.as_object().unwrap().len(), 3);
    let second = create_user(&app, "Bob").await;
    assert_ne!(second, user["id"].as_i64().unwrap());

    for (body, message) in [
        (json!({}), "name is required"),
        (json!({"name": null}), "name is required"),
        (json!({"name": ""}), "name is required"),
        (json!({"name": " \t\n"}), "name is required"),
        (json!({"name": 5}), "name must be a string"),
        (json!({"name": ["a"]}), "name must be a string"),
        (
            json!({"name": "x".repeat(201)}),
            "name must be at most 200 characters",
        ),
        (
            json!({"name": "a\u{0}b"}),
            "name must not contain NUL characters",
        ),
    ] {
        let res = app.post_json("/users", &body).await;
        error(res, StatusCode::UNPROCESSABLE_ENTITY, message).await;
    }
    let res = app
        .post_json("/users", &json!({"name": "é".repeat(200)}))
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    for (raw, message) in [
        ("not json", "body must be valid JSON"),
        ("{\"name\":", "body must be valid JSON"),
        ("[1]", "body must be a JSON object"),
        ("\"Ann\"", "body must be a JSON object"),
        ("", "name is required"),
    ] {
        let res = app
            .send_raw(Method::POST, "/users", "application/json", raw)
            .await;
        error(res, StatusCode::UNPROCESSABLE_ENTITY, message).await;
    }
    let res = app
        .send_raw(Method::POST, "/users", "text/plain", r#"{"name":"a"}"#)
        .await;
    problem(
        res,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported-media-type",
    )
    .await;
}

// ---------------------------------------------------------------------------------------------
// Issue, list, verify, revoke

async fn issue_returns_the_raw_token_once(app: TestApp) {
    let user = create_user(&app, "ann").await;
    let t = issue(&app, user, json!({})).await;
    let mut keys: Vec<&String> = t.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "created_at",
            "expires_at",
            "id",
            "label",
            "scope",
            "token",
            "user_id"
        ]
    );
    assert_eq!(t["user_id"], user);
    assert_eq!(t["scope"], "read");
    assert_eq!(t["label"], "");
    assert!(is_rfc3339_utc(t["created_at"].as_str().unwrap()));
    let raw = t["token"].as_str().unwrap();
    assert!(is_raw_token(raw), "{raw}");

    for scope in ["read", "write", "admin"] {
        let t2 = issue(&app, user, json!({"scope": scope, "label": "ci 🚀"})).await;
        assert_eq!(t2["scope"], scope);
        assert_eq!(t2["label"], "ci 🚀");
        assert_ne!(t2["token"], t["token"]);
    }
    let t3 = issue(&app, user, json!({"scope": null, "label": null})).await;
    assert_eq!((&t3["scope"], &t3["label"]), (&json!("read"), &json!("")));
    let t4 = issue(&app, user, json!({"label": "x".repeat(200)})).await;
    assert_eq!(t4["label"].as_str().unwrap().len(), 200);
    // An empty body is `{}`: every member is optional.
    let res = app
        .request(Method::POST, &format!("/users/{user}/tokens"))
        .header("X-User-Id", user.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(json(res, StatusCode::CREATED).await["scope"], "read");

    // The raw value is never shown again.
    let listed = list(&app, user).await;
    let text = listed.to_string();
    assert!(!text.contains(raw));
    assert!(!text.contains(&hash(raw)));
    assert!(!text.contains("token_hash"));
    for item in listed["items"].as_array().unwrap() {
        assert!(item.get("token").is_none());
    }
}

fn hash(raw: &str) -> String {
    tokens::hash_token(raw)
}

/// Without `limit` and `offset` the list holds every token (the specification's list); with
/// them, one page, and `total` still counts them all. Bad paging is the area's 422 body.
async fn list_pages_on_request(app: TestApp) {
    let user = create_user(&app, "ann").await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(issue(&app, user, json!({})).await["id"].as_i64().unwrap());
    }
    ids.reverse();
    let get = |query: &'static str| {
        let app = &app;
        async move {
            call(
                app,
                Method::GET,
                &format!("/users/{user}/tokens{query}"),
                Some(&user.to_string()),
                None,
            )
            .await
        }
    };
    let page_ids = |v: &Value| -> Vec<i64> {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_i64().unwrap())
            .collect()
    };
    let all = json(get("").await, StatusCode::OK).await;
    assert_eq!(
        (page_ids(&all), all["total"].as_i64()),
        (ids.clone(), Some(5))
    );
    let page = json(get("?limit=2&offset=1").await, StatusCode::OK).await;
    assert_eq!(
        (page_ids(&page), page["total"].as_i64()),
        (ids[1..3].to_vec(), Some(5))
    );
    let first = json(get("?limit=2").await, StatusCode::OK).await;
    assert_eq!(page_ids(&first), ids[..2].to_vec());
    let rest = json(get("?offset=3").await, StatusCode::OK).await;
    assert_eq!(page_ids(&rest), ids[3..].to_vec());
    let past = json(get("?offset=10").await, StatusCode::OK).await;
    assert_eq!(past, json!({"items": [], "total": 5}));
    for bad in ["?limit=0", "?limit=101", "?limit=x", "?offset=-1"] {
        let res = get(bad).await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        let body = json(res, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert_eq!(
            body,
            json!({"error": "limit must be an integer from 1 to 100, offset at least 0"}),
            "{bad}"
        );
    }
}

async fn list_is_newest_first_with_revoked_tokens(app: TestApp) {
    let user = create_user(&app, "ann").await;
    let other = create_user(&app, "bob").await;
    let empty = list(&app, user).await;
    assert_eq!(empty, json!({"items": [], "total": 0}));
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(
            issue(&app, user, json!({"label": format!("t{i}")})).await["id"]
                .as_i64()
                .unwrap(),
        );
    }
    issue(&app, other, json!({})).await;
    assert_eq!(
        revoke(&app, user, ids[1]).await.status(),
        StatusCode::NO_CONTENT
    );
    let page = list(&app, user).await;
    assert_eq!(page["total"], 5);
    let items = page["items"].as_array().unwrap();
    let got: Vec<i64> = items.iter().map(|t| t["id"].as_i64().unwrap()).collect();
    let mut newest_first = ids.clone();
    newest_first.reverse();
    assert_eq!(got, newest_first);
    for item in items {
        let mut keys: Vec<&String> = item.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "created_at",
                "expires_at",
                "id",
                "label",
                "last_used_at",
                "revoked_at",
                "scope",
                "user_id"
            ]
        );
        assert_eq!(item["user_id"], user);
        let revoked = item["id"] == ids[1];
        assert_eq!(item["revoked_at"].is_string(), revoked);
        assert_eq!(item["revoked_at"].is_null(), !revoked);
    }
    assert_eq!(list(&app, other).await["total"], 1);
}

async fn verify_reports_the_stored_record(app: TestApp) {
    let user = create_user(&app, "ann").await;
    let t = issue(&app, user, json!({"scope": "write"})).await;
    let raw = t["token"].as_str().unwrap();

    let unknown = json!({"valid": false, "user_id": null, "scope": null});
    assert_eq!(verify(&app, &"0".repeat(64)).await, unknown);
    assert_eq!(verify(&app, "nope").await, unknown);
    assert_eq!(verify(&app, &raw.to_uppercase()).await, unknown);
    assert_eq!(
        verify(&app, &hash(raw)).await,
        unknown,
        "the digest is not a token"
    );
    assert_eq!(verify(&app, &format!("{raw} ")).await, unknown);

    let active = json!({"valid": true, "user_id": user, "scope": "write"});
    assert_eq!(verify(&app, raw).await, active);
    // user_id and scope come from the record, never from the request; no header needed.
    let res = app
        .post_json(
            "/tokens/verify",
            &json!({"token": raw, "user_id": 999, "scope": "admin", "valid": false}),
        )
        .await;
    assert_eq!(json(res, StatusCode::OK).await, active);

    assert_eq!(
        revoke(&app, user, t["id"].as_i64().unwrap()).await.status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        verify(&app, raw).await,
        json!({"valid": false, "user_id": user, "scope": "write"})
    );
}

async fn verify_rejects_malformed_requests(app: TestApp) {
    for (body, message) in [
        (json!({"token": ""}), "token is required"),
        (json!({}), "token is required"),
        (json!({"token": null}), "token is required"),
        (json!({"token": 5}), "token must be a string"),
        (json!({"token": true}), "token must be a string"),
        (json!({"token": ["a"]}), "token must be a string"),
        (json!({"token": {"a": 1}}), "token must be a string"),
    ] {
        let res = app.post_json("/tokens/verify", &body).await;
        error(res, StatusCode::UNPROCESSABLE_ENTITY, message).await;
    }
    for (raw, message) in [
        ("not json", "body must be valid JSON"),
        ("[\"tok\"]", "body must be a JSON object"),
        ("null", "body must be a JSON object"),
        ("", "token is required"),
    ] {
        let res = app
            .send_raw(Method::POST, "/tokens/verify", "application/json", raw)
            .await;
        error(res, StatusCode::UNPROCESSABLE_ENTITY, message).await;
    }
    let res = app
        .send_raw(
            Method::POST,
            "/tokens/verify",
            "text/plain",
            r#"{"token":"a"}"#,
        )
        .await;
    problem(
        res,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported-media-type",
    )
    .await;
    let res = app.get("/tokens/verify").await;
    problem(res, StatusCode::METHOD_NOT_ALLOWED, "method-not-allowed").await;
    // A long or odd token is simply unknown.
    let odd = format!("{}\u{0}é", "a".repeat(100_000));
    assert_eq!(verify(&app, &odd).await["valid"], false);
}

async fn revoke_keeps_the_row_and_refuses_twice(app: TestApp) {
    let user = create_user(&app, "ann").await;
    let t = issue(&app, user, json!({"label": "keep"})).await;
    let id = t["id"].as_i64().unwrap();
    let res = revoke(&app, user, id).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    assert!(res.text().await.unwrap().is_empty());
    let listed = list(&app, user).await;
    assert_eq!(listed["total"], 1);
    let row = &listed["items"][0];
    assert_eq!(row["id"], id);
    assert_eq!(row["label"], "keep");
    assert!(is_rfc3339_utc(row["revoked_at"].as_str().unwrap()));
    assert!(row["revoked_at"].as_str().unwrap() >= row["created_at"].as_str().unwrap());
    error(
        revoke(&app, user, id).await,
        StatusCode::CONFLICT,
        "token already revoked",
    )
    .await;
    // Unchanged by the refused second revoke.
    assert_eq!(list(&app, user).await, listed);
    error(
        revoke(&app, user, id + 1000).await,
        StatusCode::NOT_FOUND,
        "token not found",
    )
    .await;
}

// ---------------------------------------------------------------------------------------------
// Ownership matrix: actor × path user × token (owner and state) × operation.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TokenCase {
    Missing,
    Active,
    Revoked,
    OtherUsers,
}

async fn ownership_matrix(app: TestApp) {
    let a = create_user(&app, "a").await;
    let b = create_user(&app, "b").await;
    let unknown = b + 1000;
    // (X-User-Id header, the id it names when it is a valid integer)
    let actors: Vec<(Option<String>, Option<i64>)> = vec![
        (Some(a.to_string()), Some(a)),
        (Some(b.to_string()), Some(b)),
        (Some(unknown.to_string()), Some(unknown)),
        (Some("0".into()), Some(0)),
        (Some("-1".into()), Some(-1)),
        (None, None),
        (Some("abc".into()), None),
        (Some("1.5".into()), None),
        (Some(String::new()), None),
        (Some("99999999999999999999".into()), None),
    ];
    // (path segment, the user id it is treated as)
    let paths: Vec<(String, i64)> = vec![
        (a.to_string(), a),
        (b.to_string(), b),
        (unknown.to_string(), unknown),
        ("abc".into(), 0),
        ("-1".into(), -1),
    ];
    let cases = [
        TokenCase::Missing,
        TokenCase::Active,
        TokenCase::Revoked,
        TokenCase::OtherUsers,
    ];
    let mut cells = 0;
    for (header, actor) in &actors {
        for (segment, path_user) in &paths {
            for case in cases {
                // Fresh tokens per cell, so a successful revoke never affects another cell.
                // "Other user's" is the token of whichever of a and b the path does not name.
                let owner = if *path_user == b { b } else { a };
                let stranger = if owner == a { b } else { a };
                let (token_id, raw, active_before) = match case {
                    TokenCase::Missing => (987_654_321, None, None),
                    TokenCase::Active | TokenCase::Revoked => {
                        let t = issue(&app, owner, json!({})).await;
                        let id = t["id"].as_i64().unwrap();
                        if case == TokenCase::Revoked {
                            assert_eq!(
                                revoke(&app, owner, id).await.status(),
                                StatusCode::NO_CONTENT
                            );
                        }
                        (
                            id,
                            Some(t["token"].as_str().unwrap().to_owned()),
                            Some(case == TokenCase::Active),
                        )
                    }
                    TokenCase::OtherUsers => {
                        let t = issue(&app, stranger, json!({})).await;
                        (
                            t["id"].as_i64().unwrap(),
                            Some(t["token"].as_str().unwrap().to_owned()),
                            Some(true),
                        )
                    }
                };
                let gate: Option<(StatusCode, &str)> = match actor {
                    None => Some((StatusCode::UNAUTHORIZED, "unauthorized")),
                    Some(id) if id != path_user => Some((StatusCode::FORBIDDEN, "forbidden")),
                    Some(_) if *path_user != a && *path_user != b => {
                        Some((StatusCode::NOT_FOUND, "user not found"))
                    }
                    Some(_) => None,
                };
                let ctx = format!("actor {header:?} path {segment} token {case:?}");

                // issue
                let res = call(
                    &app,
                    Method::POST,
                    &format!("/users/{segment}/tokens"),
                    header.as_deref(),
                    Some(&json!({"scope": "write"})),
                )
                .await;
                match gate {
                    Some((status, message)) => error(res, status, message).await,
                    None => {
                        let t = json(res, StatusCode::CREATED).await;
                        assert_eq!(t["user_id"], *path_user, "{ctx}");
                        assert_eq!(t["scope"], "write", "{ctx}");
                    }
                }
                // list
                let res = call(
                    &app,
                    Method::GET,
                    &format!("/users/{segment}/tokens"),
                    header.as_deref(),
                    None,
                )
                .await;
                match gate {
                    Some((status, message)) => error(res, status, message).await,
                    None => {
                        let page = json(res, StatusCode::OK).await;
                        let items = page["items"].as_array().unwrap();
                        assert_eq!(page["total"], items.len(), "{ctx}");
                        assert!(items.iter().all(|t| t["user_id"] == *path_user), "{ctx}");
                        assert!(!page.to_string().contains("\"token\""), "{ctx}");
                    }
                }
                // revoke
                let res = call(
                    &app,
                    Method::DELETE,
                    &format!("/users/{segment}/tokens/{token_id}"),
                    header.as_deref(),
                    None,
                )
                .await;
                let expected: Result<(), (StatusCode, &str)> = match (gate, case) {
                    (Some(g), _) => Err(g),
                    (None, TokenCase::Missing) => Err((StatusCode::NOT_FOUND, "token not found")),
                    (None, TokenCase::OtherUsers) => Err((StatusCode::FORBIDDEN, "forbidden")),
                    (None, TokenCase::Revoked) => {
                        Err((StatusCode::CONFLICT, "token already revoked"))
                    }
                    (None, TokenCase::Active) => Ok(()),
                };
                let revoked_now = match expected {
                    Err((status, message)) => {
                        error(res, status, message).await;
                        false
                    }
                    Ok(()) => {
                        assert_eq!(res.status(), StatusCode::NO_CONTENT, "{ctx}");
                        assert!(res.text().await.unwrap().is_empty());
                        true
                    }
                };
                // A refused revoke changed nothing; a successful one took effect.
                if let (Some(raw), Some(active)) = (raw, active_before) {
                    let v = verify(&app, &raw).await;
                    assert_eq!(v["valid"], active && !revoked_now, "{ctx}");
                }
                cells += 1;
            }
        }
    }
    assert_eq!(cells, actors.len() * paths.len() * cases.len());
}

// ---------------------------------------------------------------------------------------------
// Hostile input

async fn bad_input_is_a_clear_4xx(app: TestApp) {
    let user = create_user(&app, "ann").await;
    let me = user.to_string();
    let tokens_path = format!("/users/{user}/tokens");

    for scope in [
        json!("READ"),
        json!(""),
        json!(" read"),
        json!("root"),
        json!(1),
        json!(["read"]),
        json!({"a": 1}),
        json!(true),
    ] {
        let res = call(
            &app,
            Method::POST,
            &tokens_path,
            Some(&me),
            Some(&json!({"scope": scope})),
        )
        .await;
        error(
            res,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid scope, must be read/write/admin",
        )
        .await;
    }
    for (label, message) in [
        (
            json!("x".repeat(201)),
            "label must be at most 200 characters",
        ),
        (
            json!("x".repeat(100_000)),
            "label must be at most 200 characters",
        ),
        (json!(5), "label must be a string"),
        (json!(["a"]), "label must be a string"),
        (json!("a\u{0}"), "label must not contain NUL characters"),
    ] {
        let res = call(
            &app,
            Method::POST,
            &tokens_path,
            Some(&me),
            Some(&json!({"label": label})),
        )
        .await;
        error(res, StatusCode::UNPROCESSABLE_ENTITY, message).await;
    }
    for (raw, message) in [
        ("{", "body must be valid JSON"),
        ("scope=read", "body must be valid JSON"),
        ("[]", "body must be a JSON object"),
        ("42", "body must be a JSON object"),
    ] {
        let res = app
            .request(Method::POST, &tokens_path)
            .header("X-User-Id", &me)
            .header("content-type", "application/json")
            .body(raw)
            .send()
            .await
            .unwrap();
        error(res, StatusCode::UNPROCESSABLE_ENTITY, message).await;
    }
    let res = app
        .request(Method::POST, &tokens_path)
        .header("X-User-Id", &me)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("scope=read")
        .send()
        .await
        .unwrap();
    problem(
        res,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported-media-type",
    )
    .await;
    assert_eq!(
        list(&app, user).await["total"],
        0,
        "nothing issued by rejected requests"
    );

    // The ownership checks come before the body: a stranger learns nothing from it.
    let res = call(
        &app,
        Method::POST,
        &tokens_path,
        Some("0"),
        Some(&json!({"scope": "root"})),
    )
    .await;
    error(res, StatusCode::FORBIDDEN, "forbidden").await;
    let res = call(
        &app,
        Method::POST,
        "/users/424242/tokens",
        Some("424242"),
        Some(&json!({"scope": "root"})),
    )
    .await;
    error(res, StatusCode::NOT_FOUND, "user not found").await;

    // X-User-Id that is not an integer, on every route that needs it.
    for header in [
        None,
        Some(""),
        Some("abc"),
        Some("1.0"),
        Some("0x1"),
        Some("1e3"),
        Some("+1"),
        Some("99999999999999999999"),
    ] {
        for (method, path) in [
            (Method::POST, tokens_path.clone()),
            (Method::GET, tokens_path.clone()),
            (Method::DELETE, format!("{tokens_path}/1")),
        ] {
            let res = call(&app, method, &path, header, Some(&json!({}))).await;
            error(res, StatusCode::UNAUTHORIZED, "unauthorized").await;
        }
    }
    // Path ids: not numeric is 0, negative kept, unknown 404.
    for (segment, actor, status, message) in [
        ("abc", "0", StatusCode::NOT_FOUND, "user not found"),
        ("abc", &*me, StatusCode::FORBIDDEN, "forbidden"),
        ("1.5", "0", StatusCode::NOT_FOUND, "user not found"),
        (
            "99999999999999999999",
            "0",
            StatusCode::NOT_FOUND,
            "user not found",
        ),
        ("-5", "-5", StatusCode::NOT_FOUND, "user not found"),
        ("-5", "5", StatusCode::FORBIDDEN, "forbidden"),
        ("%00", "0", StatusCode::NOT_FOUND, "user not found"),
    ] {
        let res = call(
            &app,
            Method::GET,
            &format!("/users/{segment}/tokens"),
            Some(actor),
            None,
        )
        .await;
        error(res, status, message).await;
    }
    // Token ids that cannot exist.
    for token_id in ["abc", "-1", "0", "1.5", "99999999999999999999", "%20"] {
        let res = call(
            &app,
            Method::DELETE,
            &format!("{tokens_path}/{token_id}"),
            Some(&me),
            None,
        )
        .await;
        error(res, StatusCode::NOT_FOUND, "token not found").await;
    }
    // Shared layers: unknown methods and routes are problem documents.
    let res = app.request(Method::PUT, &tokens_path).send().await.unwrap();
    problem(res, StatusCode::METHOD_NOT_ALLOWED, "method-not-allowed").await;
    let res = app.get("/users").await;
    problem(res, StatusCode::METHOD_NOT_ALLOWED, "method-not-allowed").await;
    let res = app.get("/tokens").await;
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
    // Over the body cap: 413 problem.
    let huge = json!({"token": "a".repeat(1_100_000)});
    let res = app.post_json("/tokens/verify", &huge).await;
    problem(res, StatusCode::PAYLOAD_TOO_LARGE, "payload-too-large").await;
}

/// API_AUTH is off by default: the other areas need no token and the token routes never do.
async fn token_routes_ignore_api_auth_when_off(app: TestApp) {
    assert_eq!(app.get("/notes").await.status(), StatusCode::OK);
    let res = app
        .post_json("/notes", &json!({"title": "t", "body": "b"}))
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let res = app
        .request(Method::GET, "/notes")
        .header("Authorization", "Bearer nonsense")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
}

// ---------------------------------------------------------------------------------------------
// Concurrency: revocation is seen by the very next verify.

async fn revocation_is_seen_by_the_next_verify(app: TestApp) {
    let user = create_user(&app, "ann").await;
    let t = issue(&app, user, json!({})).await;
    let raw = t["token"].as_str().unwrap().to_owned();
    let id = t["id"].as_i64().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let epoch = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let (client, url, raw, stop) = (
            app.client.clone(),
            app.url("/tokens/verify"),
            raw.clone(),
            stop.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                let started = Instant::now();
                let res = client
                    .post(&url)
                    .json(&json!({"token": raw}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(res.status(), StatusCode::OK);
                let body: Value = res.json().await.unwrap();
                seen.push((started, body["valid"].as_bool().unwrap()));
            }
            seen
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let res = revoke(&app, user, id).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let revoked_at = Instant::now();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::SeqCst);
    let (mut before, mut after) = (0, 0);
    for task in tasks {
        for (started, valid) in task.await.unwrap() {
            if started > revoked_at {
                after += 1;
                assert!(
                    !valid,
                    "a verify started {:?} after the revoke's 204 answered valid",
                    started - revoked_at
                );
            } else if valid {
                before += 1;
            }
        }
    }
    assert!(
        before > 0,
        "no verify saw the active token (epoch {epoch:?})"
    );
    assert!(after > 0, "no verify ran after the revoke");
}

// ---------------------------------------------------------------------------------------------
// API_AUTH=tokens

async fn api_auth_guards_the_other_areas(backend: Backend) {
    let app = tokens_mode(backend).await;
    let user = create_user(&app, "ann").await;
    let read = issue(&app, user, json!({"scope": "read"})).await;
    let write = issue(&app, user, json!({"scope": "write"})).await;
    let admin = issue(&app, user, json!({"scope": "admin"})).await;
    let bearer = |t: &Value| format!("Bearer {}", t["token"].as_str().unwrap());

    // Missing, malformed, unknown: 401 problem with the challenge.
    for auth in [
        None,
        Some("".to_owned()),
        Some("Bearer".to_owned()),
        Some(format!("Basic {}", read["token"].as_str().unwrap())),
        Some(format!("Bearer {}", "0".repeat(64))),
        Some(format!("Bearer {}", hash(read["token"].as_str().unwrap()))),
    ] {
        for path in [
            "/notes",
            "/notes/1",
            "/tags",
            "/articles/offset",
            "/articles/cursor",
            "/v1/notes",
            "/v2/notes",
            "/accounts",
            "/notes/1/comments",
        ] {
            let mut req = app.request(Method::GET, path);
            if let Some(auth) = &auth {
                req = req.header("Authorization", auth);
            }
            let res = req.send().await.unwrap();
            assert_eq!(
                res.headers()["www-authenticate"],
                "Bearer",
                "{path} {auth:?}"
            );
            problem(res, StatusCode::UNAUTHORIZED, "unauthorized").await;
        }
    }
    // Reads need any active scope.
    for t in [&read, &write, &admin] {
        for path in [
            "/notes",
            "/tags",
            "/articles/offset",
            "/v2/notes",
            "/accounts",
        ] {
            let res = app
                .request(Method::GET, path)
                .header("Authorization", bearer(t))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), StatusCode::OK, "{path} with {}", t["scope"]);
        }
    }
    // "bearer" in any case.
    let res = app
        .request(Method::GET, "/notes")
        .header(
            "Authorization",
            format!("bearer {}", read["token"].as_str().unwrap()),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    // Writes need write or admin: read is 403 and nothing is written.
    let note = json!({"title": "t", "body": "b"});
    let res = app
        .request(Method::POST, "/notes")
        .header("Authorization", bearer(&read))
        .json(&note)
        .send()
        .await
        .unwrap();
    problem(res, StatusCode::FORBIDDEN, "forbidden").await;
    for (method, path) in [
        (Method::DELETE, "/notes/1"),
        (Method::PUT, "/tags/1"),
        (Method::POST, "/v2/notes"),
        (Method::POST, "/accounts"),
    ] {
        let res = app
            .request(method.clone(), path)
            .header("Authorization", bearer(&read))
            .json(&note)
            .send()
            .await
            .unwrap();
        problem(res, StatusCode::FORBIDDEN, "forbidden").await;
    }
    let res = app
        .request(Method::GET, "/notes")
        .header("Authorization", bearer(&read))
        .send()
        .await
        .unwrap();
    assert_eq!(json(res, StatusCode::OK).await["total"], 0);
    for t in [&write, &admin] {
        let res = app
            .request(Method::POST, "/notes")
            .header("Authorization", bearer(t))
            .json(&note)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED);
    }
    // A revoked token is refused from the next request on.
    assert_eq!(
        revoke(&app, user, write["id"].as_i64().unwrap())
            .await
            .status(),
        StatusCode::NO_CONTENT
    );
    let res = app
        .request(Method::POST, "/notes")
        .header("Authorization", bearer(&write))
        .json(&note)
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["www-authenticate"], "Bearer");
    problem(res, StatusCode::UNAUTHORIZED, "unauthorized").await;
    let res = app
        .request(Method::GET, "/notes")
        .header("Authorization", bearer(&write))
        .send()
        .await
        .unwrap();
    problem(res, StatusCode::UNAUTHORIZED, "unauthorized").await;
    // A percent-encoded path cannot slip past the prefix check.
    let res = app.get("/%6Eotes").await;
    problem(res, StatusCode::UNAUTHORIZED, "unauthorized").await;
    // Outside the guarded areas nothing changes.
    for path in ["/health", "/", "/openapi.json", "/problems/unauthorized"] {
        let status = app.get(path).await.status();
        assert!(status.is_success(), "{path}: {status}");
    }
    let res = app.get("/docs/").await;
    assert!(res.status().is_success());
    // The icon a browser asks for beside the docs page: empty, public, cacheable.
    let icon = app.get("/favicon.ico").await;
    assert_eq!(icon.status(), StatusCode::NO_CONTENT);
    assert_eq!(icon.headers()["cache-control"], "public, max-age=86400");
    assert_eq!(
        verify(&app, admin["token"].as_str().unwrap()).await["valid"],
        true
    );
    // Creating a user needs the operator key now; a bearer token does not do.
    for auth in [None, Some(bearer(&admin))] {
        let mut req = app
            .request(Method::POST, "/users")
            .json(&json!({"name": "bob"}));
        if let Some(auth) = auth {
            req = req.header("Authorization", auth);
        }
        let res = req.send().await.unwrap();
        assert_eq!(
            res.headers()["www-authenticate"],
            "ApiKey header=\"X-API-Key\""
        );
        problem(res, StatusCode::UNAUTHORIZED, "unauthorized").await;
    }
    create_user(&app, "bob").await;
}

// ---------------------------------------------------------------------------------------------
// Secrecy: a raw token never reaches storage, a log line or any response but its issue.

/// Everything stored: the SQLite file (with its WAL) byte for byte, or every row of every
/// PostgreSQL table as JSON.
fn storage_dump(app: &TestApp) -> String {
    match app.backend {
        Backend::Sqlite => {
            let path = app.db.url.trim_start_matches("sqlite://").to_owned();
            let mut text = String::new();
            for file in [path.clone(), format!("{path}-wal")] {
                if let Ok(bytes) = std::fs::read(&file) {
                    text.push_str(&String::from_utf8_lossy(&bytes));
                }
            }
            text
        }
        Backend::Postgres => {
            use storage::diesel::sql_types::Text;
            use storage::diesel::{Connection, QueryableByName, RunQueryDsl, pg::PgConnection};
            #[derive(QueryableByName)]
            struct Row {
                #[diesel(sql_type = Text)]
                j: String,
            }
            let mut conn = PgConnection::establish(&app.db.url).unwrap();
            let tables: Vec<Row> = storage::diesel::sql_query(
                "SELECT table_name::text AS j FROM information_schema.tables \
                 WHERE table_schema = 'public'",
            )
            .load(&mut conn)
            .unwrap();
            let mut text = String::new();
            for table in tables {
                let rows: Vec<Row> = storage::diesel::sql_query(format!(
                    "SELECT row_to_json(t)::text AS j FROM \"{}\" t",
                    table.j
                ))
                .load(&mut conn)
                .unwrap();
                for row in rows {
                    text.push_str(&row.j);
                    text.push('\n');
                }
            }
            text
        }
    }
}

async fn secrets_never_leak(backend: Backend) {
    let capture = crate::helpers::log_capture();
    let app = tokens_mode(backend).await;
    let user = create_user(&app, "ann").await;
    let other = create_user(&app, "bob").await;
    let mut raws = Vec::new();
    let mut bodies = Vec::new();
    for i in 0..20 {
        let scope = ["read", "write", "admin"][i % 3];
        let t = issue(
            &app,
            user,
            json!({"scope": scope, "label": format!("t{i}")}),
        )
        .await;
        raws.push((
            t["token"].as_str().unwrap().to_owned(),
            t["id"].as_i64().unwrap(),
        ));
    }
    let mut record = |status: u16, text: String| bodies.push((status, text));
    for (raw, id) in &raws {
        for res in [
            app.post_json("/tokens/verify", &json!({"token": raw}))
                .await,
            app.request(Method::GET, "/notes")
                .header("Authorization", format!("Bearer {raw}"))
                .send()
                .await
                .unwrap(),
            app.request(Method::POST, "/notes")
                .header("Authorization", format!("Bearer {raw}"))
                .json(&json!({"title": "t", "body": "b"}))
                .send()
                .await
                .unwrap(),
            app.request(Method::GET, &format!("/notes?token={raw}"))
                .header("Authorization", format!("Bearer {raw}"))
                .send()
                .await
                .unwrap(),
            app.post_json("/tokens/verify", &json!({"token": format!("{raw}x")}))
                .await,
        ] {
            let status = res.status().as_u16();
            for (name, value) in res.headers() {
                assert!(
                    !raws.iter().any(
                        |(r, _)| String::from_utf8_lossy(value.as_bytes()).contains(r.as_str())
                    ),
                    "header {name}"
                );
            }
            record(status, res.text().await.unwrap());
        }
        let res = call(
            &app,
            Method::GET,
            &format!("/users/{user}/tokens"),
            Some(&user.to_string()),
            None,
        )
        .await;
        record(res.status().as_u16(), res.text().await.unwrap());
        let res = call(
            &app,
            Method::DELETE,
            &format!("/users/{other}/tokens/{id}"),
            Some(&other.to_string()),
            None,
        )
        .await;
        record(res.status().as_u16(), res.text().await.unwrap());
        let res = revoke(&app, user, *id).await;
        record(res.status().as_u16(), res.text().await.unwrap());
        let res = revoke(&app, user, *id).await;
        record(res.status().as_u16(), res.text().await.unwrap());
        let res = app
            .post_json("/tokens/verify", &json!({"token": raw}))
            .await;
        record(res.status().as_u16(), res.text().await.unwrap());
        let res = app
            .request(Method::GET, "/notes")
            .header("Authorization", format!("Bearer {raw}"))
            .send()
            .await
            .unwrap();
        record(res.status().as_u16(), res.text().await.unwrap());
    }
    let dump = storage_dump(&app);
    for (raw, _) in &raws {
        for (status, body) in &bodies {
            assert!(
                !body.contains(raw.as_str()),
                "a {status} response body shows a raw token: {body}"
            );
        }
        assert!(!dump.contains(raw.as_str()), "a raw token is stored");
        assert!(
            dump.contains(&hash(raw)),
            "the scan did not see the stored digest"
        );
    }
    assert!(
        bodies.iter().any(|(s, _)| *s == 201),
        "the guarded writes were let through"
    );
    assert!(
        bodies.iter().any(|(s, _)| *s == 401),
        "revoked tokens were refused"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let lines = capture.snapshot();
    let leaked: Vec<&String> = lines
        .iter()
        .filter(|l| raws.iter().any(|(raw, _)| l.contains(raw.as_str())))
        .collect();
    assert!(
        lines.iter().any(|l| l.contains("/tokens/verify")),
        "the capturing logger saw no access log line"
    );
    assert!(leaked.is_empty(), "raw token in log lines: {leaked:?}");
}

// ---------------------------------------------------------------------------------------------
// Tokens mode: deny by default, and token management without a back door

async fn token_management_needs_the_operator_or_an_admin_token_of_that_user(backend: Backend) {
    let app = tokens_mode(backend).await;
    let (ann, bob) = (
        create_user(&app, "ann").await,
        create_user(&app, "bob").await,
    );
    let send = |method: Method, path: String, auth: Option<String>, user: Option<i64>| {
        let mut req = app.request(method, &path).json(&json!({"scope": "admin"}));
        if let Some(auth) = auth {
            req = req.header("Authorization", auth);
        }
        if let Some(user) = user {
            req = req.header("X-User-Id", user.to_string());
        }
        req.send()
    };
    // X-User-Id alone grants nothing: no token is issued, listed or revoked.
    for (method, path) in [
        (Method::POST, format!("/users/{ann}/tokens")),
        (Method::GET, format!("/users/{ann}/tokens")),
        (Method::DELETE, format!("/users/{ann}/tokens/1")),
    ] {
        let res = send(method, path, None, Some(ann)).await.unwrap();
        assert_eq!(res.headers()["www-authenticate"], "Bearer");
        problem(res, StatusCode::UNAUTHORIZED, "unauthorized").await;
    }
    assert_eq!(list(&app, ann).await["total"], 0);
    // The operator bootstraps (here without X-User-Id: it acts as the path user).
    let admin = json(
        app.request(Method::POST, &format!("/users/{ann}/tokens"))
            .header("X-API-Key", OPERATOR_KEY)
            .json(&json!({"scope": "admin"}))
            .send()
            .await
            .unwrap(),
        StatusCode::CREATED,
    )
    .await;
    let write = issue(&app, ann, json!({"scope": "write"})).await;
    let bearer = |t: &Value| Some(format!("Bearer {}", t["token"].as_str().unwrap()));
    // An admin token manages its own user's tokens, with or without X-User-Id.
    for user in [None, Some(ann)] {
        let res = send(
            Method::POST,
            format!("/users/{ann}/tokens"),
            bearer(&admin),
            user,
        )
        .await
        .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED);
    }
    let res = send(
        Method::GET,
        format!("/users/{ann}/tokens"),
        bearer(&admin),
        None,
    )
    .await
    .unwrap();
    assert_eq!(json(res, StatusCode::OK).await["total"], 4);
    let extra = list(&app, ann).await["items"][0]["id"].as_i64().unwrap();
    let res = send(
        Method::DELETE,
        format!("/users/{ann}/tokens/{extra}"),
        bearer(&admin),
        None,
    )
    .await
    .unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    // But not another user's, and X-User-Id cannot change whose tokens it acts on.
    let res = send(
        Method::POST,
        format!("/users/{bob}/tokens"),
        bearer(&admin),
        Some(bob),
    )
    .await
    .unwrap();
    let p = problem(res, StatusCode::FORBIDDEN, "forbidden").await;
    assert!(p["detail"].as_str().unwrap().contains("own user"), "{p}");
    let res = send(
        Method::POST,
        format!("/users/{ann}/tokens"),
        bearer(&admin),
        Some(bob),
    )
    .await
    .unwrap();
    error(res, StatusCode::FORBIDDEN, "forbidden").await;
    // A write token is not enough; the 403 names the scope that was missing.
    let res = send(
        Method::GET,
        format!("/users/{ann}/tokens"),
        bearer(&write),
        None,
    )
    .await
    .unwrap();
    let p = problem(res, StatusCode::FORBIDDEN, "forbidden").await;
    assert!(p["detail"].as_str().unwrap().contains("scope admin"), "{p}");
    assert_eq!(
        list(&app, bob).await["total"],
        0,
        "nothing was issued to bob"
    );
    // Verify stays public.
    assert_eq!(
        verify(&app, write["token"].as_str().unwrap()).await["valid"],
        true
    );
}

/// Walks the OpenAPI document: every operation outside the public allow-list answers 401
/// without a credential, so a route added later is covered as soon as it is documented.
async fn every_operation_outside_the_allow_list_needs_a_credential(backend: Backend) {
    let app = tokens_mode(backend).await;
    let doc = json(app.get("/openapi.json").await, StatusCode::OK).await;
    let public = [
        ("get", "/"),
        ("get", "/health"),
        ("get", "/health/live"),
        ("get", "/health/ready"),
        ("get", "/problems/{slug}"),
        ("get", "/examples/ping"),
        ("post", "/webhook"),
        ("post", "/tokens/verify"),
        ("get", "/machine/health"),
        ("get", "/examples/protected"),
    ];
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, _) in item.as_object().unwrap() {
            if public.contains(&(method.as_str(), path.as_str())) {
                continue;
            }
            let concrete = path.replace("{slug}", "x").replace(['{', '}'], "");
            let concrete = concrete
                .split('/')
                .map(|s| {
                    if s.chars().any(|c| c.is_ascii_uppercase()) || s == "id" {
                        "1"
                    } else {
                        s
                    }
                })
                .collect::<Vec<_>>()
                .join("/");
            let res = app
                .request(method.to_uppercase().parse().unwrap(), &concrete)
                .header("content-type", "application/json")
                .header("X-User-Id", "1")
                .body("{}")
                .send()
                .await
                .unwrap();
            assert_eq!(
                res.status(),
                StatusCode::UNAUTHORIZED,
                "{method} {path} ({concrete})"
            );
            assert!(
                res.headers().contains_key("www-authenticate"),
                "{method} {path}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} operations walked");
}

// ---------------------------------------------------------------------------------------------
// Tokens that end

async fn expiry_is_chosen_within_bounds(app: TestApp) {
    let user = create_user(&app, "ann").await;
    let default = issue(&app, user, json!({})).await;
    let day = issue(&app, user, json!({"expires_in_days": 1})).await;
    let year = issue(&app, user, json!({"expires_in_days": 365})).await;
    let created = default["created_at"].as_str().unwrap();
    let expiry = |t: &Value| t["expires_at"].as_str().unwrap().to_owned();
    assert!(is_rfc3339_utc(&expiry(&default)));
    assert!(created < expiry(&day).as_str() && expiry(&day) < expiry(&default));
    assert!(expiry(&default) < expiry(&year));
    let at = expiry(&day);
    let exact = issue(&app, user, json!({"expires_at": at})).await;
    assert_eq!(expiry(&exact), at);
    for (body, message) in [
        (json!({"expires_in_days": 0}), "expires_in_days must be"),
        (json!({"expires_in_days": 366}), "expires_in_days must be"),
        (json!({"expires_in_days": "7"}), "expires_in_days must be"),
        (json!({"expires_in_days": 1.5}), "expires_in_days must be"),
        (
            json!({"expires_at": "2000-01-01T00:00:00Z"}),
            "expires_at must be",
        ),
        (
            json!({"expires_at": "2999-01-01T00:00:00Z"}),
            "expires_at must be",
        ),
        (json!({"expires_at": "tomorrow"}), "expires_at must be"),
        (json!({"expires_in_days": 1, "expires_at": at}), "not both"),
    ] {
        let res = call(
            &app,
            Method::POST,
            &format!("/users/{user}/tokens"),
            Some(&user.to_string()),
            Some(&body),
        )
        .await;
        let got = json(res, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert!(
            got["error"].as_str().unwrap().contains(message),
            "{body}: {got}"
        );
    }
    // The list shows when each token ends and that none has been used.
    let listed = list(&app, user).await;
    for t in listed["items"].as_array().unwrap() {
        assert!(
            t["expires_at"].is_string() && t["last_used_at"].is_null(),
            "{t}"
        );
    }
}

async fn rotation_replaces_a_token_in_one_step(app: TestApp) {
    let (ann, bob) = (
        create_user(&app, "ann").await,
        create_user(&app, "bob").await,
    );
    let old = issue(&app, ann, json!({"scope": "write", "label": "ci"})).await;
    let old_id = old["id"].as_i64().unwrap();
    let app = &app;
    let send = |user: i64, id: i64, actor: i64| async move {
        call(
            app,
            Method::POST,
            &format!("/users/{user}/tokens/{id}/rotate"),
            Some(&actor.to_string()),
            None,
        )
        .await
    };
    let new = json(send(ann, old_id, ann).await, StatusCode::CREATED).await;
    assert_ne!(new["id"], old["id"]);
    assert_ne!(new["token"], old["token"]);
    assert_eq!(
        (&new["scope"], &new["label"]),
        (&old["scope"], &old["label"])
    );
    assert_eq!(
        verify(app, old["token"].as_str().unwrap()).await["valid"],
        false
    );
    assert_eq!(
        verify(app, new["token"].as_str().unwrap()).await["valid"],
        true
    );
    let listed = list(app, ann).await;
    let revoked = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == old["id"])
        .unwrap()
        .clone();
    assert!(revoked["revoked_at"].is_string());
    // Twice: the old one is revoked already. Another user's, or as another user: refused.
    error(
        send(ann, old_id, ann).await,
        StatusCode::CONFLICT,
        "token already revoked",
    )
    .await;
    error(
        send(bob, new["id"].as_i64().unwrap(), bob).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    error(
        send(ann, new["id"].as_i64().unwrap(), bob).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    error(
        send(ann, 999_999, ann).await,
        StatusCode::NOT_FOUND,
        "token not found",
    )
    .await;
    assert_eq!(
        list(app, ann).await["total"],
        2,
        "nothing issued by a refused rotation"
    );
}

async fn tokens_expire_and_show_their_last_use(backend: Backend) {
    let app = tokens_mode(backend).await;
    let user = create_user(&app, "ann").await;
    let t = issue(&app, user, json!({"scope": "read"})).await;
    let raw = t["token"].as_str().unwrap().to_owned();
    let bearer = format!("Bearer {raw}");
    let get = || {
        app.request(Method::GET, "/notes")
            .header("Authorization", &bearer)
            .send()
    };
    assert_eq!(get().await.unwrap().status(), StatusCode::OK);
    let used = list(&app, user).await["items"][0]["last_used_at"].clone();
    assert!(used.is_string(), "the use was recorded: {used}");
    // Used again within the minute: not written again.
    assert_eq!(get().await.unwrap().status(), StatusCode::OK);
    assert_eq!(verify(&app, &raw).await["valid"], true);
    assert_eq!(list(&app, user).await["items"][0]["last_used_at"], used);
    // Past its expiry (set in the database, as time would): refused and invalid.
    let id = t["id"].as_i64().unwrap();
    crate::helpers::with_conn(&app.db, move |c| {
        use diesel::RunQueryDsl;
        diesel::sql_query(format!(
            "UPDATE tokens SET expires_at = '2001-01-01T00:00:00Z' WHERE id = {id}"
        ))
        .execute(c)
        .unwrap();
    })
    .await;
    let res = get().await.unwrap();
    assert_eq!(res.headers()["www-authenticate"], "Bearer");
    problem(res, StatusCode::UNAUTHORIZED, "unauthorized").await;
    let v = verify(&app, &raw).await;
    assert_eq!((&v["valid"], &v["user_id"]), (&json!(false), &json!(user)));
}

/// `TOKEN_MAX_ACTIVE`: one issue past the cap is 409 with the area's `{"error"}` body and
/// nothing stored; a revoke makes room; concurrent issues at the cap pass it one at a time.
async fn active_tokens_are_capped_even_when_issued_at_once(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.token_max_active = 3)
        .await
        .unwrap();
    let user = create_user(&app, "ann").await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(issue(&app, user, json!({})).await["id"].as_i64().unwrap());
    }
    let path = format!("/users/{user}/tokens");
    let uid = user.to_string();
    let full = call(&app, Method::POST, &path, Some(&uid), Some(&json!({}))).await;
    error(
        full,
        StatusCode::CONFLICT,
        "too many active tokens: revoke one (or let one expire) before issuing another",
    )
    .await;
    assert_eq!(list(&app, user).await["total"], 3, "nothing stored");
    assert_eq!(
        revoke(&app, user, ids[0]).await.status(),
        StatusCode::NO_CONTENT
    );
    // One place is free: of eight issues at once, one is made.
    let empty = json!({});
    let issues = (0..8).map(|_| call(&app, Method::POST, &path, Some(&uid), Some(&empty)));
    let statuses: Vec<StatusCode> = futures_util::future::join_all(issues)
        .await
        .into_iter()
        .map(|r| r.status())
        .collect();
    let made = statuses
        .iter()
        .filter(|s| **s == StatusCode::CREATED)
        .count();
    assert_eq!(made, 1, "{statuses:?}");
    assert!(
        statuses
            .iter()
            .all(|s| *s == StatusCode::CREATED || *s == StatusCode::CONFLICT)
    );
    let listed = list(&app, user).await;
    let active = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["revoked_at"].is_null())
        .count();
    assert_eq!((active, listed["total"].as_i64().unwrap()), (3, 4));
}

/// The unpaged list holds every token (more than one database chunk of them), newest first,
/// exactly as the pages do.
async fn the_whole_list_streams_in_chunks(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.token_max_active = 1000)
        .await
        .unwrap();
    let user = create_user(&app, "ann").await;
    let n = 600;
    for _ in 0..n {
        issue(&app, user, json!({"label": "x"})).await;
    }
    let whole = list(&app, user).await;
    assert_eq!(whole["total"], n);
    let ids: Vec<i64> = whole["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids.len(), n);
    assert!(
        ids.windows(2).all(|w| w[0] > w[1]),
        "newest first, each once"
    );
    let mut paged = Vec::new();
    for offset in (0..n).step_by(100) {
        let res = call(
            &app,
            Method::GET,
            &format!("/users/{user}/tokens?limit=100&offset={offset}"),
            Some(&user.to_string()),
            None,
        )
        .await;
        paged.extend(
            json(res, StatusCode::OK).await["items"]
                .as_array()
                .unwrap()
                .clone(),
        );
    }
    assert_eq!(whole["items"].as_array().unwrap(), &paged);
    // A user without tokens: an empty whole list.
    let other = create_user(&app, "bob").await;
    assert_eq!(list(&app, other).await, json!({"items": [], "total": 0}));
}
