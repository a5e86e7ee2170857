use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::api_tests;
use crate::helpers::{TestApp, field_errors, json, problem};

api_tests!(
    create_returns_201_with_the_note,
    get_update_delete_round_trip,
    missing_notes_are_404_problems,
    non_integer_and_huge_ids_are_404,
    list_envelope_orders_and_pages,
    list_rejects_bad_paging_parameters,
    validation_reports_every_field,
    length_bounds_are_exact,
    nul_is_rejected_and_unicode_kept,
    body_must_be_a_json_object,
    wrong_content_type_is_415,
    unknown_fields_are_ignored,
    update_validates_and_404s,
    concurrent_creates_get_distinct_ids,
    concurrent_edits_of_two_hot_notes_all_succeed,
);

async fn create_returns_201_with_the_note(app: TestApp) {
    let res = app
        .post_json("/notes", &json!({"title": "T", "body": "B"}))
        .await;
    let note = json(res, StatusCode::CREATED).await;
    assert!(note["id"].as_i64().unwrap() > 0);
    assert_eq!(note["title"], "T");
    assert_eq!(note["body"], "B");
    assert_eq!(note.as_object().unwrap().len(), 3);
}

async fn get_update_delete_round_trip(app: TestApp) {
    let note = app.create_note("first", "one").await;
    let id = note["id"].as_i64().unwrap();
    let got = json(app.get(&format!("/notes/{id}")).await, StatusCode::OK).await;
    assert_eq!(got, note);

    let res = app
        .put_json(
            &format!("/notes/{id}"),
            &json!({"title": "second", "body": "two"}),
        )
        .await;
    let updated = json(res, StatusCode::OK).await;
    assert_eq!(updated, json!({"id": id, "title": "second", "body": "two"}));
    let got = json(app.get(&format!("/notes/{id}")).await, StatusCode::OK).await;
    assert_eq!(got, updated);

    let res = app.delete(&format!("/notes/{id}")).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    assert!(res.text().await.unwrap().is_empty());
    let res = app.get(&format!("/notes/{id}")).await;
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
    let res = app.delete(&format!("/notes/{id}")).await;
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
}

async fn missing_notes_are_404_problems(app: TestApp) {
    let body = problem(
        app.get("/notes/424242").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    assert_eq!(body["detail"], "Note 424242 does not exist.");
    assert_eq!(body["title"], "Resource not found.");
}

async fn non_integer_and_huge_ids_are_404(app: TestApp) {
    for path in [
        "/notes/abc",
        "/notes/1.5",
        "/notes/99999999999999999999",
        "/notes/-1",
        "/notes/%00",
        "/notes/0",
    ] {
        let res = app.get(path).await;
        problem(res, StatusCode::NOT_FOUND, "not-found").await;
        let res = app.delete(path).await;
        problem(res, StatusCode::NOT_FOUND, "not-found").await;
    }
}

async fn list_envelope_orders_and_pages(app: TestApp) {
    let empty = json(app.get("/notes").await, StatusCode::OK).await;
    assert_eq!(
        empty,
        json!({"items": [], "limit": 20, "offset": 0, "total": 0, "next_offset": null})
    );
    let mut ids = Vec::new();
    for i in 0..25 {
        ids.push(
            app.create_note(&format!("n{i}"), "b").await["id"]
                .as_i64()
                .unwrap(),
        );
    }
    let page = json(app.get("/notes").await, StatusCode::OK).await;
    assert_eq!(page["total"], 25);
    assert_eq!(page["limit"], 20);
    assert_eq!(page["offset"], 0);
    let got: Vec<i64> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_i64().unwrap())
        .collect();
    assert_eq!(got, ids[..20]);

    let page = json(app.get("/notes?limit=10&offset=20").await, StatusCode::OK).await;
    assert_eq!(page["items"].as_array().unwrap().len(), 5);
    assert_eq!(page["items"][0]["id"], ids[20]);
    assert_eq!(
        (page["limit"].as_i64(), page["offset"].as_i64()),
        (Some(10), Some(20))
    );

    let past = json(app.get("/notes?offset=1000").await, StatusCode::OK).await;
    assert_eq!(past["items"], json!([]));
    assert_eq!(past["total"], 25);

    let one = json(app.get("/notes?limit=1&offset=0").await, StatusCode::OK).await;
    assert_eq!(one["items"].as_array().unwrap().len(), 1);
    let max = json(app.get("/notes?limit=100").await, StatusCode::OK).await;
    assert_eq!(max["items"].as_array().unwrap().len(), 25);
}

async fn list_rejects_bad_paging_parameters(app: TestApp) {
    for (query, field, code) in [
        ("limit=0", "limit", "out_of_range"),
        ("limit=101", "limit", "out_of_range"),
        ("limit=-5", "limit", "out_of_range"),
        ("limit=abc", "limit", "invalid"),
        ("limit=1.5", "limit", "invalid"),
        ("limit=", "limit", "invalid"),
        ("offset=-1", "offset", "out_of_range"),
        ("offset=x", "offset", "invalid"),
        ("offset=99999999999999999999", "offset", "invalid"),
    ] {
        let res = app.get(&format!("/notes?{query}")).await;
        let body = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
        assert_eq!(
            field_errors(&body),
            vec![(field.to_owned(), code.to_owned())],
            "{query}"
        );
    }
    let res = app.get("/notes?limit=0&offset=-1").await;
    let body = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    assert_eq!(field_errors(&body).len(), 2);
}

async fn validation_reports_every_field(app: TestApp) {
    let cases = [
        (json!({}), vec![("title", "required"), ("body", "required")]),
        (
            json!({"title": "", "body": "   "}),
            vec![("title", "required"), ("body", "required")],
        ),
        (
            json!({"title": null, "body": "b"}),
            vec![("title", "required")],
        ),
        (
            json!({"title": 5, "body": true}),
            vec![("title", "invalid_type"), ("body", "invalid_type")],
        ),
        (
            json!({"title": ["x"], "body": {"a": 1}}),
            vec![("title", "invalid_type"), ("body", "invalid_type")],
        ),
        (json!({"title": "ok"}), vec![("body", "required")]),
    ];
    for (body, expected) in cases {
        let res = app.post_json("/notes", &body).await;
        let p = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
        let expected: Vec<(String, String)> = expected
            .into_iter()
            .map(|(f, c)| (f.to_owned(), c.to_owned()))
            .collect();
        assert_eq!(field_errors(&p), expected, "{body}");
    }
    let total = json(app.get("/notes").await, StatusCode::OK).await["total"].clone();
    assert_eq!(total, 0, "nothing stored by rejected requests");
}

async fn length_bounds_are_exact(app: TestApp) {
    let ok = app
        .post_json(
            "/notes",
            &json!({"title": "é".repeat(500), "body": "x".repeat(10_000)}),
        )
        .await;
    let note = json(ok, StatusCode::CREATED).await;
    assert_eq!(note["title"].as_str().unwrap().chars().count(), 500);
    let res = app
        .post_json(
            "/notes",
            &json!({"title": "x".repeat(501), "body": "x".repeat(10_001)}),
        )
        .await;
    let p = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    assert_eq!(
        field_errors(&p),
        vec![
            ("title".into(), "too_long".into()),
            ("body".into(), "too_long".into())
        ]
    );
}

async fn nul_is_rejected_and_unicode_kept(app: TestApp) {
    let res = app
        .post_json("/notes", &json!({"title": "a\u{0}b", "body": "b"}))
        .await;
    let p = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    assert_eq!(field_errors(&p), vec![("title".into(), "invalid".into())]);

    let title = "  Grüße 🎉 \u{202e}rtl\t";
    let body = "line1\r\nline2 'quoted' \"dq\" ; DROP TABLE notes; --";
    let note = app.create_note(title, body).await;
    let got = json(
        app.get(&format!("/notes/{}", note["id"])).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(got["title"], title);
    assert_eq!(got["body"], body);
}

async fn body_must_be_a_json_object(app: TestApp) {
    for raw in [
        "not json",
        "[1,2]",
        "\"text\"",
        "42",
        "null",
        "{\"title\": \"a\",",
        "",
    ] {
        let res = app
            .send_raw(Method::POST, "/notes", "application/json", raw)
            .await;
        let p = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
        assert_eq!(
            field_errors(&p),
            vec![("body".into(), "invalid".into())],
            "{raw:?}"
        );
    }
    let res = app
        .send_raw(
            Method::POST,
            "/notes",
            "application/json",
            vec![0xff, 0xfe, b'{'],
        )
        .await;
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
}

async fn wrong_content_type_is_415(app: TestApp) {
    for ct in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/xml",
    ] {
        let res = app
            .send_raw(Method::POST, "/notes", ct, r#"{"title":"a","body":"b"}"#)
            .await;
        problem(
            res,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
        )
        .await;
    }
    let res = app
        .send_raw(
            Method::POST,
            "/notes",
            "application/json; charset=utf-8",
            r#"{"title":"a","body":"b"}"#,
        )
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let res = app
        .send_raw(
            Method::POST,
            "/notes",
            "application/merge-patch+json",
            r#"{"title":"a","body":"b"}"#,
        )
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
}

async fn unknown_fields_are_ignored(app: TestApp) {
    let res = app
        .post_json(
            "/notes",
            &json!({"title": "t", "body": "b", "id": 999, "extra": [1]}),
        )
        .await;
    let note = json(res, StatusCode::CREATED).await;
    assert_ne!(note["id"], 999);
    assert!(note.get("extra").is_none());
}

async fn update_validates_and_404s(app: TestApp) {
    let note = app.create_note("t", "b").await;
    let id = note["id"].as_i64().unwrap();
    let res = app
        .put_json(&format!("/notes/{id}"), &json!({"title": ""}))
        .await;
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    let got = json(app.get(&format!("/notes/{id}")).await, StatusCode::OK).await;
    assert_eq!(got, note, "a rejected update changes nothing");
    let res = app
        .put_json("/notes/999999", &json!({"title": "a", "body": "b"}))
        .await;
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
    let res = app
        .put_json("/notes/abc", &json!({"title": "a", "body": "b"}))
        .await;
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
}

async fn concurrent_creates_get_distinct_ids(app: TestApp) {
    let tasks: Vec<_> = (0..40)
        .map(|i| {
            let client = app.client.clone();
            let url = app.url("/notes");
            tokio::spawn(async move {
                let res = client
                    .post(url)
                    .json(&json!({"title": format!("t{i}"), "body": "b"}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(res.status(), StatusCode::CREATED);
                res.json::<serde_json::Value>().await.unwrap()["id"]
                    .as_i64()
                    .unwrap()
            })
        })
        .collect();
    let mut ids = Vec::new();
    for t in tasks {
        ids.push(t.await.unwrap());
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 40);
    let list = json(app.get("/notes?limit=100").await, StatusCode::OK).await;
    assert_eq!(list["total"], 40);
}

/// 16 clients editing the same two notes at once, each alternating between them: every edit
/// succeeds, and each note ends with the text of one of them. On PostgreSQL the two
/// group-commit writers' batches held one note each while a later edit waited for the other
/// (a deadlock broken after a 1 s `deadlock_timeout`, again and again: 503s and 2 s
/// timeouts); a write now waits at most `LOCK_WAIT` for a row, runs again, and the writers run
/// in turn while rows are contended, so that it is not met again (`db_write_conflicts_total`
/// stays small).
async fn concurrent_edits_of_two_hot_notes_all_succeed(app: TestApp) {
    let ids = [
        app.create_note("a", "0").await["id"].as_i64().unwrap(),
        app.create_note("b", "0").await["id"].as_i64().unwrap(),
    ];
    let tasks: Vec<_> = (0..16)
        .map(|client| {
            let http = app.client.clone();
            let urls = ids.map(|id| app.url(&format!("/notes/{id}")));
            tokio::spawn(async move {
                for n in 0..12 {
                    let url = &urls[(client + n) % 2];
                    let body = json!({"title": "hot", "body": format!("{client}-{n}")});
                    let res = http.put(url).json(&body).send().await.unwrap();
                    assert_eq!(res.status(), StatusCode::OK, "{client}-{n}");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    for id in ids {
        let note = json(app.get(&format!("/notes/{id}")).await, StatusCode::OK).await;
        assert_eq!(note["title"], "hot");
    }
    let (_, _, text) = crate::metrics::metrics(&app, None).await;
    let deadlocks = [("writer", "writes"), ("cause", "deadlock")];
    let met = crate::metrics::sample(&text, "db_write_conflicts_total", &deadlocks);
    assert_eq!(met, 0.0, "edits waited out a deadlock:\n{text}");
}
