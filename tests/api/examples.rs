//! Area H: example routes (spec §4.8) and their credentials (spec §5.1).

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use credentials::{sign_hs256, sign_with_header};
use reqwest::{Response, StatusCode};
use serde_json::{Value, json};
use server::Secret;

use crate::helpers::{Backend, TestApp, json, problem};
use crate::{api_tests, backend_tests};

api_tests!(
    ping_answers_pong,
    example_notes_share_the_core_store,
    example_notes_validate_and_404_like_notes,
    example_tags_share_the_core_store,
    machine_health_without_configured_keys_is_always_401,
    protected_without_secret_is_always_401,
);

backend_tests!(
    machine_health_accepts_each_configured_key,
    machine_health_refuses_wrong_and_missing_keys,
    machine_health_reads_the_configured_header,
    protected_accepts_a_valid_hs256_token,
    protected_refuses_every_bad_token,
    protected_with_a_short_secret_is_always_401,
);

const SECRET: &str = "an-example-secret-of-at-least-32-bytes!";
const KEYS: [&str; 2] = [
    "key-alpha-1234-padded-to-at-least-32-bytes",
    "key-beta-5678-padded-to-at-least-32-bytes",
];

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

async fn ping_answers_pong(app: TestApp) {
    let body = json(app.get("/examples/ping").await, StatusCode::OK).await;
    assert_eq!(body, json!({"message": "pong", "status": "ok"}));
}

async fn example_notes_share_the_core_store(app: TestApp) {
    let created = json(
        app.post_json("/examples/notes", &json!({"title": "T", "body": "B"}))
            .await,
        StatusCode::CREATED,
    )
    .await;
    let id = created["id"].as_i64().unwrap();
    assert_eq!(created, json!({"id": id, "title": "T", "body": "B"}));
    // The same note through both route sets.
    let core = json(app.get(&format!("/notes/{id}")).await, StatusCode::OK).await;
    assert_eq!(core, created);
    let other = app.create_note("core", "note").await;
    let list = json(
        app.get("/examples/notes?limit=1&offset=1").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        list,
        json!({"items": [other], "limit": 1, "offset": 1, "total": 2, "next_offset": null})
    );
    let updated = json(
        app.put_json(
            &format!("/examples/notes/{id}"),
            &json!({"title": "T2", "body": "B2"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(updated, json!({"id": id, "title": "T2", "body": "B2"}));
    let via_example = json(
        app.get(&format!("/examples/notes/{id}")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(via_example, updated);
    let res = app.delete(&format!("/examples/notes/{id}")).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    assert!(res.text().await.unwrap().is_empty());
    problem(
        app.get(&format!("/notes/{id}")).await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
}

async fn example_notes_validate_and_404_like_notes(app: TestApp) {
    let p = problem(
        app.get("/examples/notes/424242").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    assert_eq!(p["detail"], "Note 424242 does not exist.");
    for path in ["/examples/notes/abc", "/examples/tags/99999999999999999999"] {
        problem(app.get(path).await, StatusCode::NOT_FOUND, "not-found").await;
    }
    let p = problem(
        app.post_json("/examples/notes", &json!({"title": " "}))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(p["errors"].as_array().unwrap().len(), 2);
    problem(
        app.put_json("/examples/notes/1", &json!([])).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    problem(
        app.get("/examples/notes?limit=0").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    problem(
        app.delete("/examples/notes/77").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    let res = app
        .request(reqwest::Method::PATCH, "/examples/notes/1")
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.headers()["allow"].to_str().unwrap(),
        "GET, HEAD, PUT, DELETE"
    );
    problem(res, StatusCode::METHOD_NOT_ALLOWED, "method-not-allowed").await;
}

async fn example_tags_share_the_core_store(app: TestApp) {
    let tag = json(
        app.post_json("/examples/tags", &json!({"name": "rust"}))
            .await,
        StatusCode::CREATED,
    )
    .await;
    let id = tag["id"].as_i64().unwrap();
    assert_eq!(tag, json!({"id": id, "name": "rust"}));
    assert_eq!(
        json(app.get(&format!("/tags/{id}")).await, StatusCode::OK).await,
        tag
    );
    // One uniqueness rule across both route sets.
    problem(
        app.post_json("/tags", &json!({"name": "rust"})).await,
        StatusCode::CONFLICT,
        "conflict",
    )
    .await;
    let list = json(app.get("/examples/tags").await, StatusCode::OK).await;
    assert_eq!(
        list,
        json!({"items": [tag], "limit": 20, "offset": 0, "total": 1, "next_offset": null})
    );
    let renamed = json(
        app.put_json(&format!("/examples/tags/{id}"), &json!({"name": "go"}))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(renamed, json!({"id": id, "name": "go"}));
    assert_eq!(
        json(
            app.get(&format!("/examples/tags/{id}")).await,
            StatusCode::OK
        )
        .await,
        renamed
    );
    let res = app.delete(&format!("/examples/tags/{id}")).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    problem(
        app.get(&format!("/examples/tags/{id}")).await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
}

/// A 401 `unauthorized` problem with this challenge, whose body reveals no secret.
async fn unauthorized(res: Response, challenge: &str) -> Value {
    assert_eq!(
        res.headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok()),
        Some(challenge)
    );
    let body = problem(res, StatusCode::UNAUTHORIZED, "unauthorized").await;
    let text = body.to_string();
    for secret in KEYS.iter().chain([&SECRET]) {
        assert!(!text.contains(secret), "{text} leaks a secret");
    }
    body
}

const KEY_CHALLENGE: &str = "ApiKey header=\"X-API-Key\"";

async fn with_keys(backend: Backend) -> Option<TestApp> {
    TestApp::spawn_with(backend, |s| {
        s.api_keys = KEYS.iter().map(|k| Secret::new(*k)).collect();
        s.service_name = "machine-test".to_owned();
    })
    .await
}

async fn machine_health_accepts_each_configured_key(backend: Backend) {
    let app = with_keys(backend).await.unwrap();
    for key in KEYS {
        let res = machine(&app, Some(("X-API-Key", key))).await;
        let body = json(res, StatusCode::OK).await;
        assert_eq!(
            body,
            json!({"status": "ok", "service": "machine-test", "credential_type": "api_key"})
        );
    }
}

async fn machine_health_refuses_wrong_and_missing_keys(backend: Backend) {
    let app = with_keys(backend).await.unwrap();
    let res = machine(&app, None).await;
    let body = unauthorized(res, KEY_CHALLENGE).await;
    assert_eq!(body["detail"], "The API key header is missing.");
    for wrong in [
        "key-alpha-123",
        "key-alpha-12345",
        "KEY-ALPHA-1234",
        "",
        "key-alpha-1234,key-beta-5678",
    ] {
        let res = machine(&app, Some(("X-API-Key", wrong))).await;
        let body = unauthorized(res, KEY_CHALLENGE).await;
        assert_eq!(body["detail"], "The API key is not valid.");
    }
    // A key in another header (or as a bearer token) is not an API key.
    let bearer = format!("Bearer {}", KEYS[0]);
    let res = machine(&app, Some(("Authorization", &bearer))).await;
    unauthorized(res, KEY_CHALLENGE).await;
}

async fn machine_health_reads_the_configured_header(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| {
        s.api_keys = vec![Secret::new(KEYS[0])];
        s.api_key_header = "X-Machine-Key".to_owned();
    })
    .await
    .unwrap();
    let res = machine(&app, Some(("x-machine-key", KEYS[0]))).await;
    assert_eq!(res.status(), StatusCode::OK);
    let res = machine(&app, Some(("X-API-Key", KEYS[0]))).await;
    unauthorized(res, "ApiKey header=\"X-Machine-Key\"").await;
}

async fn machine_health_without_configured_keys_is_always_401(app: TestApp) {
    for key in ["", "anything", KEYS[0]] {
        let res = machine(&app, Some(("X-API-Key", key))).await;
        let body = unauthorized(res, KEY_CHALLENGE).await;
        assert_eq!(body["detail"], "No API key is configured on this service.");
    }
}

async fn with_secret(backend: Backend, secret: &str) -> Option<TestApp> {
    let secret = secret.to_owned();
    TestApp::spawn_with(backend, move |s| s.jwt_secret = Some(Secret::new(secret))).await
}

/// `GET path` with at most one extra header.
async fn get_with(app: &TestApp, path: &str, header: Option<(&str, &str)>) -> Response {
    let mut req = app.request(reqwest::Method::GET, path);
    if let Some((name, value)) = header {
        req = req.header(name, value);
    }
    req.send().await.unwrap()
}

async fn machine(app: &TestApp, header: Option<(&str, &str)>) -> Response {
    get_with(app, "/machine/health", header).await
}

async fn get_protected(app: &TestApp, authorization: Option<&str>) -> Response {
    get_with(
        app,
        "/examples/protected",
        authorization.map(|v| ("authorization", v)),
    )
    .await
}

async fn protected_accepts_a_valid_hs256_token(backend: Backend) {
    let app = with_secret(backend, SECRET).await.unwrap();
    let claims = json!({"sub": "alice", "exp": now() + 60, "nbf": now() - 5, "role": ["a"]});
    let token = sign_hs256(&claims, SECRET.as_bytes());
    let res = get_protected(&app, Some(&format!("Bearer {token}"))).await;
    let body = json(res, StatusCode::OK).await;
    assert_eq!(body["claims"], claims);
    assert_eq!(body["message"], "Welcome, authenticated user.");
    assert_eq!(body.as_object().unwrap().len(), 2);
    // The scheme name is case-insensitive; a token without exp does not expire.
    let token = sign_hs256(&json!({"sub": "bob"}), SECRET.as_bytes());
    let res = get_protected(&app, Some(&format!("bearer {token}"))).await;
    assert_eq!(json(res, StatusCode::OK).await["claims"]["sub"], "bob");
    // Within the 30-second leeway.
    let token = sign_hs256(&json!({"exp": now() - 10}), SECRET.as_bytes());
    let res = get_protected(&app, Some(&format!("Bearer {token}"))).await;
    assert_eq!(res.status(), StatusCode::OK);
}

fn b64(text: &str) -> String {
    URL_SAFE_NO_PAD.encode(text)
}

/// A token with this header, HMAC-SHA256 signed with `secret` whatever its `alg` says.
fn with_header(header: &str, claims: &Value, secret: &str) -> String {
    let header: Value = serde_json::from_str(header).unwrap();
    sign_with_header(&header, claims, secret.as_bytes())
}

async fn protected_refuses_every_bad_token(backend: Backend) {
    let app = with_secret(backend, SECRET).await.unwrap();
    let claims = json!({"sub": "mallory"});
    let good = sign_hs256(&claims, SECRET.as_bytes());
    let (good_input, _) = good.rsplit_once('.').unwrap();
    let cases: Vec<(String, &str)> = vec![
        (
            format!(
                "{}.{}.",
                b64(r#"{"alg":"none","typ":"JWT"}"#),
                b64(r#"{"sub":"x"}"#)
            ),
            "The bearer token's algorithm is not accepted; only HS256 is.",
        ),
        (
            with_header(r#"{"alg":"RS256","typ":"JWT"}"#, &claims, SECRET),
            "The bearer token's algorithm is not accepted; only HS256 is.",
        ),
        (
            with_header(r#"{"alg":"HS512"}"#, &claims, SECRET),
            "The bearer token's algorithm is not accepted; only HS256 is.",
        ),
        ("not-a-jwt".to_owned(), "The bearer token is malformed."),
        ("a.b.c".to_owned(), "The bearer token is malformed."),
        (format!("{good}.extra"), "The bearer token is malformed."),
        ("x".repeat(9000), "The bearer token is malformed."),
        (
            sign_hs256(&claims, b"another-secret-that-is-32-bytes-long"),
            "The bearer token's signature is invalid.",
        ),
        (
            format!("{good_input}.{}", b64("0123456789abcdef0123456789abcdef")),
            "The bearer token's signature is invalid.",
        ),
        (
            sign_hs256(&json!({"exp": now() - 120}), SECRET.as_bytes()),
            "The bearer token has expired.",
        ),
        (
            sign_hs256(&json!({"nbf": now() + 3600}), SECRET.as_bytes()),
            "The bearer token is not valid yet.",
        ),
        (
            sign_hs256(&json!({"exp": "tomorrow"}), SECRET.as_bytes()),
            "The bearer token is malformed.",
        ),
    ];
    for (token, detail) in cases {
        let res = get_protected(&app, Some(&format!("Bearer {token}"))).await;
        let body = unauthorized(res, "Bearer").await;
        assert_eq!(body["detail"], detail, "{token}");
    }
    for header in [
        None,
        Some("Bearer"),
        Some("Bearer  "),
        Some(&*format!("Basic {good}")),
        Some(&*good),
    ] {
        let res = get_protected(&app, header).await;
        let body = unauthorized(res, "Bearer").await;
        assert_eq!(body["detail"], "A bearer token is required.");
    }
}

async fn protected_with_a_short_secret_is_always_401(backend: Backend) {
    let short = "only-31-bytes-long-secret-value";
    assert_eq!(short.len(), 31);
    let app = with_secret(backend, short).await.unwrap();
    let token = sign_hs256(&json!({"sub": "x"}), short.as_bytes());
    let res = get_protected(&app, Some(&format!("Bearer {token}"))).await;
    let body = unauthorized(res, "Bearer").await;
    assert!(!body.to_string().contains(short));
}

async fn protected_without_secret_is_always_401(app: TestApp) {
    let token = sign_hs256(&json!({"sub": "x"}), SECRET.as_bytes());
    let res = get_protected(&app, Some(&format!("Bearer {token}"))).await;
    unauthorized(res, "Bearer").await;
    unauthorized(get_protected(&app, None).await, "Bearer").await;
}
