//! RFC 9110 conditional requests: strong ETags on single-resource reads and write answers,
//! 304 for a matching If-None-Match, 412 for a stale If-Match on PUT and DELETE with nothing
//! written, and one winner among concurrent edits of one version.

use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};

use crate::api_tests;
use crate::helpers::{TestApp, json, problem};

api_tests!(
    reads_carry_an_etag_and_answer_304_to_a_matching_if_none_match,
    a_stale_if_match_is_412_and_writes_nothing,
    concurrent_edits_of_one_version_have_one_winner,
    an_account_is_tagged_by_its_last_sequence_and_appends_honour_if_match,
);

fn tag_of(res: &Response) -> String {
    res.headers()["etag"].to_str().unwrap().to_owned()
}

async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    header: Option<(&str, &str)>,
    body: Option<&Value>,
) -> Response {
    let mut req = app.request(method, path);
    if let Some((name, value)) = header {
        req = req.header(name, value);
    }
    if let Some(body) = body {
        req = req.json(body);
    }
    req.send().await.unwrap()
}

/// A created note, tag, comment and V2 note: (item path, PUT body or none).
async fn resources(app: &TestApp) -> Vec<(String, Option<Value>, Response)> {
    let note = app.create_note("n", "b").await;
    let mut out = Vec::new();
    for (create, body, item, put) in [
        (
            "/notes".to_owned(),
            json!({"title": "t", "body": "b"}),
            "/notes",
            Some(json!({"title": "t2", "body": "b2"})),
        ),
        (
            "/tags".to_owned(),
            json!({"name": "tag"}),
            "/tags",
            Some(json!({"name": "tag2"})),
        ),
        (
            format!("/notes/{}/comments", note["id"]),
            json!({"body": "c"}),
            "",
            Some(json!({"body": "c2"})),
        ),
        (
            "/v2/notes".to_owned(),
            json!({"title": "v", "body": "b", "tags": []}),
            "/v2/notes",
            None,
        ),
    ] {
        let res = app.post_json(&create, &body).await;
        assert_eq!(res.status(), StatusCode::CREATED);
        let created = res;
        let tag = tag_of(&created);
        let value: Value = created.json().await.unwrap();
        let id = value.get("id").or(value["data"].get("id")).unwrap().clone();
        let path = if item.is_empty() {
            format!("{create}/{id}")
        } else {
            format!("{item}/{id}")
        };
        let get = app.get(&path).await;
        assert_eq!(tag_of(&get), tag, "{path}: the create's ETag is the read's");
        out.push((path, put, get));
    }
    out
}

async fn reads_carry_an_etag_and_answer_304_to_a_matching_if_none_match(app: TestApp) {
    for (path, _, get) in resources(&app).await {
        assert_eq!(get.status(), StatusCode::OK);
        let tag = tag_of(&get);
        assert!(
            tag.starts_with('"') && tag.ends_with('"'),
            "{path}: strong tag {tag}"
        );
        for header in [
            tag.clone(),
            format!("\"other\", {tag}"),
            format!("W/{tag}"),
            "*".to_owned(),
        ] {
            let res = send(
                &app,
                Method::GET,
                &path,
                Some(("If-None-Match", &header)),
                None,
            )
            .await;
            assert_eq!(res.status(), StatusCode::NOT_MODIFIED, "{path} {header}");
            assert_eq!(tag_of(&res), tag);
            assert!(res.bytes().await.unwrap().is_empty());
        }
        let res = send(
            &app,
            Method::GET,
            &path,
            Some(("If-None-Match", "\"other\"")),
            None,
        )
        .await;
        assert_eq!(res.status(), StatusCode::OK, "{path}");
    }
}

async fn a_stale_if_match_is_412_and_writes_nothing(app: TestApp) {
    for (path, put, get) in resources(&app).await {
        let Some(put) = put else { continue };
        let old = tag_of(&get);
        let before = get.bytes().await.unwrap();
        // A tag it never had, a weak form of its own (If-Match compares strongly), and lists
        // that name no current tag: empty, blank, only commas, `*` inside a list (RFC 9110
        // §13.1.1: `*` counts only as the whole value), malformed elements.
        for stale in [
            "\"0123\"".to_owned(),
            format!("W/{old}"),
            String::new(),
            " ".to_owned(),
            ",".to_owned(),
            " , ,".to_owned(),
            "\"stale\", *".to_owned(),
            "*, \"stale\"".to_owned(),
            old.trim_matches('"').to_owned(),
        ] {
            let res = send(
                &app,
                Method::PUT,
                &path,
                Some(("If-Match", &stale)),
                Some(&put),
            )
            .await;
            problem(res, StatusCode::PRECONDITION_FAILED, "precondition-failed").await;
            let res = send(
                &app,
                Method::DELETE,
                &path,
                Some(("If-Match", &stale)),
                None,
            )
            .await;
            problem(res, StatusCode::PRECONDITION_FAILED, "precondition-failed").await;
            assert_eq!(
                app.get(&path).await.bytes().await.unwrap(),
                before,
                "{path}: unchanged"
            );
        }
        // The current tag: the write happens and answers the new tag.
        let res = send(
            &app,
            Method::PUT,
            &path,
            Some(("If-Match", &old)),
            Some(&put),
        )
        .await;
        assert_eq!(res.status(), StatusCode::OK, "{path}");
        let new = tag_of(&res);
        assert_ne!(new, old);
        assert_eq!(tag_of(&app.get(&path).await), new);
        // The old tag is stale now, for PUT and DELETE alike.
        let res = send(&app, Method::DELETE, &path, Some(("If-Match", &old)), None).await;
        problem(res, StatusCode::PRECONDITION_FAILED, "precondition-failed").await;
        // `*` asks only that it exists.
        let res = send(
            &app,
            Method::PUT,
            &path,
            Some(("If-Match", "*")),
            Some(&put),
        )
        .await;
        assert_eq!(res.status(), StatusCode::OK);
        let res = send(&app, Method::DELETE, &path, Some(("If-Match", &new)), None).await;
        assert_eq!(res.status(), StatusCode::NO_CONTENT, "{path}");
        assert_eq!(app.get(&path).await.status(), StatusCode::NOT_FOUND);
        // Without If-Match writes stay unconditional (a missing resource is still 404).
        let res = send(&app, Method::DELETE, &path, Some(("If-Match", "*")), None).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
    }
}

async fn concurrent_edits_of_one_version_have_one_winner(app: TestApp) {
    let note = app.create_note("shared", "draft").await;
    let path = format!("/notes/{}", note["id"]);
    let tag = tag_of(&app.get(&path).await);
    let edits = (0..8).map(|i| {
        app.request(Method::PUT, &path)
            .header("If-Match", &tag)
            .json(&json!({"title": "shared", "body": format!("edit {i}")}))
            .send()
    });
    let mut won = Vec::new();
    for res in futures_util::future::join_all(edits).await {
        let res = res.unwrap();
        match res.status() {
            StatusCode::OK => won.push(json(res, StatusCode::OK).await["body"].clone()),
            StatusCode::PRECONDITION_FAILED => {
                problem(res, StatusCode::PRECONDITION_FAILED, "precondition-failed").await;
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(won.len(), 1, "one edit of that version wins: {won:?}");
    let now = json(app.get(&path).await, StatusCode::OK).await;
    assert_eq!(now["body"], won[0]);
}

async fn an_account_is_tagged_by_its_last_sequence_and_appends_honour_if_match(app: TestApp) {
    let opened = app
        .post_json("/accounts", &json!({"account_id": "a", "owner": "o"}))
        .await;
    assert_eq!(
        tag_of(&opened),
        "\"1\"",
        "the open answers the account's tag"
    );
    json(opened, StatusCode::CREATED).await;
    let res = app.get("/accounts/a").await;
    assert_eq!(tag_of(&res), "\"1\"");
    let res = send(
        &app,
        Method::GET,
        "/accounts/a",
        Some(("If-None-Match", "\"1\"")),
        None,
    )
    .await;
    assert_eq!(res.status(), StatusCode::NOT_MODIFIED);
    let deposit = json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 5}});
    // Stale, malformed, weak, empty, `*` inside a list, or disagreeing with the body's
    // expected_sequence: 412, nothing written.
    for (tag, body) in [
        ("\"2\"", deposit.clone()),
        ("\"x\"", deposit.clone()),
        ("W/\"1\"", deposit.clone()),
        ("", deposit.clone()),
        (",", deposit.clone()),
        ("\"2\", *", deposit.clone()),
        ("1", deposit.clone()),
        (
            "\"1\"",
            json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 5}, "expected_sequence": 2}),
        ),
    ] {
        let res = send(
            &app,
            Method::POST,
            "/accounts/a/events",
            Some(("If-Match", tag)),
            Some(&body),
        )
        .await;
        problem(res, StatusCode::PRECONDITION_FAILED, "precondition-failed").await;
    }
    assert_eq!(event_count(&app).await, 1);
    // The current tag: appended, and the account's tag moves on.
    let res = send(
        &app,
        Method::POST,
        "/accounts/a/events",
        Some(("If-Match", "\"1\"")),
        Some(&deposit),
    )
    .await;
    assert_eq!(
        tag_of(&res),
        "\"2\"",
        "an append answers the account's new tag"
    );
    assert_eq!(json(res, StatusCode::CREATED).await["sequence"], 2);
    assert_eq!(tag_of(&app.get("/accounts/a").await), "\"2\"");
    let res = send(
        &app,
        Method::POST,
        "/accounts/a/events",
        Some(("If-Match", "*")),
        Some(&deposit),
    )
    .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    // Of eight appends at one version, one is written.
    let appends = (0..8).map(|_| {
        app.request(Method::POST, "/accounts/a/events")
            .header("If-Match", "\"3\"")
            .json(&deposit)
            .send()
    });
    let statuses: Vec<StatusCode> = futures_util::future::join_all(appends)
        .await
        .into_iter()
        .map(|r| r.unwrap().status())
        .collect();
    assert_eq!(
        statuses
            .iter()
            .filter(|s| **s == StatusCode::CREATED)
            .count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses
            .iter()
            .all(|s| *s == StatusCode::CREATED || *s == StatusCode::PRECONDITION_FAILED)
    );
    assert_eq!(event_count(&app).await, 4);
}

async fn event_count(app: &TestApp) -> i64 {
    json(app.get("/accounts/a/events").await, StatusCode::OK).await["total"]
        .as_i64()
        .unwrap()
}

/// Reads document ETag, If-None-Match and 304; PUT and DELETE document If-Match and 412.
#[tokio::test]
async fn the_document_shows_the_conditional_headers() {
    let doc = serde_json::to_value(server::openapi::generate().await).unwrap();
    let param = |op: &Value, name: &str| {
        op["parameters"]
            .as_array()
            .is_some_and(|ps| ps.iter().any(|p| p["name"] == name && p["in"] == "header"))
    };
    for path in [
        "/notes/{note_id}",
        "/tags/{tag_id}",
        "/notes/{note_id}/comments/{comment_id}",
        "/v2/notes/{id}",
        "/examples/notes/{id}",
    ] {
        let item = &doc["paths"][path];
        assert!(item.is_object(), "{path}");
        let get = &item["get"];
        assert!(param(get, "If-None-Match"), "{path}");
        assert!(
            get["responses"]["200"]["headers"]["ETag"].is_object(),
            "{path}"
        );
        assert!(get["responses"]["304"].is_object(), "{path}");
        if path.starts_with("/v2") || path.starts_with("/accounts") {
            continue;
        }
        for method in ["put", "delete"] {
            assert!(param(&item[method], "If-Match"), "{method} {path}");
            assert!(
                item[method]["responses"]["412"].is_object(),
                "{method} {path}"
            );
        }
        assert!(
            item["put"]["responses"]["200"]["headers"]["ETag"].is_object(),
            "{path}"
        );
    }
    // Only reads answer 304: a write's answer is what it made.
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if method != "get" {
                assert!(op["responses"]["304"].is_null(), "{method} {path}");
            }
        }
    }
    // Account writes answer the account's tag.
    for path in ["/accounts", "/accounts/{id}/events"] {
        assert!(
            doc["paths"][path]["post"]["responses"]["201"]["headers"]["ETag"].is_object(),
            "{path}"
        );
    }
}
