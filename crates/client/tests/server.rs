//! The client against the real service, started in-process on a random port (SQLite).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{SystemTime, UNIX_EPOCH};

use client::{
    Client, ClientError, CommentInput, CredentialType, DegradedPolicy, FieldCode, FieldErrorCode,
    Health, NoteInput, NoteV1Input, PageRequest, ProblemKind, Slug, TagInput,
};
use serde_json::json;
use server::{Application, Secret, Settings};

const KEY: &str = "client-test-api-key";
const SECRET: &str = "client-test-jwt-secret-at-least-32-bytes";
const SERVICE: &str = "client-test-service";

struct Running {
    base: String,
    handle: actix_web::dev::ServerHandle,
    _dir: tempfile::TempDir,
}

impl Drop for Running {
    fn drop(&mut self) {
        std::mem::drop(self.handle.stop(false));
    }
}

async fn start() -> Running {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        database_url: format!("sqlite://{}/client.db", dir.path().display()),
        bind: "127.0.0.1:0".parse().unwrap(),
        workers: Some(1),
        service_name: SERVICE.to_owned(),
        api_keys: vec![Secret::new(KEY)],
        jwt_secret: Some(Secret::new(SECRET)),
        ..Settings::default()
    };
    let app = Application::build(settings).await.unwrap();
    let base = format!("http://127.0.0.1:{}", app.port());
    let handle = app.handle();
    tokio::spawn(app.run_until_stopped());
    Running {
        base,
        handle,
        _dir: dir,
    }
}

fn client(server: &Running) -> Client {
    Client::builder(&server.base)
        .expect_service(SERVICE)
        .build()
        .unwrap()
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meta_health_and_ping() {
    let server = start().await;
    let api = client(&server);
    let info = api.service_info().await.unwrap();
    assert_eq!(info.name, SERVICE);
    match api.health(DegradedPolicy::Reject).await.unwrap() {
        Health::Healthy(report) => assert_eq!(report.service, SERVICE),
        other => panic!("{other:?}"),
    }
    assert_eq!(api.ping().await.unwrap().message, "pong");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_identity_rejects_another_service() {
    let server = start().await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_key_and_bearer_credentials() {
    let server = start().await;
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
    let err = client(&server).protected().await.unwrap_err();
    assert_eq!(err.status(), Some(401));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notes_core_and_example_routes_share_a_store() {
    let server = start().await;
    let api = client(&server);
    let note = api
        .notes()
        .create(&NoteInput::new("title", "body"))
        .await
        .unwrap();
    assert_eq!(api.example_notes().get(note.id).await.unwrap(), note);
    let updated = api
        .example_notes()
        .update(note.id, &NoteInput::new("t2", "b2"))
        .await
        .unwrap();
    assert_eq!(api.notes().get(note.id).await.unwrap(), updated);
    let second = api
        .example_notes()
        .create(&NoteInput::new("x", "y"))
        .await
        .unwrap();
    let page = api.notes().list(PageRequest::new(1, 1)).await.unwrap();
    assert_eq!((page.total, page.items), (2, vec![second.clone()]));
    let page = api
        .example_notes()
        .list(PageRequest::default())
        .await
        .unwrap();
    assert_eq!((page.limit, page.offset, page.items.len()), (20, 0, 2));
    api.example_notes().delete(note.id).await.unwrap();
    let err = api.notes().get(note.id).await.unwrap_err();
    let p = err.problem().unwrap();
    assert_eq!(p.kind, ProblemKind::Known(Slug::NotFound));
    assert_eq!(p.detail, format!("Note {} does not exist.", note.id));
    assert_eq!(p.operation, "get_note");
    let err = api.example_notes().delete(note.id).await.unwrap_err();
    assert_eq!(err.problem().unwrap().operation, "example_delete_note");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validation_problems_are_typed() {
    let server = start().await;
    let api = client(&server);
    let err = api
        .notes()
        .create(&NoteInput::new(" ", "x".repeat(10_001)))
        .await
        .unwrap_err();
    let p = err.problem().unwrap();
    assert_eq!(p.kind, ProblemKind::Known(Slug::ValidationFailed));
    let fields: Vec<_> = p
        .errors
        .iter()
        .map(|e| (e.field.as_str(), e.code.clone()))
        .collect();
    assert_eq!(
        fields,
        vec![
            ("title", FieldCode::Known(FieldErrorCode::Required)),
            ("body", FieldCode::Known(FieldErrorCode::TooLong)),
        ]
    );
    let err = api
        .notes()
        .list(PageRequest::new(1000, 0))
        .await
        .unwrap_err();
    assert!(err.is(Slug::ValidationFailed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_and_comments() {
    let server = start().await;
    let api = client(&server);
    let tag = api
        .example_tags()
        .create(&TagInput::new("rust"))
        .await
        .unwrap();
    assert_eq!(api.tags().get(tag.id).await.unwrap(), tag);
    let err = api.tags().create(&TagInput::new("rust")).await.unwrap_err();
    assert!(err.is(Slug::Conflict));
    let renamed = api
        .tags()
        .update(tag.id, &TagInput::new("go"))
        .await
        .unwrap();
    assert_eq!(renamed.name, "go");
    assert_eq!(
        api.example_tags()
            .list(PageRequest::default())
            .await
            .unwrap()
            .items,
        vec![renamed]
    );
    api.tags().delete(tag.id).await.unwrap();

    let note = api.notes().create(&NoteInput::new("n", "b")).await.unwrap();
    let comments = api.comments(note.id);
    let c = comments.create(&CommentInput::new("first")).await.unwrap();
    assert_eq!(c.note_id, note.id);
    assert_eq!(comments.get(c.id).await.unwrap(), c);
    let c2 = comments
        .update(c.id, &CommentInput::new("edited"))
        .await
        .unwrap();
    assert_eq!(c2.body, "edited");
    assert_eq!(
        comments.list(PageRequest::default()).await.unwrap().total,
        1
    );
    comments.delete(c.id).await.unwrap();
    let err = api.comments(999_999).list(PageRequest::default()).await;
    assert!(err.unwrap_err().is(Slug::NotFound));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_calls_carry_a_deprecation_warning() {
    let server = start().await;
    let api = client(&server);
    let created = api
        .v1_notes()
        .create(&NoteV1Input::new("old").content("style"))
        .await
        .unwrap();
    assert_eq!(created.value.content, "style");
    let warning = created.warning.expect("V1 answers are deprecated");
    assert!(warning.sunset.is_some());
    assert!(warning.days_left.is_some());
    assert_eq!(warning.successor.as_deref(), Some("/v2/notes"));
    let list = api.v1_notes().list(PageRequest::default()).await.unwrap();
    assert_eq!(list.value.notes.len(), 1);
    assert!(list.warning.is_some());
    let one = api.v1_notes().get(created.value.id).await.unwrap();
    assert_eq!(one.value, created.value);
    let err = api.v1_notes().get(424_242).await.unwrap_err();
    assert!(err.is(Slug::NotFound));
}
