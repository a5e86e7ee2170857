//! Repository and service tests on a fresh migrated database: SQLite always, PostgreSQL when
//! `TEST_POSTGRES_URL` is set.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use storage::Backend;
use storage::testing::TestDatabase;
use tokens::{Error, NewUser, Scope, VerifyRequest, hash_token, repo, service};

fn on_each_backend(test: impl Fn(&mut storage::DbConnection)) {
    let admin = std::env::var("TEST_POSTGRES_URL").ok();
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let Some(db) = TestDatabase::create(backend, admin.as_deref()).unwrap() else {
            continue;
        };
        let mut conn = db.migrated_connection().unwrap();
        test(&mut conn);
    }
}

fn user(c: &mut storage::DbConnection, name: &str) -> i64 {
    let input = NewUser::from_body(format!(r#"{{"name":"{name}"}}"#).as_bytes()).unwrap();
    service::create_user(c, &input).unwrap().id
}

#[test]
fn only_the_digest_is_stored_and_verify_reads_the_record() {
    on_each_backend(|c| {
        let ann = user(c, "ann");
        let issued = service::issue(c, ann, ann, br#"{"scope":"admin","label":"x"}"#).unwrap();
        let raw = issued.raw.expose().to_owned();
        let by_hash = repo::tokens::find_by_hash(c, &hash_token(&raw))
            .unwrap()
            .unwrap();
        assert_eq!(by_hash, issued.token);
        assert!(repo::tokens::find_by_hash(c, &raw).unwrap().is_none());
        let v = service::verify(c, &VerifyRequest::new(raw.clone())).unwrap();
        assert!(v.valid);
        assert_eq!((v.user_id, v.scope), (Some(ann), Some(Scope::Admin)));
        assert_eq!(
            service::authenticate(c, &raw).unwrap().map(|t| t.id),
            Some(issued.token.id)
        );
        service::revoke(c, ann, ann, Some(issued.token.id)).unwrap();
        let v = service::verify(c, &VerifyRequest::new(raw.clone())).unwrap();
        assert!(!v.valid);
        assert_eq!((v.user_id, v.scope), (Some(ann), Some(Scope::Admin)));
        assert!(service::authenticate(c, &raw).unwrap().is_none());
    });
}

#[test]
fn checks_run_in_the_promised_order() {
    on_each_backend(|c| {
        let ann = user(c, "ann");
        let bob = user(c, "bob");
        let bobs = service::issue(c, bob, bob, b"{}").unwrap().token.id;
        assert!(matches!(
            service::issue(c, bob, ann, b"{"),
            Err(Error::Forbidden)
        ));
        assert!(matches!(
            service::issue(c, 999, 999, br#"{"scope":"root"}"#),
            Err(Error::UserNotFound { id: 999 })
        ));
        assert!(matches!(
            service::issue(c, ann, ann, br#"{"scope":"root"}"#),
            Err(Error::InvalidScope)
        ));
        assert!(matches!(
            service::revoke(c, ann, ann, None),
            Err(Error::TokenNotFound)
        ));
        assert!(matches!(
            service::revoke(c, ann, ann, Some(bobs)),
            Err(Error::Forbidden)
        ));
        service::revoke(c, bob, bob, Some(bobs)).unwrap();
        assert!(matches!(
            service::revoke(c, bob, bob, Some(bobs)),
            Err(Error::AlreadyRevoked { .. })
        ));
        assert!(service::list(c, ann, ann).unwrap().is_empty());
        let listed = service::list(c, bob, bob).unwrap();
        assert_eq!(listed.len(), 1);
        assert!(listed[0].revoked_at.is_some());
    });
}
