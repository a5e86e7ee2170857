//! RFC 8288 `Link` on every paged list: following `rel="next"` from the first page visits every
//! item once; offset pages also link `prev` and `first`, cursor pages `first`. (The versioned
//! notes' lists link nothing: tests/api/versioned_notes.rs.)

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::api_tests;
use crate::helpers::{TestApp, json};

api_tests!(following_next_visits_every_item_of_every_list);

/// The target of `rel` in a `Link` value.
fn target(link: &str, rel: &str) -> Option<String> {
    link.split(", ").find_map(|part| {
        let (uri, params) = part.split_once(">; ")?;
        (params == format!("rel=\"{rel}\"")).then(|| uri.trim_start_matches('<').to_owned())
    })
}

/// Follows `next` from `start`; returns the items seen (under `key`) and every page's links.
async fn follow(
    app: &TestApp,
    start: &str,
    key: &str,
    user: Option<&str>,
) -> (Vec<Value>, Vec<String>) {
    let (mut items, mut links) = (Vec::new(), Vec::new());
    let mut next = Some(start.to_owned());
    while let Some(path) = next.take() {
        let mut req = app.request(Method::GET, &path);
        if let Some(user) = user {
            req = req.header("X-User-Id", user);
        }
        let res = req.send().await.unwrap();
        let link = res
            .headers()
            .get("link")
            .map(|v| v.to_str().unwrap().to_owned());
        let page = json(res, StatusCode::OK).await;
        items.extend(page[key].as_array().unwrap().iter().cloned());
        let link = link.unwrap_or_else(|| panic!("{path}: no Link"));
        assert!(target(&link, "first").is_some(), "{path}: {link}");
        next = target(&link, "next");
        links.push(link);
        assert!(links.len() < 20, "{start}: no end");
    }
    (items, links)
}

async fn following_next_visits_every_item_of_every_list(app: TestApp) {
    let note = app.create_note("n", "b").await;
    for i in 0..4 {
        app.create_note(&format!("n{i}"), "b").await;
        json(
            app.post_json("/tags", &json!({"name": format!("t{i}")}))
                .await,
            StatusCode::CREATED,
        )
        .await;
        let comments = format!("/notes/{}/comments", note["id"]);
        json(
            app.post_json(&comments, &json!({"body": "c"})).await,
            StatusCode::CREATED,
        )
        .await;
        json(
            app.post_json(
                "/articles",
                &json!({"title": "a", "author": "A", "category": "c"}),
            )
            .await,
            StatusCode::CREATED,
        )
        .await;
        json(
            app.post_json(
                "/accounts",
                &json!({"account_id": format!("acc-{i}"), "owner": "o"}),
            )
            .await,
            StatusCode::CREATED,
        )
        .await;
        json(
            app.post_json(
                "/accounts/acc-0/events",
                &json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 1}}),
            )
            .await,
            StatusCode::CREATED,
        )
        .await;
    }
    let user = json(
        app.post_json("/users", &json!({"name": "u"})).await,
        StatusCode::CREATED,
    )
    .await;
    let uid = user["id"].to_string();
    for _ in 0..3 {
        app.request(Method::POST, &format!("/users/{uid}/tokens"))
            .header("X-User-Id", &uid)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
    }
    let comments = format!("/notes/{}/comments?limit=2", note["id"]);
    let tokens = format!("/users/{uid}/tokens?limit=2");
    let lists: [(&str, &str, usize, Option<&str>); 8] = [
        ("/notes?limit=2", "items", 5, None),
        ("/tags?limit=2", "items", 4, None),
        (&comments, "items", 4, None),
        ("/articles/offset?limit=3", "items", 4, None),
        ("/articles/cursor?limit=3", "items", 4, None),
        ("/accounts?limit=3", "items", 4, None),
        ("/accounts/acc-0/events?limit=2", "items", 5, None),
        (&tokens, "items", 3, Some(&uid)),
    ];
    for (start, key, expected, user) in lists {
        let (items, links) = follow(&app, start, key, user).await;
        assert_eq!(items.len(), expected, "{start}");
        let mut ids: Vec<String> = items
            .iter()
            .map(|i| {
                i.get("id")
                    .or(i.get("sequence"))
                    .or(i.get("account_id"))
                    .unwrap()
                    .to_string()
            })
            .collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), expected, "{start}: every item once");
        assert!(
            target(&links[0], "prev").is_none(),
            "{start}: the first page has no prev"
        );
        let last = links.last().unwrap();
        if start.contains("cursor") || start.contains("events") {
            assert!(
                target(last, "prev").is_none(),
                "{start}: cursor pages link no prev"
            );
        } else {
            assert!(target(last, "prev").is_some(), "{start}: {last}");
        }
    }
    // Only the limit is repeated; a page past the end still links back.
    let res = app.get("/notes?limit=2&offset=10&x=y").await;
    let link = res.headers()["link"].to_str().unwrap().to_owned();
    assert_eq!(target(&link, "next"), None);
    assert_eq!(
        target(&link, "prev").as_deref(),
        Some("/notes?limit=2&offset=8")
    );
    assert_eq!(
        target(&link, "first").as_deref(),
        Some("/notes?limit=2&offset=0")
    );
    // A user's tokens without paging are one page: no links.
    let res = app
        .request(Method::GET, &format!("/users/{uid}/tokens"))
        .header("X-User-Id", &uid)
        .send()
        .await
        .unwrap();
    assert!(res.headers().get("link").is_none());
}

/// Every paged list documents its `Link` header.
#[tokio::test]
async fn the_document_shows_link_on_every_paged_list() {
    let doc = serde_json::to_value(server::openapi::generate().await).unwrap();
    for path in [
        "/notes",
        "/tags",
        "/examples/notes",
        "/examples/tags",
        "/notes/{note_id}/comments",
        "/articles/offset",
        "/articles/cursor",
        "/metrics/v1-usage",
        "/accounts",
        "/accounts/{id}/events",
        "/webhook/events",
        "/users/{userId}/tokens",
    ] {
        let ok = &doc["paths"][path]["get"]["responses"]["200"];
        assert!(ok["headers"]["Link"].is_object(), "{path}");
        assert!(
            ok["content"]["application/json"]["schema"].is_object(),
            "{path}"
        );
    }
}
