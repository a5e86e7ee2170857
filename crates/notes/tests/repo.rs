//! Repository tests on a fresh migrated database: SQLite always, PostgreSQL when
//! `TEST_POSTGRES_URL` is set.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use notes::{CommentInput, Error, NoteInput, TagInput, repo};
use pagination::Page;
use serde_json::json;

/// The shared runner, with the test database itself left out.
fn on_each_backend(test: impl Fn(&mut storage::DbConnection)) {
    storage::testing::on_each_backend(|_, conn| test(conn));
}

fn note(title: &str) -> NoteInput {
    NoteInput::from_json(json!({"title": title, "body": "b"}).as_object().unwrap()).unwrap()
}

#[test]
fn notes_round_trip_and_page() {
    on_each_backend(|c| {
        let a = repo::notes::create(c, &note("a"), Some(1)).unwrap();
        assert_eq!(a.owner_id, Some(1), "the creator is recorded");
        let b = repo::notes::create(c, &note("b"), None).unwrap();
        assert!(b.id > a.id);
        assert_eq!(repo::notes::get(c, a.id).unwrap(), a);
        let (items, total) = repo::notes::list(
            c,
            Page {
                limit: 1,
                offset: 1,
            },
        )
        .unwrap();
        assert_eq!((items, total), (vec![b.clone()], 2));
        let updated = repo::notes::update(c, a.id, &note("a2")).unwrap();
        assert_eq!(updated.title, "a2");
        repo::notes::delete(c, a.id).unwrap();
        assert!(matches!(
            repo::notes::get(c, a.id),
            Err(Error::NoteNotFound { .. })
        ));
        assert!(matches!(
            repo::notes::delete(c, a.id),
            Err(Error::NoteNotFound { .. })
        ));
        assert!(matches!(
            repo::notes::update(c, a.id, &note("x")),
            Err(Error::NoteNotFound { .. })
        ));
    });
}

#[test]
fn tag_names_are_unique() {
    on_each_backend(|c| {
        let tag = |n: &str| TagInput::from_json(json!({"name": n}).as_object().unwrap()).unwrap();
        let a = repo::tags::create(c, &tag("x"), None).unwrap();
        assert!(matches!(
            repo::tags::create(c, &tag("x"), None),
            Err(Error::DuplicateTagName { .. })
        ));
        let b = repo::tags::create(c, &tag("y"), None).unwrap();
        assert!(matches!(
            repo::tags::update(c, b.id, &tag("x")),
            Err(Error::DuplicateTagName { .. })
        ));
        assert_eq!(repo::tags::update(c, a.id, &tag("x")).unwrap().name, "x");
    });
}

#[test]
fn comments_belong_to_their_note_and_cascade() {
    on_each_backend(|c| {
        let body =
            |b: &str| CommentInput::from_json(json!({"body": b}).as_object().unwrap()).unwrap();
        let n1 = repo::notes::create(c, &note("n1"), None).unwrap();
        let n2 = repo::notes::create(c, &note("n2"), None).unwrap();
        let c1 = repo::comments::create(c, n1.id, &body("hi"), None).unwrap();
        assert!(matches!(
            repo::comments::get(c, n2.id, c1.id),
            Err(Error::CommentNotFound { .. })
        ));
        assert!(matches!(
            repo::comments::create(c, 999_999, &body("x"), None),
            Err(Error::NoteNotFound { id: 999_999 })
        ));
        repo::notes::delete(c, n1.id).unwrap();
        let n3 = repo::notes::create(c, &note("n3"), None).unwrap();
        assert_eq!(
            repo::comments::list(c, n3.id, Page::default()).unwrap().1,
            0
        );
        assert!(matches!(
            repo::comments::list(c, n1.id, Page::default()),
            Err(Error::NoteNotFound { .. })
        ));
    });
}

/// A list reads its page and its total in one statement; a page past the end carries no row to
/// hold the total, so it is read on its own, and for comments the note must still exist.
#[test]
fn pages_past_the_end_keep_their_total() {
    on_each_backend(|c| {
        let past = Page {
            limit: 5,
            offset: 10,
        };
        let n = repo::notes::create(c, &note("n"), None).unwrap();
        let tag = TagInput::from_json(json!({"name": "t"}).as_object().unwrap()).unwrap();
        repo::tags::create(c, &tag, None).unwrap();
        let body = CommentInput::from_json(json!({"body": "b"}).as_object().unwrap()).unwrap();
        repo::comments::create(c, n.id, &body, None).unwrap();
        repo::comments::create(c, n.id, &body, None).unwrap();
        assert_eq!(repo::notes::list(c, past).unwrap(), (vec![], 1));
        assert_eq!(repo::tags::list(c, past).unwrap(), (vec![], 1));
        assert_eq!(repo::comments::list(c, n.id, past).unwrap(), (vec![], 2));
        let first = Page {
            limit: 1,
            offset: 0,
        };
        let (items, total) = repo::comments::list(c, n.id, first).unwrap();
        assert_eq!((items.len(), total), (1, 2));
        assert!(matches!(
            repo::comments::list(c, n.id + 1, first),
            Err(Error::NoteNotFound { .. })
        ));
    });
}
