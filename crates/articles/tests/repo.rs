//! Repository tests on a fresh migrated database: SQLite always, PostgreSQL when
//! `TEST_POSTGRES_URL` is set.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use articles::{ArticleInput, NewArticle, repo, service};
use pagination::{Cursor, Page};
use problem_details::testing::object;
use serde_json::json;

fn on_each_backend(test: impl Fn(&mut storage::DbConnection)) {
    storage::testing::on_each_backend(|_, conn| test(conn));
}

fn article(title: &str, category: Option<&str>) -> NewArticle {
    let input = ArticleInput::from_json(&object(
        json!({"title": title, "author": "Ann", "category": category}),
    ))
    .unwrap();
    NewArticle::new(input, "2026-01-01T00:00:00Z".into())
}

#[test]
fn create_stores_every_field_and_lists_newest_first() {
    on_each_backend(|c| {
        let a = repo::create(c, &article("a", None), None).unwrap();
        let b = repo::create(c, &article("b", Some("rust")), Some(3)).unwrap();
        assert_eq!((a.owner_id, b.owner_id), (None, Some(3)));
        assert!(b.id > a.id);
        assert_eq!(
            (b.title.as_str(), b.author.as_str(), b.category.as_deref()),
            ("b", "Ann", Some("rust"))
        );
        assert_eq!(b.created_at, "2026-01-01T00:00:00Z");
        assert_eq!(a.category, None);

        let page = repo::list_offset(
            c,
            Page {
                limit: 1,
                offset: 0,
            },
        )
        .unwrap();
        assert_eq!(page.items, vec![b.clone()]);
        assert_eq!(
            (page.total, page.has_more, page.next_offset),
            (2, true, Some(1))
        );
        let page = repo::list_offset(
            c,
            Page {
                limit: 1,
                offset: 1,
            },
        )
        .unwrap();
        assert_eq!(page.items, vec![a.clone()]);
        assert_eq!((page.has_more, page.next_offset), (false, None));
        assert_eq!(repo::count(c).unwrap(), 2);
    });
}

#[test]
fn cursor_pages_visit_every_row_once_in_id_order() {
    on_each_backend(|c| {
        let rows: Vec<NewArticle> = (1..=25).map(service::demo_article).collect();
        assert_eq!(repo::insert_batch(c, &rows).unwrap(), 25);
        assert_eq!(repo::insert_batch(c, &[]).unwrap(), 0);

        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let page = repo::list_cursor(c, Cursor { limit: 10, after }).unwrap();
            assert!(page.items.len() <= 10);
            seen.extend(page.items.iter().map(|a| a.id));
            assert_eq!(
                page.next_cursor,
                page.has_more.then(|| *seen.last().unwrap())
            );
            if !page.has_more {
                break;
            }
            after = page.next_cursor;
        }
        assert_eq!(seen.len(), 25);
        assert!(seen.windows(2).all(|w| w[0] > w[1]), "{seen:?}");
        // Past the last id: an empty page, not an error.
        let past = repo::list_cursor(
            c,
            Cursor {
                limit: 10,
                after: Some(1),
            },
        )
        .unwrap();
        assert!(past.items.is_empty() && !past.has_more);
    });
}

#[test]
fn seed_inserts_the_demo_articles_in_batches_and_reports_progress() {
    on_each_backend(|c| {
        let mut reported = Vec::new();
        let done = service::seed(c, 250, 40, |n| reported.push(n)).unwrap();
        assert_eq!(done, 250);
        assert_eq!(repo::count(c).unwrap(), 250);
        assert_eq!(reported.last(), Some(&250));
        assert!(reported.windows(2).all(|w| w[0] < w[1]), "{reported:?}");
        // Deterministic: the newest is demo article 250.
        let newest = repo::list_offset(
            c,
            Page {
                limit: 1,
                offset: 0,
            },
        )
        .unwrap();
        assert_eq!(newest.items[0].title, "Demo article 250");
    });
}
