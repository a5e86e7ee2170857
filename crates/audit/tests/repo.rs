//! The audit table on both backends: rows as recorded, newest first, paged by cursor, filtered
//! by user.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use audit::repo::{Query, page};
use audit::{Action, record};
use ownership::Actor;
use storage::testing::on_each_backend;

fn action(actor: Actor, path: &str) -> Action {
    Action {
        actor,
        method: "PUT".to_owned(),
        route: "/notes/{note_id}".to_owned(),
        path: path.to_owned(),
    }
}

#[test]
fn rows_are_listed_newest_first_by_cursor_and_user() {
    on_each_backend(|_, c| {
        let ann = Actor::User {
            user_id: 1,
            token_id: 10,
        };
        record(c, &action(ann, "/notes/1"), None).unwrap();
        record(c, &action(Actor::Operator, "/notes/2"), None).unwrap();
        record(c, &action(Actor::Unidentified, "/notes"), Some("/notes/3")).unwrap();
        record(c, &action(ann, "/notes/4"), None).unwrap();

        let everyone = Query {
            before: None,
            limit: 3,
            user_id: None,
        };
        let (rows, more) = page(c, everyone).unwrap();
        assert!(more);
        let resources: Vec<&str> = rows.iter().map(|r| r.resource.as_str()).collect();
        assert_eq!(resources, ["/notes/4", "/notes/3", "/notes/2"]);
        assert_eq!(rows[1].actor, "anonymous");
        assert_eq!(rows[2].actor, "operator");
        assert_eq!((rows[2].user_id, rows[2].token_id), (None, None));
        assert_eq!((rows[0].user_id, rows[0].token_id), (Some(1), Some(10)));
        assert_eq!(rows[0].route, "/notes/{note_id}");
        assert!(rows[0].at.ends_with('Z'));

        let (rest, more) = page(
            c,
            Query {
                before: Some(rows[2].id),
                ..everyone
            },
        )
        .unwrap();
        assert!(!more);
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].resource, "/notes/1");

        let (anns, _) = page(
            c,
            Query {
                user_id: Some(1),
                limit: 100,
                before: None,
            },
        )
        .unwrap();
        assert_eq!(anns.len(), 2);
        assert!(anns.iter().all(|r| r.user_id == Some(1)));
    });
}

/// A batch of writes records its rows in one statement, in the batch's order, each as
/// `record` would (its resource, else its path; its actor).
#[test]
fn a_batch_records_its_writes_in_order() {
    on_each_backend(|_, c| {
        let ann = Actor::User {
            user_id: 1,
            token_id: 10,
        };
        let (first, second) = (action(ann, "/notes/1"), action(Actor::Operator, "/notes"));
        audit::record_all(c, &[]).unwrap();
        audit::record_all(
            c,
            &[(&first, None), (&second, Some("/notes/7")), (&first, None)],
        )
        .unwrap();
        let all = Query {
            before: None,
            limit: 10,
            user_id: None,
        };
        let (rows, more) = page(c, all).unwrap();
        assert!(!more);
        let seen: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| (r.resource.as_str(), r.actor.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                ("/notes/1", "user"),
                ("/notes/7", "operator"),
                ("/notes/1", "user")
            ]
        );
        assert!(rows.windows(2).all(|w| w[0].id > w[1].id));
        assert_eq!((rows[1].user_id, rows[0].token_id), (None, Some(10)));
    });
}
