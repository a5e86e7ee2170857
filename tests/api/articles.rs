//! Area B: article creation, offset and cursor paging (spec 4.2, DECISIONS B), with property
//! tests that cursor pages and offset pages agree on both backends.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use reqwest::StatusCode;
use serde_json::{Value, json};
use storage::diesel::sql_types::{BigInt, Text};
use storage::diesel::{QueryableByName, RunQueryDsl};

use crate::helpers::{
    Backend, TestApp, app_on_own_runtime, field_errors, json, problem, with_conn,
};
use crate::{api_tests, sync_backend_tests};

api_tests!(
    create_returns_201_with_the_article,
    create_validates_every_field,
    offset_page_envelope_and_defaults,
    cursor_page_envelope_and_defaults,
    out_of_range_integers_are_clamped,
    non_integers_are_422_naming_the_parameter,
    after_at_or_below_zero_is_an_empty_page,
    cursor_query_walks_the_primary_key,
    seeding_is_deterministic_and_batched,
);

sync_backend_tests!(
    cursor_pages_equal_offset_pages,
    cursor_never_repeats_or_skips_under_inserts,
);

#[derive(QueryableByName)]
struct IdRow {
    #[diesel(sql_type = BigInt)]
    id: i64,
}

/// Empties the table, seeds `n` demo articles, returns every id by id descending (read
/// straight from the database, not through the routes under test).
async fn reset_and_seed(app: &TestApp, n: u64) -> Vec<i64> {
    with_conn(&app.db, move |c| {
        storage::diesel::sql_query("DELETE FROM articles")
            .execute(c)
            .unwrap();
        ::articles::service::seed(c, n, 37, |_| {}).unwrap();
        storage::diesel::sql_query("SELECT id FROM articles ORDER BY id DESC")
            .load::<IdRow>(c)
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect()
    })
    .await
}

fn ids(page: &Value) -> Vec<i64> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_i64().unwrap())
        .collect()
}

async fn create(app: &TestApp, body: Value) -> Value {
    json(app.post_json("/articles", &body).await, StatusCode::CREATED).await
}

async fn create_returns_201_with_the_article(app: TestApp) {
    let a = create(
        &app,
        json!({"title": "Keyset paging", "author": "Ann", "category": "db", "x": 1}),
    )
    .await;
    let mut keys: Vec<&str> = a.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["author", "category", "created_at", "id", "title"]);
    assert!(a["id"].as_i64().unwrap() > 0);
    assert_eq!(
        (&a["title"], &a["author"], &a["category"]),
        (&json!("Keyset paging"), &json!("Ann"), &json!("db"))
    );
    let created_at = a["created_at"].as_str().unwrap();
    assert_eq!(created_at.len(), 20);
    assert!(created_at.ends_with('Z'));

    let b = create(
        &app,
        json!({"title": " 🦀 ", "author": "B", "category": null}),
    )
    .await;
    assert_eq!(b["title"], " 🦀 ", "stored as sent");
    assert_eq!(b["category"], Value::Null);
    assert!(b["id"].as_i64().unwrap() > a["id"].as_i64().unwrap());
    let c = create(&app, json!({"title": "t", "author": "a"})).await;
    assert_eq!(c["category"], Value::Null);

    let page = json(app.get("/articles/offset").await, StatusCode::OK).await;
    assert_eq!(page["items"][2], a, "the list shows the created article");
}

async fn create_validates_every_field(app: TestApp) {
    let p = problem(
        app.post_json("/articles", &json!({"title": " ", "category": 3}))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(
        field_errors(&p),
        [
            ("title".into(), "required".into()),
            ("author".into(), "required".into()),
            ("category".into(), "invalid_type".into()),
        ]
    );
    for (body, field, code) in [
        (json!({"title": 1, "author": "a"}), "title", "invalid_type"),
        (json!({"title": "t", "author": ""}), "author", "required"),
        (
            json!({"title": "t", "author": "a", "category": ""}),
            "category",
            "required",
        ),
        (
            json!({"title": "t\u{0}", "author": "a"}),
            "title",
            "invalid",
        ),
        (
            json!({"title": "t".repeat(501), "author": "a"}),
            "title",
            "too_long",
        ),
        (
            json!({"title": "t", "author": "a".repeat(201)}),
            "author",
            "too_long",
        ),
        (
            json!({"title": "t", "author": "a", "category": "c".repeat(101)}),
            "category",
            "too_long",
        ),
        (json!([1]), "body", "invalid"),
    ] {
        let p = problem(
            app.post_json("/articles", &body).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation-failed",
        )
        .await;
        assert_eq!(
            field_errors(&p),
            [(field.to_owned(), code.to_owned())],
            "{body}"
        );
    }
    let res = app
        .send_raw(reqwest::Method::POST, "/articles", "text/plain", "title=x")
        .await;
    problem(
        res,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported-media-type",
    )
    .await;
    let page = json(app.get("/articles/offset").await, StatusCode::OK).await;
    assert_eq!(page["total"], 0, "nothing invalid was stored");
}

async fn offset_page_envelope_and_defaults(app: TestApp) {
    let all = reset_and_seed(&app, 45).await;
    let page = json(app.get("/articles/offset").await, StatusCode::OK).await;
    let mut keys: Vec<&str> = page
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "has_more",
            "items",
            "limit",
            "next_offset",
            "offset",
            "total"
        ]
    );
    assert_eq!(
        (&page["limit"], &page["offset"], &page["total"]),
        (&json!(20), &json!(0), &json!(45))
    );
    assert_eq!(
        (&page["has_more"], &page["next_offset"]),
        (&json!(true), &json!(20))
    );
    assert_eq!(ids(&page), all[..20]);
    let last = json(
        app.get("/articles/offset?limit=20&offset=40").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(ids(&last), all[40..]);
    assert_eq!(
        (&last["has_more"], &last["next_offset"]),
        (&json!(false), &Value::Null)
    );
    let exact = json(
        app.get("/articles/offset?limit=5&offset=40").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        (&exact["has_more"], &exact["next_offset"]),
        (&json!(false), &Value::Null)
    );
    let past = json(
        app.get("/articles/offset?offset=1000").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        (ids(&past), &past["total"], &past["has_more"]),
        (vec![], &json!(45), &json!(false))
    );
    // The first occurrence of a repeated parameter counts.
    let twice = json(
        app.get("/articles/offset?limit=2&limit=9").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(twice["limit"], 2);
}

async fn cursor_page_envelope_and_defaults(app: TestApp) {
    let empty = json(app.get("/articles/cursor").await, StatusCode::OK).await;
    assert_eq!(
        empty,
        json!({"items": [], "limit": 20, "has_more": false, "next_cursor": null})
    );
    let all = reset_and_seed(&app, 45).await;
    let page = json(app.get("/articles/cursor").await, StatusCode::OK).await;
    let mut keys: Vec<&str> = page
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["has_more", "items", "limit", "next_cursor"],
        "no total"
    );
    assert_eq!(ids(&page), all[..20]);
    assert_eq!(
        (&page["has_more"], &page["next_cursor"]),
        (&json!(true), &json!(all[19]))
    );
    let next = json(
        app.get(&format!("/articles/cursor?after={}", all[19]))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(ids(&next), all[20..40]);
    let last = json(
        app.get(&format!("/articles/cursor?after={}", all[39]))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(ids(&last), all[40..]);
    assert_eq!(
        (&last["has_more"], &last["next_cursor"]),
        (&json!(false), &Value::Null)
    );
    // A page that ends exactly at the last row: the probe row is absent, so no further page.
    let exact = json(
        app.get(&format!("/articles/cursor?limit=5&after={}", all[39]))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!((ids(&exact).len(), &exact["has_more"]), (5, &json!(false)));
    // `after` above every id is the first page; `after` need not be an existing id.
    let above = json(
        app.get("/articles/cursor?after=9223372036854775807").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(ids(&above), all[..20]);
    let between = json(
        app.get(&format!("/articles/cursor?limit=3&after={}", all[10] + 1))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(ids(&between), all[10..13]);
}

async fn out_of_range_integers_are_clamped(app: TestApp) {
    reset_and_seed(&app, 3).await;
    for (query, limit) in [
        ("limit=0", 1),
        ("limit=-5", 1),
        ("limit=101", 100),
        ("limit=1000", 100),
        ("limit=9223372036854775807", 100),
        ("limit=-9223372036854775808", 1),
        ("limit=%2B7", 7),
        ("limit=%207%20", 7),
    ] {
        for route in ["offset", "cursor"] {
            let page = json(
                app.get(&format!("/articles/{route}?{query}")).await,
                StatusCode::OK,
            )
            .await;
            assert_eq!(page["limit"], limit, "{route}?{query}");
        }
    }
    for (query, offset) in [
        ("offset=-3", 0),
        ("offset=-9223372036854775808", 0),
        ("offset=2", 2),
    ] {
        let page = json(
            app.get(&format!("/articles/offset?{query}")).await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(page["offset"], offset, "{query}");
    }
    let far = json(
        app.get("/articles/offset?limit=100&offset=9223372036854775807")
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        (ids(&far), &far["has_more"], &far["next_offset"]),
        (vec![], &json!(false), &Value::Null)
    );
}

async fn non_integers_are_422_naming_the_parameter(app: TestApp) {
    for (path, fields) in [
        ("/articles/offset?limit=abc", vec!["limit"]),
        ("/articles/offset?limit=1.5", vec!["limit"]),
        ("/articles/offset?limit=", vec!["limit"]),
        ("/articles/offset?offset=x", vec!["offset"]),
        (
            "/articles/offset?offset=99999999999999999999",
            vec!["offset"],
        ),
        ("/articles/offset?limit=a&offset=b", vec!["limit", "offset"]),
        ("/articles/cursor?after=x", vec!["after"]),
        ("/articles/cursor?after=1e3", vec!["after"]),
        ("/articles/cursor?after=", vec!["after"]),
        ("/articles/cursor?limit=ten", vec!["limit"]),
        (
            "/articles/cursor?limit=%00&after=%FF",
            vec!["limit", "after"],
        ),
    ] {
        let p = problem(
            app.get(path).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation-failed",
        )
        .await;
        let got = field_errors(&p);
        let want: Vec<(String, String)> = fields
            .iter()
            .map(|f| ((*f).to_owned(), "invalid".to_owned()))
            .collect();
        assert_eq!(got, want, "{path}");
        for f in fields {
            assert!(
                p["detail"].as_str().unwrap().contains(f),
                "{path}: detail names {f}"
            );
        }
    }
    // Parameters the route does not know are ignored.
    let ok = app.get("/articles/cursor?offset=x&page=2").await;
    assert_eq!(ok.status(), StatusCode::OK);
}

async fn after_at_or_below_zero_is_an_empty_page(app: TestApp) {
    reset_and_seed(&app, 5).await;
    for after in ["0", "-1", "-9223372036854775808"] {
        let page = json(
            app.get(&format!("/articles/cursor?after={after}")).await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(
            page,
            json!({"items": [], "limit": 20, "has_more": false, "next_cursor": null}),
            "after={after}"
        );
    }
}

/// The cursor route's statement reads a range of the primary-key index in order: no sort and
/// no scan of the whole table, whatever the table's size.
async fn cursor_query_walks_the_primary_key(app: TestApp) {
    reset_and_seed(&app, 500).await;
    let plan = explain(&app, app.backend).await;
    match app.backend {
        Backend::Sqlite => {
            assert!(
                plan.contains("USING INTEGER PRIMARY KEY (rowid<?)"),
                "{plan}"
            );
            assert!(!plan.contains("TEMP B-TREE"), "no sort: {plan}");
        }
        Backend::Postgres => {
            assert!(
                plan.contains("Index Scan Backward using articles_pkey"),
                "{plan}"
            );
            assert!(!plan.contains("Sort"), "no sort: {plan}");
        }
    }
}

async fn explain(app: &TestApp, backend: Backend) -> String {
    #[derive(QueryableByName)]
    struct SqlitePlan {
        #[diesel(sql_type = Text)]
        detail: String,
    }
    #[derive(QueryableByName)]
    struct PgPlan {
        #[diesel(sql_type = Text, column_name = "QUERY PLAN")]
        plan: String,
    }
    with_conn(&app.db, move |c| {
        let select = "SELECT id, title, author, category, created_at \
                      FROM articles WHERE id < 250 ORDER BY id DESC LIMIT 21";
        match backend {
            Backend::Sqlite => storage::diesel::sql_query(format!("EXPLAIN QUERY PLAN {select}"))
                .load::<SqlitePlan>(c)
                .unwrap()
                .into_iter()
                .map(|r| r.detail)
                .collect::<Vec<_>>()
                .join("\n"),
            Backend::Postgres => storage::diesel::sql_query(format!("EXPLAIN {select}"))
                .load::<PgPlan>(c)
                .unwrap()
                .into_iter()
                .map(|r| r.plan)
                .collect::<Vec<_>>()
                .join("\n"),
        }
    })
    .await
}

async fn seeding_is_deterministic_and_batched(app: TestApp) {
    let (inserted, progress) = with_conn(&app.db, |c| {
        let mut progress = Vec::new();
        let n = ::articles::service::seed(c, 2_345, 100, |done| progress.push(done)).unwrap();
        (n, progress)
    })
    .await;
    assert_eq!(inserted, 2_345);
    // 100 rows per statement, 50 statements per transaction.
    assert_eq!(progress, [2_345]);
    let big = with_conn(&app.db, |c| {
        let mut progress = Vec::new();
        ::articles::service::seed(c, 12_001, 100, |done| progress.push(done)).unwrap();
        progress
    })
    .await;
    assert_eq!(big, [5_000, 10_000, 12_001]);
    let page = json(
        app.get("/articles/offset?limit=3&offset=12001").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(page["total"], 14_346);
    let titles: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        [
            "Demo article 2345",
            "Demo article 2344",
            "Demo article 2343"
        ]
    );
    let first = &page["items"][2];
    assert_eq!(first["author"], "Grace Hopper");
    assert_eq!(first["category"], "security");
    let newest = json(app.get("/articles/cursor?limit=1").await, StatusCode::OK).await;
    assert_eq!(newest["items"][0]["title"], "Demo article 12001");
    assert_eq!(newest["items"][0]["created_at"], "2026-01-09T08:01:00Z");
}

/// Follows `next_offset` from offset 0, checking every envelope against `all`.
async fn offset_walk(
    app: &TestApp,
    all: &[i64],
    limit: i64,
) -> Result<Vec<Vec<i64>>, TestCaseError> {
    let total = all.len() as i64;
    let mut pages = Vec::new();
    let mut offset = 0;
    loop {
        let page = json(
            app.get(&format!("/articles/offset?limit={limit}&offset={offset}"))
                .await,
            StatusCode::OK,
        )
        .await;
        let start = (offset as usize).min(all.len());
        let end = ((offset + limit) as usize).min(all.len());
        prop_assert_eq!(ids(&page), all[start..end].to_vec());
        prop_assert_eq!(&page["limit"], &json!(limit));
        prop_assert_eq!(&page["offset"], &json!(offset));
        prop_assert_eq!(&page["total"], &json!(total));
        let has_more = offset + limit < total;
        prop_assert_eq!(&page["has_more"], &json!(has_more));
        let next = has_more.then_some(offset + limit);
        prop_assert_eq!(&page["next_offset"], &json!(next));
        pages.push(ids(&page));
        match next {
            Some(n) => offset = n,
            None => break,
        }
        prop_assert!(pages.len() <= all.len() + 1, "offset walk does not end");
    }
    Ok(pages)
}

/// Follows `next_cursor` from the first page; `after_each` runs after every page (to insert
/// rows between fetches). Checks every envelope against `all`.
async fn cursor_walk(
    app: &TestApp,
    all: &[i64],
    limit: i64,
    mut after_each: impl AsyncFnMut(usize),
) -> Result<Vec<Vec<i64>>, TestCaseError> {
    let mut pages = Vec::new();
    let mut after: Option<i64> = None;
    let mut seen = 0usize;
    loop {
        let path = match after {
            Some(a) => format!("/articles/cursor?limit={limit}&after={a}"),
            None => format!("/articles/cursor?limit={limit}"),
        };
        let page = json(app.get(&path).await, StatusCode::OK).await;
        let items = ids(&page);
        let end = (seen + limit as usize).min(all.len());
        prop_assert_eq!(&items, &all[seen..end].to_vec());
        prop_assert_eq!(&page["limit"], &json!(limit));
        prop_assert!(page.get("total").is_none());
        let has_more = end < all.len();
        prop_assert_eq!(&page["has_more"], &json!(has_more));
        let next = if has_more {
            items.last().copied()
        } else {
            None
        };
        prop_assert_eq!(&page["next_cursor"], &json!(next));
        seen = end;
        pages.push(items);
        after_each(pages.len()).await;
        match next {
            Some(n) => after = Some(n),
            None => break,
        }
        prop_assert!(pages.len() <= all.len() + 1, "cursor walk does not end");
    }
    Ok(pages)
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

/// Spec 4.2 rule 6: for random table sizes and limits, the cursor pages and the offset pages
/// are the same windows, and together they are every row by id descending. Every envelope's
/// `has_more`, `next_offset` and `next_cursor` is checked, the last and an empty table's
/// included.
fn cursor_pages_equal_offset_pages(backend: Backend) {
    let (app, rt) = app_on_own_runtime(backend).unwrap();
    let sizes = prop_oneof![Just(0u64), 1u64..=150];
    let limits = prop_oneof![1i64..=5, 1i64..=100];
    runner(24)
        .run(&(sizes, limits), |(n, limit)| {
            rt.block_on(async {
                let all = reset_and_seed(&app, n).await;
                prop_assert_eq!(all.len() as u64, n);
                let by_offset = offset_walk(&app, &all, limit).await?;
                let by_cursor = cursor_walk(&app, &all, limit, async |_| {}).await?;
                prop_assert_eq!(&by_cursor, &by_offset);
                prop_assert_eq!(by_cursor.concat(), all);
                Ok(())
            })
        })
        .unwrap();
}

/// Rows inserted between page fetches never make the cursor walk repeat or skip a row that
/// existed when it began (new rows get higher ids, above every cursor handed out).
fn cursor_never_repeats_or_skips_under_inserts(backend: Backend) {
    let (app, rt) = app_on_own_runtime(backend).unwrap();
    let cases = (
        1u64..=120,
        1i64..=30,
        proptest::collection::vec(0u64..=4, 1..20),
    );
    runner(16)
        .run(&cases, |(n, limit, inserts)| {
            rt.block_on(async {
                let all = reset_and_seed(&app, n).await;
                let app = &app;
                let inserts = &inserts;
                let pages = cursor_walk(app, &all, limit, async |page| {
                    let k = inserts[page % inserts.len()];
                    with_conn(&app.db, move |c| {
                        ::articles::service::seed(c, k, 10, |_| {}).unwrap();
                    })
                    .await;
                })
                .await?;
                prop_assert_eq!(pages.concat(), all);
                Ok(())
            })
        })
        .unwrap();
}
