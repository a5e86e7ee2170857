use reqwest::StatusCode;
use serde_json::json;

use crate::api_tests;
use crate::helpers::{TestApp, field_errors, json, problem};

api_tests!(
    tag_crud,
    duplicate_names_conflict,
    tag_validation,
    tag_list_pages,
    concurrent_duplicate_creates_have_one_winner,
);

async fn tag_crud(app: TestApp) {
    let tag = json(
        app.post_json("/tags", &json!({"name": "rust"})).await,
        StatusCode::CREATED,
    )
    .await;
    let id = tag["id"].as_i64().unwrap();
    assert_eq!(tag, json!({"id": id, "name": "rust"}));
    assert_eq!(
        json(app.get(&format!("/tags/{id}")).await, StatusCode::OK).await,
        tag
    );
    let renamed = json(
        app.put_json(&format!("/tags/{id}"), &json!({"name": "rustlang"}))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(renamed["name"], "rustlang");
    // Renaming to its own current name is not a conflict.
    let same = app
        .put_json(&format!("/tags/{id}"), &json!({"name": "rustlang"}))
        .await;
    assert_eq!(same.status(), StatusCode::OK);
    let res = app.delete(&format!("/tags/{id}")).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let p = problem(
        app.get(&format!("/tags/{id}")).await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    assert_eq!(p["detail"], format!("Tag {id} does not exist."));
    problem(
        app.delete(&format!("/tags/{id}")).await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    problem(
        app.put_json(&format!("/tags/{id}"), &json!({"name": "x"}))
            .await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    problem(
        app.get("/tags/nope").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
}

async fn duplicate_names_conflict(app: TestApp) {
    json(
        app.post_json("/tags", &json!({"name": "a"})).await,
        StatusCode::CREATED,
    )
    .await;
    let b = json(
        app.post_json("/tags", &json!({"name": "b"})).await,
        StatusCode::CREATED,
    )
    .await;
    problem(
        app.post_json("/tags", &json!({"name": "a"})).await,
        StatusCode::CONFLICT,
        "conflict",
    )
    .await;
    let res = app
        .put_json(&format!("/tags/{}", b["id"]), &json!({"name": "a"}))
        .await;
    problem(res, StatusCode::CONFLICT, "conflict").await;
    let got = json(app.get(&format!("/tags/{}", b["id"])).await, StatusCode::OK).await;
    assert_eq!(got["name"], "b", "a rejected rename changes nothing");
    // Names are case-sensitive and stored as sent.
    json(
        app.post_json("/tags", &json!({"name": "A"})).await,
        StatusCode::CREATED,
    )
    .await;
    let list = json(app.get("/tags").await, StatusCode::OK).await;
    assert_eq!(list["total"], 3);
}

async fn tag_validation(app: TestApp) {
    for (body, code) in [
        (json!({}), "required"),
        (json!({"name": " "}), "required"),
        (json!({"name": 1}), "invalid_type"),
        (json!({"name": "x".repeat(201)}), "too_long"),
        (json!({"name": "a\u{0}"}), "invalid"),
    ] {
        let p = problem(
            app.post_json("/tags", &body).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation-failed",
        )
        .await;
        assert_eq!(field_errors(&p), vec![("name".to_owned(), code.to_owned())]);
    }
    json(
        app.post_json("/tags", &json!({"name": "x".repeat(200)}))
            .await,
        StatusCode::CREATED,
    )
    .await;
}

async fn tag_list_pages(app: TestApp) {
    for i in 0..5 {
        json(
            app.post_json("/tags", &json!({"name": format!("t{i}")}))
                .await,
            StatusCode::CREATED,
        )
        .await;
    }
    let page = json(app.get("/tags?limit=2&offset=1").await, StatusCode::OK).await;
    assert_eq!(page["total"], 5);
    assert_eq!(page["limit"], 2);
    assert_eq!(page["offset"], 1);
    let names: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["t1", "t2"]);
    problem(
        app.get("/tags?limit=500").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
}

async fn concurrent_duplicate_creates_have_one_winner(app: TestApp) {
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let client = app.client.clone();
            let url = app.url("/tags");
            tokio::spawn(async move {
                client
                    .post(url)
                    .json(&json!({"name": "same"}))
                    .send()
                    .await
                    .unwrap()
                    .status()
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
    assert_eq!(
        json(app.get("/tags").await, StatusCode::OK).await["total"],
        1
    );
}
