use reqwest::StatusCode;
use serde_json::json;

use crate::api_tests;
use crate::helpers::{TestApp, field_errors, json, problem};

api_tests!(
    comment_crud,
    comments_under_missing_note_are_404,
    comment_of_another_note_is_404,
    deleting_a_note_deletes_its_comments,
    comment_validation_and_paging,
    concurrent_comments_and_edits_of_the_same_notes_all_land,
);

/// Writes share transactions (group commit; on PostgreSQL two batches at once): comments and
/// edits on the same three notes, all at once, lock the same note rows and comment counters
/// from many batches in every order. Every one lands, once.
async fn concurrent_comments_and_edits_of_the_same_notes_all_land(app: TestApp) {
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(
            app.create_note(&format!("n{n}"), "b").await["id"]
                .as_i64()
                .unwrap(),
        );
    }
    // 40 clients (under the per-client connection cap), three requests each.
    let tasks: Vec<_> = (0..40)
        .map(|t| {
            let (client, base, ids) = (app.client.clone(), app.url(""), ids.clone());
            tokio::spawn(async move {
                for i in t * 3..t * 3 + 3 {
                    let id = ids[i % 3];
                    let res = match i % 2 {
                        0 => client
                            .post(format!("{base}/notes/{id}/comments"))
                            .json(&json!({"body": format!("c{i}")})),
                        _ => client
                            .put(format!("{base}/notes/{id}"))
                            .json(&json!({"title": format!("t{i}"), "body": "e"})),
                    }
                    .send()
                    .await
                    .unwrap();
                    assert!(res.status().is_success(), "{}", res.status());
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    for (n, id) in ids.iter().enumerate() {
        let list = json(
            app.get(&format!("/notes/{id}/comments?limit=100")).await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(list["total"], 20, "note {n}");
        let mut bodies: Vec<String> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["body"].as_str().unwrap().to_owned())
            .collect();
        bodies.sort();
        let mut want: Vec<String> = (0..120)
            .filter(|i| i % 3 == n && i % 2 == 0)
            .map(|i| format!("c{i}"))
            .collect();
        want.sort();
        assert_eq!(bodies, want, "note {n}: each comment once");
        let note = json(app.get(&format!("/notes/{id}")).await, StatusCode::OK).await;
        assert_eq!(note["body"], "e");
    }
}

async fn comment_crud(app: TestApp) {
    let note = app.create_note("n", "b").await;
    let nid = note["id"].as_i64().unwrap();
    let c = json(
        app.post_json(&format!("/notes/{nid}/comments"), &json!({"body": "hi"}))
            .await,
        StatusCode::CREATED,
    )
    .await;
    let cid = c["id"].as_i64().unwrap();
    assert_eq!(c, json!({"id": cid, "note_id": nid, "body": "hi"}));
    let path = format!("/notes/{nid}/comments/{cid}");
    assert_eq!(json(app.get(&path).await, StatusCode::OK).await, c);
    let updated = json(
        app.put_json(&path, &json!({"body": "edited"})).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(updated["body"], "edited");
    let list = json(
        app.get(&format!("/notes/{nid}/comments")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        list,
        json!({"items": [updated], "limit": 20, "offset": 0, "total": 1, "next_offset": null})
    );
    assert_eq!(app.delete(&path).await.status(), StatusCode::NO_CONTENT);
    let p = problem(app.get(&path).await, StatusCode::NOT_FOUND, "not-found").await;
    assert_eq!(
        p["detail"],
        format!("Comment {cid} does not exist under note {nid}.")
    );
    problem(app.delete(&path).await, StatusCode::NOT_FOUND, "not-found").await;
    problem(
        app.put_json(&path, &json!({"body": "x"})).await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
}

async fn comments_under_missing_note_are_404(app: TestApp) {
    for res in [
        app.get("/notes/777/comments").await,
        app.post_json("/notes/777/comments", &json!({"body": "x"}))
            .await,
        app.get("/notes/777/comments/1").await,
        app.put_json("/notes/777/comments/1", &json!({"body": "x"}))
            .await,
        app.delete("/notes/777/comments/1").await,
        app.get("/notes/abc/comments").await,
        app.get("/notes/1/comments/abc").await,
    ] {
        problem(res, StatusCode::NOT_FOUND, "not-found").await;
    }
    let p = problem(
        app.get("/notes/777/comments").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    assert_eq!(p["detail"], "Note 777 does not exist.");
}

async fn comment_of_another_note_is_404(app: TestApp) {
    let a = app.create_note("a", "a").await["id"].as_i64().unwrap();
    let b = app.create_note("b", "b").await["id"].as_i64().unwrap();
    let c = json(
        app.post_json(&format!("/notes/{a}/comments"), &json!({"body": "on a"}))
            .await,
        StatusCode::CREATED,
    )
    .await["id"]
        .as_i64()
        .unwrap();
    let wrong = format!("/notes/{b}/comments/{c}");
    problem(app.get(&wrong).await, StatusCode::NOT_FOUND, "not-found").await;
    problem(
        app.put_json(&wrong, &json!({"body": "x"})).await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    problem(app.delete(&wrong).await, StatusCode::NOT_FOUND, "not-found").await;
    let still = json(
        app.get(&format!("/notes/{a}/comments/{c}")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(still["body"], "on a");
}

async fn deleting_a_note_deletes_its_comments(app: TestApp) {
    let a = app.create_note("a", "a").await["id"].as_i64().unwrap();
    let keep = app.create_note("keep", "k").await["id"].as_i64().unwrap();
    for i in 0..3 {
        app.post_json(
            &format!("/notes/{a}/comments"),
            &json!({"body": format!("c{i}")}),
        )
        .await;
    }
    app.post_json(&format!("/notes/{keep}/comments"), &json!({"body": "kept"}))
        .await;
    assert_eq!(
        app.delete(&format!("/notes/{a}")).await.status(),
        StatusCode::NO_CONTENT
    );
    problem(
        app.get(&format!("/notes/{a}/comments")).await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    let kept = json(
        app.get(&format!("/notes/{keep}/comments")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(kept["total"], 1);
    // A new note never inherits the deleted note's comments.
    let fresh = app.create_note("fresh", "f").await["id"].as_i64().unwrap();
    let list = json(
        app.get(&format!("/notes/{fresh}/comments")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(list["total"], 0);
}

async fn comment_validation_and_paging(app: TestApp) {
    let n = app.create_note("n", "b").await["id"].as_i64().unwrap();
    let path = format!("/notes/{n}/comments");
    for (body, code) in [
        (json!({}), "required"),
        (json!({"body": ""}), "required"),
        (json!({"body": false}), "invalid_type"),
        (json!({"body": "x".repeat(5001)}), "too_long"),
    ] {
        let p = problem(
            app.post_json(&path, &body).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation-failed",
        )
        .await;
        assert_eq!(field_errors(&p), vec![("body".to_owned(), code.to_owned())]);
    }
    json(
        app.post_json(&path, &json!({"body": "x".repeat(5000)}))
            .await,
        StatusCode::CREATED,
    )
    .await;
    for i in 0..4 {
        json(
            app.post_json(&path, &json!({"body": format!("c{i}")}))
                .await,
            StatusCode::CREATED,
        )
        .await;
    }
    let page = json(
        app.get(&format!("{path}?limit=2&offset=3")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(page["total"], 5);
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    assert_eq!(page["items"][0]["body"], "c2");
    problem(
        app.get(&format!("{path}?offset=-2")).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
}
