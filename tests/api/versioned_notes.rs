//! Area C: one store behind /v1/notes (deprecated) and /v2/notes (spec 2.6, 4.3, 9 and
//! DECISIONS C): shapes key by key, cross-version reads, the deprecation headers on every V1
//! answer and on nothing else, paging, 422s, 404s, and the V1 usage counts.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{
    Backend, TestApp, app_on_own_runtime, field_errors, json, problem, test_settings,
};
use crate::{api_tests, backend_tests, sync_backend_tests};

api_tests!(
    v1_create_has_exactly_four_members,
    v2_create_wraps_the_full_record,
    a_note_reads_the_same_through_both_versions,
    lists_are_id_descending_in_their_shapes,
    list_paging_clamps_and_rejects_non_integers,
    create_without_a_valid_title_is_422,
    tags_must_be_an_array_of_strings,
    missing_ids_are_404_in_both_versions,
    every_v1_answer_carries_the_deprecation_headers,
    no_v2_or_other_answer_carries_them,
    other_version_prefixes_are_404,
    v1_calls_are_counted_per_caller,
);

backend_tests!(
    oversized_bodies_are_413_with_the_headers_on_v1_only,
    rate_limited_v1_answers_carry_the_headers,
    rfc9745_form_gives_the_deprecation_date,
    usage_counts_add_up_across_instances,
);

sync_backend_tests!(notes_round_trip_across_versions);

const SUNSET: &str = "Sat, 01 Jan 2027 00:00:00 GMT";
const LINK: &str = "</v2/notes>; rel=\"successor-version\"";

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

/// Asserts the three V1 headers, exactly.
fn assert_v1_headers(res: &Response, deprecation: &str) {
    let h = res.headers();
    let what = format!("{} {}", res.status(), res.url().path());
    assert_eq!(h.get_all("deprecation").iter().count(), 1, "{what}");
    assert_eq!(h["deprecation"], deprecation, "{what}");
    assert_eq!(h["sunset"], SUNSET, "{what}");
    assert_eq!(h["link"], LINK, "{what}");
}

fn assert_no_v1_headers(res: &Response) {
    // Spec §9.3: V2 answers carry none of V1's headers, `Link` included (no paging links
    // either). Other lists carry a `Link` of their own (pagination), never V1's successor link.
    if res.url().path().starts_with("/v2") {
        assert!(
            res.headers().get("link").is_none(),
            "{} {} carries a Link",
            res.status(),
            res.url()
        );
    }
    if let Some(link) = res.headers().get("link") {
        assert!(
            !link.to_str().unwrap().contains(LINK),
            "{} carries V1's link",
            res.url()
        );
    }
    for name in ["deprecation", "sunset"] {
        assert!(
            res.headers().get(name).is_none(),
            "{} {} carries {name}",
            res.status(),
            res.url().path()
        );
    }
}

async fn v1_create(app: &TestApp, body: Value) -> Value {
    json(app.post_json("/v1/notes", &body).await, StatusCode::CREATED).await
}

async fn v2_create(app: &TestApp, body: Value) -> Value {
    json(app.post_json("/v2/notes", &body).await, StatusCode::CREATED).await["data"].clone()
}

fn is_timestamp(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.len() == 20 && s.ends_with('Z') && &s[10..11] == "T")
}

async fn v1_create_has_exactly_four_members(app: TestApp) {
    let n = v1_create(
        &app,
        json!({"title": "T", "content": "C", "tags": ["ignored"], "body": "ignored"}),
    )
    .await;
    assert_eq!(keys(&n), ["content", "created_at", "id", "title"]);
    assert!(n["id"].as_i64().unwrap() > 0);
    assert_eq!((&n["title"], &n["content"]), (&json!("T"), &json!("C")));
    assert!(is_timestamp(&n["created_at"]));
    let bare = v1_create(&app, json!({"title": "only a title"})).await;
    assert_eq!(bare["content"], "", "content defaults to the empty string");
    let null = v1_create(&app, json!({"title": "t", "content": null})).await;
    assert_eq!(null["content"], "");
    let got = json(
        app.get(&format!("/v1/notes/{}", n["id"])).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(got, n, "V1 get is the flat V1 object");
    // V1 stores no tags, whatever it was sent.
    let v2 = json(
        app.get(&format!("/v2/notes/{}", n["id"])).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(v2["data"]["tags"], json!([]));
    assert_eq!(v2["data"]["body"], "C");
}

async fn v2_create_wraps_the_full_record(app: TestApp) {
    let res = app
        .post_json(
            "/v2/notes",
            &json!({"title": " T ", "body": "B 🎉", "tags": ["b", "a", "b", ""], "content": "x"}),
        )
        .await;
    let created = json(res, StatusCode::CREATED).await;
    assert_eq!(keys(&created), ["data"]);
    let n = &created["data"];
    assert_eq!(
        keys(n),
        ["body", "created_at", "id", "tags", "title", "updated_at"]
    );
    assert_eq!(n["title"], " T ", "stored as sent");
    assert_eq!(n["body"], "B 🎉");
    assert_eq!(
        n["tags"],
        json!(["b", "a", "b", ""]),
        "duplicates kept in order"
    );
    assert!(is_timestamp(&n["created_at"]));
    assert_eq!(n["updated_at"], n["created_at"]);
    let got = json(
        app.get(&format!("/v2/notes/{}", n["id"])).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(got, created, "V2 get is the same envelope");
    let bare = v2_create(&app, json!({"title": "t"})).await;
    assert_eq!((&bare["body"], &bare["tags"]), (&json!(""), &json!([])));
    let nulls = v2_create(&app, json!({"title": "t", "body": null, "tags": null})).await;
    assert_eq!((&nulls["body"], &nulls["tags"]), (&json!(""), &json!([])));
}

async fn a_note_reads_the_same_through_both_versions(app: TestApp) {
    let v2 = v2_create(
        &app,
        json!({"title": "shared", "body": "text", "tags": ["x"]}),
    )
    .await;
    let id = v2["id"].as_i64().unwrap();
    let v1 = json(app.get(&format!("/v1/notes/{id}")).await, StatusCode::OK).await;
    assert_eq!(
        v1,
        json!({"id": id, "title": "shared", "content": "text", "created_at": v2["created_at"]})
    );
    let v1_made = v1_create(&app, json!({"title": "old", "content": "client"})).await;
    let id = v1_made["id"].as_i64().unwrap();
    let read = json(app.get(&format!("/v2/notes/{id}")).await, StatusCode::OK).await;
    assert_eq!(
        read["data"],
        json!({"id": id, "title": "old", "body": "client", "tags": [],
               "created_at": v1_made["created_at"], "updated_at": v1_made["created_at"]})
    );
    // Area A's notes are another store.
    let a = json(app.get("/notes").await, StatusCode::OK).await;
    assert_eq!(a["total"], 0);
}

async fn lists_are_id_descending_in_their_shapes(app: TestApp) {
    let empty1 = json(app.get("/v1/notes").await, StatusCode::OK).await;
    assert_eq!(empty1, json!({"notes": []}));
    let empty2 = json(app.get("/v2/notes").await, StatusCode::OK).await;
    assert_eq!(
        empty2,
        json!({"data": [], "meta": {"limit": 20, "offset": 0, "total": 0}})
    );
    let mut ids = Vec::new();
    for i in 0..25 {
        let n = if i % 2 == 0 {
            v1_create(&app, json!({"title": format!("n{i}")})).await
        } else {
            v2_create(
                &app,
                json!({"title": format!("n{i}"), "tags": [i.to_string()]}),
            )
            .await
        };
        ids.push(n["id"].as_i64().unwrap());
    }
    ids.reverse();
    let v1 = json(app.get("/v1/notes").await, StatusCode::OK).await;
    assert_eq!(keys(&v1), ["notes"]);
    let notes = v1["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 20, "default limit 20");
    for n in notes {
        assert_eq!(keys(n), ["content", "created_at", "id", "title"]);
    }
    let got: Vec<i64> = notes.iter().map(|n| n["id"].as_i64().unwrap()).collect();
    assert_eq!(got, ids[..20]);
    let v2 = json(app.get("/v2/notes?offset=20").await, StatusCode::OK).await;
    assert_eq!(keys(&v2), ["data", "meta"]);
    assert_eq!(v2["meta"], json!({"limit": 20, "offset": 20, "total": 25}));
    let got: Vec<i64> = v2["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_i64().unwrap())
        .collect();
    assert_eq!(got, ids[20..]);
    assert_eq!(
        keys(&v2["data"][0]),
        ["body", "created_at", "id", "tags", "title", "updated_at"]
    );
    let v1_page = json(app.get("/v1/notes?limit=3&offset=2").await, StatusCode::OK).await;
    let got: Vec<i64> = v1_page["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_i64().unwrap())
        .collect();
    assert_eq!(got, ids[2..5]);
}

async fn list_paging_clamps_and_rejects_non_integers(app: TestApp) {
    for i in 0..3 {
        v2_create(&app, json!({"title": format!("n{i}")})).await;
    }
    for (query, limit, offset) in [
        ("limit=0", 1, 0),
        ("limit=-4", 1, 0),
        ("limit=1000", 100, 0),
        ("offset=-7", 20, 0),
        ("limit=2&offset=1", 2, 1),
        ("offset=50", 20, 50),
    ] {
        let v2 = json(app.get(&format!("/v2/notes?{query}")).await, StatusCode::OK).await;
        assert_eq!(
            v2["meta"],
            json!({"limit": limit, "offset": offset, "total": 3}),
            "{query}"
        );
        let n = v2["data"].as_array().unwrap().len();
        let v1 = json(app.get(&format!("/v1/notes?{query}")).await, StatusCode::OK).await;
        assert_eq!(v1["notes"].as_array().unwrap().len(), n, "{query}");
    }
    for version in ["v1", "v2"] {
        for (query, fields) in [
            ("limit=x", vec!["limit"]),
            ("offset=1.5", vec!["offset"]),
            ("limit=", vec!["limit"]),
            ("limit=a&offset=b", vec!["limit", "offset"]),
        ] {
            let res = app.get(&format!("/{version}/notes?{query}")).await;
            if version == "v1" {
                assert_v1_headers(&res, "true");
            }
            let p = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
            let got: Vec<String> = field_errors(&p).into_iter().map(|(f, _)| f).collect();
            assert_eq!(got, fields, "{version} {query}");
        }
    }
}

async fn create_without_a_valid_title_is_422(app: TestApp) {
    for version in ["v1", "v2"] {
        for (body, code) in [
            (json!({}), "required"),
            (json!({"content": "c", "body": "b"}), "required"),
            (json!({"title": null}), "required"),
            (json!({"title": ""}), "required"),
            (json!({"title": " \t\n"}), "required"),
            (json!({"title": 42}), "invalid_type"),
            (json!({"title": ["t"]}), "invalid_type"),
            (json!({"title": "x".repeat(501)}), "too_long"),
            (json!({"title": "a\u{0}b"}), "invalid"),
        ] {
            let res = app.post_json(&format!("/{version}/notes"), &body).await;
            let p = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
            assert_eq!(
                field_errors(&p),
                [("title".to_owned(), code.to_owned())],
                "{version} {body}"
            );
        }
        for raw in ["not json", "[1,2]", "\"title\""] {
            let res = app
                .send_raw(
                    Method::POST,
                    &format!("/{version}/notes"),
                    "application/json",
                    raw,
                )
                .await;
            let p = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
            assert_eq!(field_errors(&p)[0].0, "body");
        }
    }
    let p = problem(
        app.post_json("/v1/notes", &json!({"title": "", "content": 5}))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(
        field_errors(&p),
        [
            ("title".to_owned(), "required".to_owned()),
            ("content".to_owned(), "invalid_type".to_owned())
        ]
    );
    let p = problem(
        app.post_json("/v2/notes", &json!({"title": "t", "body": {"x": 1}}))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(
        field_errors(&p),
        [("body".to_owned(), "invalid_type".to_owned())]
    );
    let v2 = json(app.get("/v2/notes").await, StatusCode::OK).await;
    assert_eq!(v2["meta"]["total"], 0, "nothing invalid was stored");
}

async fn tags_must_be_an_array_of_strings(app: TestApp) {
    for (tags, field, code) in [
        (json!("a,b"), "tags", "invalid_type"),
        (json!({"a": 1}), "tags", "invalid_type"),
        (json!(3), "tags", "invalid_type"),
        (json!(["a", 1]), "tags[1]", "invalid_type"),
        (json!([null]), "tags[0]", "invalid_type"),
        (json!([["nested"]]), "tags[0]", "invalid_type"),
        (json!(["x".repeat(101)]), "tags[0]", "too_long"),
        (json!(["\u{0}"]), "tags[0]", "invalid"),
        (json!(vec!["t"; 101]), "tags", "too_long"),
    ] {
        let res = app
            .post_json("/v2/notes", &json!({"title": "t", "tags": tags}))
            .await;
        let p = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
        assert_eq!(
            field_errors(&p),
            [(field.to_owned(), code.to_owned())],
            "{tags}"
        );
    }
    let n = v2_create(&app, json!({"title": "t", "tags": vec!["dup"; 100]})).await;
    assert_eq!(n["tags"].as_array().unwrap().len(), 100);
}

async fn missing_ids_are_404_in_both_versions(app: TestApp) {
    for path in ["/v1/notes/424242", "/v2/notes/424242"] {
        let res = app.get(path).await;
        let v1 = path.starts_with("/v1");
        if v1 {
            assert_v1_headers(&res, "true");
        } else {
            assert_no_v1_headers(&res);
        }
        let p = problem(res, StatusCode::NOT_FOUND, "not-found").await;
        assert_eq!(p["detail"], "Note 424242 does not exist.");
    }
    for version in ["v1", "v2"] {
        for id in ["abc", "1.5", "99999999999999999999", "0", "-1"] {
            let res = app.get(&format!("/{version}/notes/{id}")).await;
            problem(res, StatusCode::NOT_FOUND, "not-found").await;
        }
    }
    // An area A note's id is not a versioned note.
    let a = app.create_note("area A", "x").await;
    let res = app.get(&format!("/v2/notes/{}", a["id"])).await;
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
}

async fn every_v1_answer_carries_the_deprecation_headers(app: TestApp) {
    let created = app.post_json("/v1/notes", &json!({"title": "t"})).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    assert_v1_headers(&created, "true");
    let id = created.json::<Value>().await.unwrap()["id"].clone();
    let cases: Vec<(Response, StatusCode)> = vec![
        (app.get("/v1/notes").await, StatusCode::OK),
        (app.get(&format!("/v1/notes/{id}")).await, StatusCode::OK),
        (app.get("/v1/notes/987654").await, StatusCode::NOT_FOUND),
        (app.get("/v1/notes/abc").await, StatusCode::NOT_FOUND),
        (app.get("/v1/unknown").await, StatusCode::NOT_FOUND),
        (app.get("/v1").await, StatusCode::NOT_FOUND),
        (
            app.get("/v1/notes?limit=x").await,
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            app.post_json("/v1/notes", &json!({})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            app.request(Method::DELETE, "/v1/notes")
                .send()
                .await
                .unwrap(),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            app.request(Method::PUT, &format!("/v1/notes/{id}"))
                .send()
                .await
                .unwrap(),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            app.send_raw(Method::POST, "/v1/notes", "text/plain", "title")
                .await,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
    ];
    for (res, status) in cases {
        assert_eq!(res.status(), status, "{}", res.url());
        assert_v1_headers(&res, "true");
        // The usual headers are still there.
        assert!(res.headers().contains_key("x-request-id"));
        assert_eq!(res.headers()["x-content-type-options"], "nosniff");
        let slug = match status.as_u16() {
            404 => "not-found",
            405 => "method-not-allowed",
            415 => "unsupported-media-type",
            422 => "validation-failed",
            _ => continue,
        };
        problem(res, status, slug).await;
    }
    let res = app
        .request(Method::DELETE, "/v1/notes")
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["allow"], "GET, HEAD, POST");
}

async fn no_v2_or_other_answer_carries_them(app: TestApp) {
    for _ in 0..3 {
        let created = app.post_json("/v2/notes", &json!({"title": "t"})).await;
        assert_eq!(created.status(), StatusCode::CREATED);
        assert_no_v1_headers(&created);
    }
    let cases: Vec<Response> = vec![
        app.get("/v2/notes").await,
        // Pages with a next, a previous and a first page: still no `Link`.
        app.get("/v2/notes?limit=1").await,
        app.get("/v2/notes?limit=1&offset=1").await,
        app.get("/v2/notes?offset=10").await,
        app.request(Method::HEAD, "/v2/notes?limit=1")
            .send()
            .await
            .unwrap(),
        app.get("/v2/notes/1").await,
        app.get("/v2/notes/987654").await,
        app.get("/v2/notes?limit=x").await,
        app.post_json("/v2/notes", &json!({})).await,
        app.request(Method::DELETE, "/v2/notes")
            .send()
            .await
            .unwrap(),
        app.send_raw(Method::POST, "/v2/notes", "text/plain", "title")
            .await,
        app.get("/v2").await,
        app.get("/v3/notes").await,
        app.get("/v1notes").await,
        app.get("/notes").await,
        app.get("/health").await,
        app.get("/articles/cursor").await,
        app.get("/metrics/v1-usage").await,
        app.get("/openapi.json").await,
    ];
    for res in cases {
        assert_no_v1_headers(&res);
    }
}

async fn other_version_prefixes_are_404(app: TestApp) {
    for path in [
        "/v3/notes",
        "/v3/notes/1",
        "/v3",
        "/v0/notes",
        "/v2.1/notes",
        "/V1/notes",
        "/v10/notes",
        "/v2/notes/1/extra",
    ] {
        let res = app.get(path).await;
        assert_no_v1_headers(&res);
        let p = problem(res, StatusCode::NOT_FOUND, "not-found").await;
        assert!(
            p["detail"]
                .as_str()
                .unwrap()
                .starts_with("No resource exists at")
        );
    }
    let res = app.post_json("/v3/notes", &json!({"title": "t"})).await;
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
}

async fn usage(app: &TestApp) -> Value {
    json(app.get("/metrics/v1-usage?limit=100").await, StatusCode::OK).await
}

/// The usage list once `done` holds for it, polled for up to 20 s: another instance writes its
/// tally of V1 calls about once a second.
async fn usage_once(app: &TestApp, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let u = usage(app).await;
        if done(&u) || std::time::Instant::now() > deadline {
            return u;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

async fn v1_calls_are_counted_per_caller(app: TestApp) {
    assert_eq!(
        usage(&app).await,
        json!({"items": [], "limit": 100, "offset": 0, "total": 0, "next_offset": null})
    );
    for (user, path) in [
        (Some("alice"), "/v1/notes"),
        (Some("alice"), "/v1/notes/999"),
        (Some("alice"), "/v1/nope"),
        (Some("bob"), "/v1/notes"),
        (None, "/v1/notes"),
        (None, "/v1/notes"),
        (Some("has space"), "/v1/notes"),
        (Some("carol"), "/v2/notes"),
        (Some("carol"), "/notes"),
    ] {
        let mut req = app.request(Method::GET, path);
        if let Some(user) = user {
            req = req.header("x-user-id", user);
        }
        req.send().await.unwrap();
    }
    let u = usage(&app).await;
    let rows: Vec<(String, i64)> = u["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(keys(r), ["caller", "calls", "first_seen", "last_seen"]);
            assert!(is_timestamp(&r["first_seen"]) && is_timestamp(&r["last_seen"]));
            (
                r["caller"].as_str().unwrap().to_owned(),
                r["calls"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("ip:127.0.0.1".to_owned(), 3),
            ("user:alice".to_owned(), 3),
            ("user:bob".to_owned(), 1),
        ],
        "V2, area A and the usage route itself are not counted"
    );
    assert_eq!(u["total"], 3);
    let page = json(
        app.get("/metrics/v1-usage?limit=1&offset=1").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(page["items"][0]["caller"], "user:alice");
    let res = app.get("/metrics/v1-usage?limit=x").await;
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
}

async fn oversized_bodies_are_413_with_the_headers_on_v1_only(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.max_body_bytes = 256)
        .await
        .unwrap();
    let big = json!({"title": "t", "content": "x".repeat(1000), "body": "x".repeat(1000)});
    let res = app.post_json("/v1/notes", &big).await;
    assert_v1_headers(&res, "true");
    problem(res, StatusCode::PAYLOAD_TOO_LARGE, "payload-too-large").await;
    let res = app.post_json("/v2/notes", &big).await;
    assert_no_v1_headers(&res);
    problem(res, StatusCode::PAYLOAD_TOO_LARGE, "payload-too-large").await;
    let res = app.post_json("/articles", &big).await;
    problem(res, StatusCode::PAYLOAD_TOO_LARGE, "payload-too-large").await;
}

async fn rate_limited_v1_answers_carry_the_headers(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.rate_limit_per_minute = Some(2))
        .await
        .unwrap();
    assert_eq!(app.get("/v1/notes").await.status(), StatusCode::OK);
    assert_eq!(app.get("/v2/notes").await.status(), StatusCode::OK);
    let res = app.get("/v1/notes").await;
    assert_v1_headers(&res, "true");
    assert!(res.headers().contains_key("retry-after"));
    problem(res, StatusCode::TOO_MANY_REQUESTS, "too-many-requests").await;
    let res = app.get("/v2/notes").await;
    assert_no_v1_headers(&res);
    problem(res, StatusCode::TOO_MANY_REQUESTS, "too-many-requests").await;
}

async fn rfc9745_form_gives_the_deprecation_date(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| {
        s.deprecation_form = versioned_notes::DeprecationForm::Rfc9745;
    })
    .await
    .unwrap();
    let res = app.post_json("/v1/notes", &json!({"title": "t"})).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    // 2026-01-01T00:00:00Z
    assert_v1_headers(&res, "@1767225600");
    let res = app.get("/v1/notes/999").await;
    assert_v1_headers(&res, "@1767225600");
    assert_no_v1_headers(&app.get("/v2/notes").await);
}

/// Two instances on one database count into the same table.
async fn usage_counts_add_up_across_instances(backend: Backend) {
    let app = TestApp::spawn(backend).await.unwrap();
    let second = server::Application::build(test_settings(&app.db))
        .await
        .unwrap();
    let second_url = format!("http://127.0.0.1:{}", second.port());
    let handle = second.handle();
    tokio::spawn(second.run_until_stopped());
    for base in [&app.address, &second_url, &second_url] {
        let res = app
            .client
            .get(format!("{base}/v1/notes"))
            .header("x-user-id", "42")
            .send()
            .await
            .unwrap();
        assert_v1_headers(&res, "true");
    }
    // The first instance's call is written before its answer; the second's arrive with its
    // next write of the tally, about a second later (nothing reads through it).
    let u = usage_once(&app, |u| u["items"][0]["calls"] == 3).await;
    assert_eq!(
        u["items"],
        json!([{
            "caller": "user:42", "calls": 3,
            "first_seen": u["items"][0]["first_seen"], "last_seen": u["items"][0]["last_seen"]
        }])
    );
    handle.stop(false).await;
}

/// Spec 4.3 rule 3: random notes created through one version read back through the other (and
/// through their own), in the reading version's shape, by id and in the lists.
fn notes_round_trip_across_versions(backend: Backend) {
    let (app, rt) = app_on_own_runtime(backend).unwrap();
    let text = "[^\u{0}]{0,40}";
    let title = "[^\u{0}]{0,10}[^\\s\u{0}][^\u{0}]{0,10}";
    let note = (
        any::<bool>(),
        title,
        text,
        proptest::collection::vec("[^\u{0}]{0,12}", 0..6),
    );
    let mut runner = TestRunner::new(Config {
        cases: 24,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&proptest::collection::vec(note, 1..5), |notes| {
            rt.block_on(async {
                let mut made = Vec::new();
                for (through_v1, title, body, tags) in notes {
                    let id = if through_v1 {
                        let n = v1_create(&app, json!({"title": title, "content": body})).await;
                        prop_assert_eq!(&n["content"], &json!(body));
                        n["id"].as_i64().unwrap()
                    } else {
                        let n =
                            v2_create(&app, json!({"title": title, "body": body, "tags": tags}))
                                .await;
                        prop_assert_eq!(&n["tags"], &json!(tags));
                        n["id"].as_i64().unwrap()
                    };
                    let stored_tags = if through_v1 { vec![] } else { tags };
                    let v1 = json(app.get(&format!("/v1/notes/{id}")).await, StatusCode::OK).await;
                    let v2 = json(app.get(&format!("/v2/notes/{id}")).await, StatusCode::OK).await;
                    prop_assert_eq!(keys(&v1), ["content", "created_at", "id", "title"]);
                    prop_assert_eq!(
                        &v2["data"],
                        &json!({"id": id, "title": title, "body": body, "tags": stored_tags,
                                "created_at": v1["created_at"], "updated_at": v1["created_at"]})
                    );
                    prop_assert_eq!(
                        &v1,
                        &json!({"id": id, "title": title, "content": body,
                                "created_at": v1["created_at"]})
                    );
                    made.push((v1, v2["data"].clone()));
                }
                let n = made.len();
                let list1 = json(
                    app.get(&format!("/v1/notes?limit={n}")).await,
                    StatusCode::OK,
                )
                .await;
                let list2 = json(
                    app.get(&format!("/v2/notes?limit={n}")).await,
                    StatusCode::OK,
                )
                .await;
                made.reverse();
                let (v1s, v2s): (Vec<Value>, Vec<Value>) = made.into_iter().unzip();
                prop_assert_eq!(&list1["notes"], &json!(v1s));
                prop_assert_eq!(&list2["data"], &json!(v2s));
                Ok(())
            })
        })
        .unwrap();
}

#[tokio::test]
async fn openapi_marks_v1_deprecated_and_documents_its_headers() {
    let doc = server::openapi::generate().await;
    let paths = doc["paths"].as_object().unwrap();
    for (path, method, id) in [
        ("/v1/notes", "post", "create_note_v1"),
        ("/v1/notes", "get", "list_notes_v1"),
        ("/v1/notes/{id}", "get", "get_note_v1"),
        ("/v2/notes", "post", "create_note_v2"),
        ("/v2/notes", "get", "list_notes_v2"),
        ("/v2/notes/{id}", "get", "get_note_v2"),
        ("/metrics/v1-usage", "get", "v1_usage"),
        ("/articles", "post", "create_article"),
        ("/articles/offset", "get", "list_articles_offset"),
        ("/articles/cursor", "get", "list_articles_cursor"),
    ] {
        let op = &paths[path][method];
        assert_eq!(op["operationId"], id);
        let v1 = path.starts_with("/v1/");
        assert_eq!(op["deprecated"], v1, "{id}");
        let responses = op["responses"].as_object().unwrap();
        assert!(responses.len() >= 2, "{id} documents its errors");
        for (status, response) in responses {
            let headers = response.get("headers");
            // Storage faults (503, 507) document Retry-After on every operation.
            let fault = status == "503" || status == "507";
            // A create's 201 may be the replay of a retried Idempotency-Key, and carries the
            // new resource's ETag; article lists link their pages (V2's list does not: spec
            // §9.3); a V2 read is tagged (200 and 304).
            let replayable = method == "post" && status == "201" && path != "/metrics/v1-usage";
            let mut own: Vec<&str> = Vec::new();
            if fault {
                own.push("Retry-After");
            }
            if replayable {
                own.extend(["ETag", "Idempotent-Replayed", "Location"]);
            }
            if status == "200" && (id.starts_with("list_articles") || id == "v1_usage") {
                own.push("Link");
            }
            if id == "get_note_v2" && (status == "200" || status == "304") {
                own.push("ETag");
            }
            if v1 {
                let h = headers.unwrap_or_else(|| panic!("{id} {status}"));
                let mut want = vec!["Deprecation", "Link", "Sunset"];
                want.extend(own);
                want.sort_unstable();
                assert_eq!(keys(h), want, "{id} {status}");
                assert_eq!(h["Sunset"]["schema"]["enum"], json!([SUNSET]));
                assert_eq!(h["Link"]["schema"]["enum"], json!([LINK]));
            } else if own.is_empty() {
                assert!(headers.is_none(), "{id} {status}");
            } else {
                own.sort_unstable();
                assert_eq!(keys(headers.unwrap()), own, "{id} {status}");
            }
        }
    }
    let links = |id: &str, status: &str| {
        let (path, method) = if id.ends_with("v1") {
            ("/v1/notes", "post")
        } else {
            ("/v2/notes", "post")
        };
        paths[path][method]["responses"][status]["links"].clone()
    };
    assert_eq!(
        links("create_note_v1", "201")["GetNoteV2"],
        json!({"operationId": "get_note_v2", "parameters": {"id": "$response.body#/id"}})
    );
    assert_eq!(
        links("create_note_v2", "201")["GetNoteV2"],
        json!({"operationId": "get_note_v2", "parameters": {"id": "$response.body#/data/id"}})
    );
    assert_eq!(
        links("create_note_v2", "201")["GetNoteV1"]["operationId"],
        "get_note_v1"
    );
}
