//! Repository and service tests on a fresh migrated database: SQLite always, PostgreSQL when
//! `TEST_POSTGRES_URL` is set.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use storage::Backend;
use storage::testing::TestDatabase;
use tokens::{Error, NewUser, Scope, VerifyRequest, hash_token, repo, service};

/// The shared runner, with the test database itself left out.
fn on_each_backend(test: impl Fn(&mut storage::DbConnection)) {
    storage::testing::on_each_backend(|_, conn| test(conn));
}

fn user(c: &mut storage::DbConnection, name: &str) -> i64 {
    let input = NewUser::from_body(format!(r#"{{"name":"{name}"}}"#).as_bytes()).unwrap();
    service::create_user(c, &input).unwrap().id
}

#[test]
fn only_the_digest_is_stored_and_verify_reads_the_record() {
    on_each_backend(|c| {
        let ann = user(c, "ann");
        let issued = service::issue(
            c,
            ann,
            ann,
            br#"{"scope":"admin","label":"x"}"#,
            tokens::Policy::default(),
        )
        .unwrap();
        let raw = issued.raw.expose().to_owned();
        let by_hash = repo::tokens::find_by_hash(c, &hash_token(&raw))
            .unwrap()
            .unwrap();
        assert_eq!(by_hash, issued.token);
        assert!(repo::tokens::find_by_hash(c, &raw).unwrap().is_none());
        let (v, _) = service::verify(c, &VerifyRequest::new(raw.clone())).unwrap();
        assert!(v.valid);
        assert_eq!((v.user_id, v.scope), (Some(ann), Some(Scope::Admin)));
        assert_eq!(
            service::authenticate(c, &raw).unwrap().map(|t| t.id),
            Some(issued.token.id)
        );
        service::revoke(c, ann, ann, Some(issued.token.id)).unwrap();
        let (v, _) = service::verify(c, &VerifyRequest::new(raw.clone())).unwrap();
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
        let bobs = service::issue(c, bob, bob, b"{}", tokens::Policy::default())
            .unwrap()
            .token
            .id;
        assert!(matches!(
            service::issue(c, bob, ann, b"{", tokens::Policy::default()),
            Err(Error::Forbidden)
        ));
        assert!(matches!(
            service::issue(
                c,
                999,
                999,
                br#"{"scope":"root"}"#,
                tokens::Policy::default()
            ),
            Err(Error::UserNotFound { id: 999 })
        ));
        assert!(matches!(
            service::issue(
                c,
                ann,
                ann,
                br#"{"scope":"root"}"#,
                tokens::Policy::default()
            ),
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
        assert_eq!(service::list(c, ann, ann, None).unwrap(), (vec![], 0));
        let (listed, total) = service::list(c, bob, bob, None).unwrap();
        assert_eq!(total, 1);
        assert_eq!(listed.len(), 1);
        assert!(listed[0].revoked_at.is_some());
    });
}

/// Migration 9 on a database written by the previous release: every token it holds gets an
/// expiry in the future (the default lifetime from the upgrade, so no client is cut off) and
/// no last use; they keep authenticating. Down and up again keep the rows.
#[test]
fn the_lifecycle_migration_carries_existing_tokens_forward() {
    use storage::diesel::connection::SimpleConnection;
    const UP: [&str; 2] = [
        include_str!("../../../migrations/sqlite/2026-11-25-000009_token_lifecycle/up.sql"),
        include_str!("../../../migrations/postgres/2026-11-25-000009_token_lifecycle/up.sql"),
    ];
    const DOWN: [&str; 2] = [
        include_str!("../../../migrations/sqlite/2026-11-25-000009_token_lifecycle/down.sql"),
        include_str!("../../../migrations/postgres/2026-11-25-000009_token_lifecycle/down.sql"),
    ];
    let admin = std::env::var("TEST_POSTGRES_URL").ok();
    for (i, backend) in [Backend::Sqlite, Backend::Postgres].into_iter().enumerate() {
        let Some(db) = TestDatabase::create(backend, admin.as_deref()).unwrap() else {
            continue;
        };
        let mut c = db.migrated_connection().unwrap();
        c.batch_execute(DOWN[i]).unwrap();
        // As the previous release wrote them (its columns only).
        let raw = "ab".repeat(32);
        c.batch_execute(&format!(
            "INSERT INTO users (name, created_at) VALUES ('old', '2025-01-01T00:00:00Z'); \
             INSERT INTO tokens (user_id, token_hash, scope, label, created_at, revoked_at) \
             SELECT id, '{}', 'write', 'legacy', '2025-01-01T00:00:00Z', NULL FROM users; \
             INSERT INTO tokens (user_id, token_hash, scope, label, created_at, revoked_at) \
             SELECT id, '{}', 'read', 'gone', '2025-01-01T00:00:00Z', '2025-02-01T00:00:00Z' \
             FROM users;",
            hash_token(&raw),
            hash_token("revoked"),
        ))
        .unwrap();
        c.batch_execute(UP[i]).unwrap();
        let now = storage::timestamp::now_rfc3339();
        let user = 1; // the first user of a fresh database, on both backends
        let (tokens, _) = repo::tokens::list_for_user(&mut c, user, None).unwrap();
        assert_eq!(tokens.len(), 2, "{backend:?}");
        for t in &tokens {
            let expires = t.expires_at.as_deref().unwrap();
            assert!(
                expires > now.as_str(),
                "{backend:?}: {expires} is not in the future"
            );
            assert_eq!(t.last_used_at, None);
        }
        let legacy = service::authenticate(&mut c, &raw).unwrap().unwrap();
        assert_eq!(
            (legacy.scope, legacy.label.as_str()),
            (Scope::Write, "legacy")
        );
    }
}
