//! Service identity, health, credentials and the problem type pages.

use client::{Client, ClientError, CredentialType, DegradedPolicy, Health, Slug};
use serde_json::json;

use crate::{KEY, Running, SECRET, SERVICE, connect, now};

on_both_backends!(
    meta_health_and_ping,
    strict_identity_rejects_another_service,
    api_key_and_bearer_credentials,
    the_audit_trail_names_each_write,
);

async fn the_audit_trail_names_each_write(server: Running) {
    let api = connect(&server);
    let note = api
        .notes()
        .create(&client::NoteInput::new("t", "b"))
        .await
        .unwrap();
    api.notes().delete(note.id).await.unwrap();
    let page = api.audit(client::AuditRequest::new(1)).await.unwrap();
    assert!(page.has_more);
    let newest = &page.items[0];
    assert_eq!(
        (newest.method.as_str(), newest.resource.as_str()),
        ("DELETE", format!("/notes/{}", note.id).as_str())
    );
    assert_eq!((newest.actor.as_str(), newest.user_id), ("anonymous", None));
    let older = api
        .audit(client::AuditRequest::new(1).before(page.next_cursor.unwrap()))
        .await
        .unwrap();
    assert_eq!(older.items[0].route, "/notes");
    assert!(!older.has_more);
}

async fn meta_health_and_ping(server: Running) {
    let api = connect(&server);
    let info = api.service_info().await.unwrap();
    assert_eq!(info.name, SERVICE);
    match api.health(DegradedPolicy::Reject).await.unwrap() {
        Health::Healthy(report) => assert_eq!(report.service, SERVICE),
        other => panic!("{other:?}"),
    }
    assert_eq!(api.ping().await.unwrap().message, "pong");
    api.live().await.unwrap();
    let metrics = api.metrics().await.unwrap();
    assert!(metrics.contains("http_requests_total{"), "{metrics}");
    let ready = api.ready().await.unwrap();
    assert!(ready.is_ready() && !ready.draining, "{ready:?}");
    assert_eq!(ready.database, client::ReadyCheck::Ok);
    for slug in Slug::ALL {
        let doc = api.problem_type(slug).await.unwrap();
        assert_eq!(
            (doc.slug.as_str(), doc.status),
            (slug.as_str(), slug.status())
        );
        assert_eq!(doc.title, slug.title());
    }
}

async fn strict_identity_rejects_another_service(server: Running) {
    let api = Client::builder(&server.base)
        .expect_service("billing")
        .api_key(KEY)
        .build()
        .unwrap();
    for err in [
        api.health(DegradedPolicy::Accept).await.unwrap_err(),
        api.machine_health().await.unwrap_err(),
        api.service_info().await.unwrap_err(),
    ] {
        match err {
            ClientError::ServiceMismatch {
                expected, actual, ..
            } => assert_eq!((expected.as_str(), actual.as_str()), ("billing", SERVICE)),
            other => panic!("{other:?}"),
        }
    }
}

async fn api_key_and_bearer_credentials(server: Running) {
    let keyed = Client::builder(&server.base).api_key(KEY).build().unwrap();
    let health = keyed.machine_health().await.unwrap();
    assert_eq!(health.credential_type, CredentialType::ApiKey);
    assert_eq!(health.service, SERVICE);

    let wrong = Client::builder(&server.base)
        .api_key("nope")
        .build()
        .unwrap();
    let err = wrong.machine_health().await.unwrap_err();
    assert!(err.is(Slug::Unauthorized), "{err:?}");
    assert!(!err.to_string().contains("nope"));
    let p = err.problem().unwrap();
    assert_eq!(p.operation, "machine_health");
    assert!(p.request_id.is_some());

    let claims = json!({"sub": "alice", "exp": now() + 60});
    let token = credentials::sign_hs256(&claims, SECRET.as_bytes());
    let bearer = Client::builder(&server.base)
        .bearer_token(token)
        .build()
        .unwrap();
    let protected = bearer.protected().await.unwrap();
    assert_eq!(protected.claims["sub"], "alice");

    let expired = credentials::sign_hs256(&json!({"exp": now() - 3600}), SECRET.as_bytes());
    let err = Client::builder(&server.base)
        .bearer_token(expired)
        .build()
        .unwrap()
        .protected()
        .await
        .unwrap_err();
    assert!(err.is(Slug::Unauthorized));
    let err = connect(&server).protected().await.unwrap_err();
    assert_eq!(err.status(), Some(401));
}
