//! The client against the real service over HTTP, started in-process on a random port: every
//! test runs on SQLite, and again on PostgreSQL when `TEST_POSTGRES_URL` names an admin
//! connection (each in a throwaway database).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::future::Future;
use std::time::{SystemTime, UNIX_EPOCH};

use client::{
    ArticleInput, Client, ClientError, CommentInput, Created, CredentialType, CursorRequest,
    DegradedPolicy, EventType, EventsRequest, FieldCode, FieldErrorCode, Health, IdempotencyKey,
    IssueToken, NewEvent, NoteInput, NoteV1Input, NoteV2Input, OpenAccount, PageRequest,
    ProblemKind, Scope, Slug, TagInput, TryStreamExt, UserInput,
};
use serde_json::json;
use server::middleware::token_auth::ApiAuth;
use server::{Application, Secret, Settings};
use storage::Backend;
use storage::testing::TestDatabase;

const KEY: &str = "client-test-api-key";
const SECRET: &str = "client-test-jwt-secret-at-least-32-bytes";
const WEBHOOK_SECRET: &str = "whsec_client_test";
const SERVICE: &str = "client-test-service";

struct Running {
    base: String,
    handle: actix_web::dev::ServerHandle,
    _db: TestDatabase,
}

impl Drop for Running {
    fn drop(&mut self) {
        std::mem::drop(self.handle.stop(false));
    }
}

/// The service on a fresh database of `backend`, its settings adjusted by `adjust`; `None` for
/// PostgreSQL without `TEST_POSTGRES_URL`.
async fn start(backend: Backend, adjust: fn(&mut Settings)) -> Option<Running> {
    let admin = std::env::var("TEST_POSTGRES_URL").ok();
    let db = TestDatabase::create(backend, admin.as_deref()).unwrap()?;
    let mut settings = Settings {
        database_url: db.url.clone(),
        bind: "127.0.0.1:0".parse().unwrap(),
        workers: Some(2),
        service_name: SERVICE.to_owned(),
        api_keys: vec![Secret::new(KEY)],
        jwt_secret: Some(Secret::new(SECRET)),
        webhook_secret: Some(Secret::new(WEBHOOK_SECRET)),
        ..Settings::default()
    };
    adjust(&mut settings);
    let app = Application::build(settings).await.unwrap();
    let base = format!("http://127.0.0.1:{}", app.port());
    let handle = app.handle();
    tokio::spawn(app.run_until_stopped());
    Some(Running {
        base,
        handle,
        _db: db,
    })
}

/// The default settings of these tests.
fn defaults(_: &mut Settings) {}

/// `API_AUTH=tokens`: every route but a few public ones needs a bearer token.
fn tokens_mode(settings: &mut Settings) {
    settings.api_auth = ApiAuth::Tokens;
}

/// The settings function of a test module: [`defaults`] unless one is named.
macro_rules! settings_or_defaults {
    () => {
        super::defaults
    };
    ($adjust:ident) => {
        super::$adjust
    };
}

/// Declares `async fn name(server: Running)` tests as `name::sqlite` and `name::postgres`, on
/// a server with [`defaults`] or the settings function given after `=>`.
macro_rules! on_both_backends {
    ($($name:ident $(=> $adjust:ident)?),* $(,)?) => {$(
        mod $name {
            use super::{Backend, start};

            const ADJUST: fn(&mut server::Settings) = settings_or_defaults!($($adjust)?);

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(start(Backend::Sqlite, ADJUST).await.unwrap()).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                match start(Backend::Postgres, ADJUST).await {
                    Some(server) => super::$name(server).await,
                    None => eprintln!("TEST_POSTGRES_URL not set: skipped on PostgreSQL"),
                }
            }
        }
    )*};
}

on_both_backends!(
    meta_health_and_ping,
    strict_identity_rejects_another_service,
    api_key_and_bearer_credentials,
    notes_core_and_example_routes_share_a_store,
    validation_problems_are_typed,
    tags_and_comments,
    v1_calls_carry_a_deprecation_warning,
    v2_notes,
    articles_pages_and_streams,
    token_lifecycle,
    accounts_events_and_concurrency,
    webhook_deliveries,
    idempotent_creates_write_once,
    conditional_writes_never_lose_an_update,
    issued_tokens_authenticate_the_client => tokens_mode,
);

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

fn key(name: &str) -> IdempotencyKey {
    IdempotencyKey::new(name).unwrap()
}

async fn meta_health_and_ping(server: Running) {
    let api = client(&server);
    let info = api.service_info().await.unwrap();
    assert_eq!(info.name, SERVICE);
    match api.health(DegradedPolicy::Reject).await.unwrap() {
        Health::Healthy(report) => assert_eq!(report.service, SERVICE),
        other => panic!("{other:?}"),
    }
    assert_eq!(api.ping().await.unwrap().message, "pong");
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
    let err = client(&server).protected().await.unwrap_err();
    assert_eq!(err.status(), Some(401));
}

async fn notes_core_and_example_routes_share_a_store(server: Running) {
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
    assert_eq!(page.next_offset, None);
    let page = api
        .example_notes()
        .list(PageRequest::default())
        .await
        .unwrap();
    assert_eq!((page.limit, page.offset, page.items.len()), (20, 0, 2));

    for i in 0..5 {
        api.notes()
            .create(&NoteInput::new(format!("n{i}"), "b"))
            .await
            .unwrap();
    }
    let every: Vec<_> = api.notes().stream(2).try_collect().await.unwrap();
    let ids: Vec<i64> = every.iter().map(|n| n.id).collect();
    assert_eq!(every.len(), 7);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert_eq!(every[..2], [updated.clone(), second.clone()]);

    api.example_notes().delete(note.id).await.unwrap();
    let err = api.notes().get(note.id).await.unwrap_err();
    let p = err.problem().unwrap();
    assert_eq!(p.kind, ProblemKind::Known(Slug::NotFound));
    assert_eq!(p.detail, format!("Note {} does not exist.", note.id));
    assert_eq!(p.operation, "get_note");
    let err = api.example_notes().delete(note.id).await.unwrap_err();
    assert_eq!(err.problem().unwrap().operation, "example_delete_note");
}

async fn validation_problems_are_typed(server: Running) {
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
    let err = api
        .articles()
        .create(&ArticleInput::new("t", " "))
        .await
        .unwrap_err();
    assert_eq!(err.problem().unwrap().errors[0].field, "author");
    let err = api.accounts().get("..").await.unwrap_err();
    assert!(matches!(err, ClientError::InvalidInput(_)), "{err:?}");
    let err = api.accounts().get("no/such").await.unwrap_err();
    assert!(err.is(Slug::NotFound), "{err:?}");
}

async fn tags_and_comments(server: Running) {
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
    assert!(api.tags().get(tag.id).await.unwrap_err().is(Slug::NotFound));

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
    let page = comments.list(PageRequest::default()).await.unwrap();
    assert_eq!((page.total, page.items), (1, vec![c2]));
    comments.delete(c.id).await.unwrap();
    assert_eq!(
        comments.list(PageRequest::default()).await.unwrap().total,
        0
    );
    let err = api.comments(999_999).list(PageRequest::default()).await;
    assert!(err.unwrap_err().is(Slug::NotFound));
}

async fn v1_calls_carry_a_deprecation_warning(server: Running) {
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
    assert_eq!(list.value.notes, vec![created.value.clone()]);
    assert!(list.warning.is_some());
    let one = api.v1_notes().get(created.value.id).await.unwrap();
    assert_eq!(one.value, created.value);
    assert!(one.warning.is_some());
    let err = api.v1_notes().get(424_242).await.unwrap_err();
    assert!(err.is(Slug::NotFound));

    // One store behind both versions; V2 answers carry no warning.
    let v2 = api.v2_notes().get(created.value.id).await.unwrap();
    assert_eq!((v2.title.as_str(), v2.body.as_str()), ("old", "style"));

    // Four V1 calls so far, all from this one (anonymous) caller.
    let usage = api.v1_usage(PageRequest::new(10, 0)).await.unwrap();
    assert_eq!(usage.total, 1);
    assert_eq!(usage.items[0].calls, 4);
    assert!(usage.items[0].caller.starts_with("ip:"), "{usage:?}");
}

async fn v2_notes(server: Running) {
    let api = client(&server);
    let notes = api.v2_notes();
    let first = notes
        .create(&NoteV2Input::new("one").body("b").tags(["x", "x", "y"]))
        .await
        .unwrap();
    assert_eq!(first.tags, ["x", "x", "y"]);
    let second = notes.create(&NoteV2Input::new("two")).await.unwrap();
    assert_eq!((second.body.as_str(), second.tags.len()), ("", 0));
    assert_eq!(notes.get(first.id).await.unwrap(), first);

    let list = notes.list(PageRequest::new(1, 0)).await.unwrap();
    assert_eq!(list.data, vec![second.clone()], "id descending");
    assert_eq!((list.meta.limit, list.meta.total), (1, 2));

    let tagged = notes.get_tagged(first.id).await.unwrap();
    assert_eq!(tagged.value, first);
    assert_eq!(
        notes
            .get_if_none_match(first.id, &tagged.etag)
            .await
            .unwrap(),
        None
    );
    let other = notes.get_tagged(second.id).await.unwrap().etag;
    assert_ne!(other, tagged.etag);
    let fresh = notes.get_if_none_match(first.id, &other).await.unwrap();
    assert_eq!(fresh, Some(tagged));
    assert!(notes.get(9_999).await.unwrap_err().is(Slug::NotFound));
}

async fn articles_pages_and_streams(server: Running) {
    let api = client(&server);
    let articles = api.articles();
    let mut made = Vec::new();
    for i in 0..8 {
        let input = ArticleInput::new(format!("article {i}"), "Ann");
        let input = if i % 2 == 0 {
            input.category("even")
        } else {
            input
        };
        made.push(articles.create(&input).await.unwrap());
    }
    assert_eq!(made[0].category.as_deref(), Some("even"));
    assert_eq!(made[1].category, None);
    made.reverse(); // both lists are id descending
    let ids = |list: &[client::Article]| list.iter().map(|a| a.id).collect::<Vec<_>>();

    let page = articles.list_offset(PageRequest::new(3, 3)).await.unwrap();
    assert_eq!(page.items, made[3..6]);
    assert_eq!(
        (page.total, page.has_more, page.next_offset),
        (8, true, Some(6))
    );
    let last = articles.list_offset(PageRequest::new(3, 6)).await.unwrap();
    assert_eq!((ids(&last.items), last.has_more), (ids(&made[6..]), false));

    let first = articles.list_cursor(CursorRequest::new(3)).await.unwrap();
    assert_eq!(first.items, made[..3]);
    assert_eq!(first.next_cursor, Some(made[2].id));
    let next = articles
        .list_cursor(CursorRequest::new(3).after(made[2].id))
        .await
        .unwrap();
    assert_eq!(next.items, made[3..6]);

    // Three pages of three: every article once, in order, by either route.
    let by_offset: Vec<_> = articles.offset_stream(3).try_collect().await.unwrap();
    assert_eq!(by_offset, made);
    let by_cursor: Vec<_> = articles.cursor_stream(3).try_collect().await.unwrap();
    assert_eq!(by_cursor, made);
    let one_page: Vec<_> = articles.cursor_stream(100).try_collect().await.unwrap();
    assert_eq!(one_page, made);

    // Rows inserted while the cursor walk runs never make it repeat or skip one.
    let mut walk = std::pin::pin!(articles.cursor_stream(2));
    let mut seen = vec![walk.try_next().await.unwrap().unwrap()];
    articles
        .create(&ArticleInput::new("late", "Bob"))
        .await
        .unwrap();
    while let Some(article) = walk.try_next().await.unwrap() {
        seen.push(article);
    }
    assert_eq!(seen, made);
}

async fn token_lifecycle(server: Running) {
    let api = client(&server);
    let user = api.users().create(&UserInput::new("ann")).await.unwrap();
    assert_eq!(user.name, "ann");
    let tokens = api.users().tokens(user.id);
    let issued = tokens
        .issue(&IssueToken {
            scope: Some(Scope::Write),
            label: Some("ci".into()),
            ..IssueToken::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (issued.user_id, issued.scope, issued.label.as_str()),
        (user.id, Scope::Write, "ci")
    );
    assert_eq!(issued.token.expose().len(), 64);
    assert!(!format!("{issued:?}").contains(issued.token.expose()));

    let check = api.users().verify_token(&issued.token).await.unwrap();
    assert_eq!(
        (check.valid, check.user_id, check.scope),
        (true, Some(user.id), Some(Scope::Write))
    );
    let unknown = client::RawToken::new("0".repeat(64));
    let check = api.users().verify_token(&unknown).await.unwrap();
    assert_eq!(
        (check.valid, check.user_id, check.scope),
        (false, None, None)
    );

    let rotated = tokens.rotate(issued.id).await.unwrap();
    assert_ne!(rotated.token, issued.token);
    assert_eq!(
        (rotated.scope, rotated.label.as_str()),
        (Scope::Write, "ci")
    );
    assert!(!api.users().verify_token(&issued.token).await.unwrap().valid);
    assert!(
        api.users()
            .verify_token(&rotated.token)
            .await
            .unwrap()
            .valid
    );

    let list = tokens.list(PageRequest::default()).await.unwrap();
    assert_eq!(list.total, 2);
    let listed: Vec<_> = list
        .items
        .iter()
        .map(|t| (t.id, t.revoked_at.is_some()))
        .collect();
    assert_eq!(
        listed,
        vec![(rotated.id, false), (issued.id, true)],
        "newest first"
    );
    let page = tokens.list(PageRequest::new(1, 1)).await.unwrap();
    assert_eq!((page.total, page.items.len()), (2, 1));

    tokens.revoke(rotated.id).await.unwrap();
    let check = api.users().verify_token(&rotated.token).await.unwrap();
    assert_eq!((check.valid, check.user_id), (false, Some(user.id)));
    match tokens.revoke(rotated.id).await.unwrap_err() {
        ClientError::Refused { status, error, .. } => {
            assert_eq!((status, error.as_str()), (409, "token already revoked"))
        }
        other => panic!("{other:?}"),
    }
    match api
        .users()
        .tokens(user.id + 100)
        .list(PageRequest::default())
        .await
    {
        Err(ClientError::Refused {
            status: 404, error, ..
        }) => assert_eq!(error, "user not found"),
        other => panic!("{other:?}"),
    }
    match api.users().create(&UserInput::new(" ")).await {
        Err(ClientError::Refused {
            status: 422, error, ..
        }) => assert_eq!(error, "name is required"),
        other => panic!("{other:?}"),
    }
}

async fn accounts_events_and_concurrency(server: Running) {
    let api = client(&server);
    let accounts = api.accounts();
    let opened = accounts
        .open(&OpenAccount::new("acc-1", "Ann"))
        .await
        .unwrap();
    assert_eq!(
        (opened.event_type, opened.sequence),
        (EventType::AccountOpened, 1)
    );
    assert_eq!(opened.payload["owner"], "Ann");
    accounts
        .open(&OpenAccount::new("acc-0", "Zed"))
        .await
        .unwrap();
    let err = accounts
        .open(&OpenAccount::new("acc-1", "Bob"))
        .await
        .unwrap_err();
    assert!(err.is(Slug::Conflict), "{err:?}");

    let deposit = accounts
        .append("acc-1", &NewEvent::deposit(1_000))
        .await
        .unwrap();
    assert_eq!(
        (deposit.event_type, deposit.sequence),
        (EventType::MoneyDeposited, 2)
    );
    accounts
        .append("acc-1", &NewEvent::withdraw(300).expecting(2))
        .await
        .unwrap();
    let account = accounts.get("acc-1").await.unwrap();
    assert_eq!((account.balance_cents, account.last_sequence), (700, 3));

    // A stale expected_sequence and a withdrawal above the balance: typed, nothing written.
    let err = accounts
        .append("acc-1", &NewEvent::deposit(5).expecting(2))
        .await
        .unwrap_err();
    assert!(err.is(Slug::Conflict), "{err:?}");
    let err = accounts
        .append("acc-1", &NewEvent::withdraw(701))
        .await
        .unwrap_err();
    assert!(err.is(Slug::InsufficientFunds), "{err:?}");
    assert_eq!(accounts.get("acc-1").await.unwrap(), account);

    // If-Match: the account's ETag is its last sequence.
    let tagged = accounts.get_tagged("acc-1").await.unwrap();
    assert_eq!(tagged.etag, account.etag());
    assert_eq!(
        accounts
            .get_if_none_match("acc-1", &tagged.etag)
            .await
            .unwrap(),
        None
    );
    accounts
        .append_if_match("acc-1", &tagged.etag, &NewEvent::deposit(50))
        .await
        .unwrap();
    let err = accounts
        .append_if_match("acc-1", &tagged.etag, &NewEvent::deposit(50))
        .await
        .unwrap_err();
    assert!(err.is(Slug::PreconditionFailed), "{err:?}");
    let now = accounts
        .get_if_none_match("acc-1", &tagged.etag)
        .await
        .unwrap()
        .expect("changed since");
    assert_eq!((now.value.balance_cents, now.value.last_sequence), (750, 4));

    for _ in 0..5 {
        accounts
            .append("acc-1", &NewEvent::deposit(10))
            .await
            .unwrap();
    }
    let page = accounts
        .events(
            "acc-1",
            EventsRequest {
                after_sequence: Some(2),
                limit: Some(3),
            },
        )
        .await
        .unwrap();
    let seqs: Vec<i64> = page.items.iter().map(|e| e.sequence).collect();
    assert_eq!(
        (seqs, page.total, page.next_cursor),
        (vec![3, 4, 5], 9, Some(5))
    );
    let history: Vec<_> = accounts
        .event_stream("acc-1", 2)
        .try_collect()
        .await
        .unwrap();
    let seqs: Vec<i64> = history.iter().map(|e| e.sequence).collect();
    assert_eq!(seqs, (1..=9).collect::<Vec<_>>());
    assert_eq!(history[1], deposit);

    accounts.append("acc-1", &NewEvent::close()).await.unwrap();
    let err = accounts
        .append("acc-1", &NewEvent::deposit(1))
        .await
        .unwrap_err();
    assert!(err.is(Slug::AccountClosed), "{err:?}");

    let list = accounts.list(PageRequest::new(1, 0)).await.unwrap();
    assert_eq!(
        (list.total, list.items[0].account_id.as_str()),
        (2, "acc-0")
    );
    let all: Vec<_> = accounts.stream(1).try_collect().await.unwrap();
    let ids: Vec<_> = all.iter().map(|a| a.account_id.as_str()).collect();
    assert_eq!(ids, ["acc-0", "acc-1"]);
    assert!(!all[1].is_open);
    assert!(accounts.get("acc-9").await.unwrap_err().is(Slug::NotFound));
}

async fn webhook_deliveries(server: Running) {
    let api = client(&server);
    let hooks = api.webhooks();
    let mut receipts = Vec::new();
    for i in 0..3 {
        let body = format!(r#"{{"event_type":"note.created","data":{{"id":{i}}}}}"#);
        receipts.push(
            hooks
                .deliver(WEBHOOK_SECRET.as_bytes(), body.as_bytes())
                .await
                .unwrap(),
        );
    }
    let page = hooks.list(PageRequest::new(2, 0)).await.unwrap();
    assert_eq!(page.total, 3);
    assert_eq!(page.items[0].id, receipts[2].id, "newest first");
    assert_eq!(page.items[0].event_type, "note.created");
    assert_eq!(
        page.items[0].payload,
        r#"{"event_type":"note.created","data":{"id":2}}"#
    );
    let all: Vec<_> = hooks.stream(2).try_collect().await.unwrap();
    let ids: Vec<i64> = all.iter().map(|e| e.id).collect();
    assert_eq!(ids, receipts.iter().rev().map(|r| r.id).collect::<Vec<_>>());

    let err = hooks
        .deliver(b"another secret", br#"{"event_type":"x"}"#)
        .await
        .unwrap_err();
    assert!(err.is(Slug::InvalidSignature), "{err:?}");
    let err = hooks
        .deliver(WEBHOOK_SECRET.as_bytes(), br#"{"no_type":1}"#)
        .await
        .unwrap_err();
    assert!(err.is(Slug::InvalidBody), "{err:?}");
    assert_eq!(hooks.list(PageRequest::default()).await.unwrap().total, 3);
}

/// Sends one keyed create twice: the second answer must replay the first. Answers the value.
async fn replayed<T, Fut>(create: impl Fn() -> Fut) -> T
where
    T: PartialEq + std::fmt::Debug,
    Fut: Future<Output = Result<Created<T>, ClientError>>,
{
    let first = create().await.unwrap();
    let again = create().await.unwrap();
    assert!(!first.replayed && again.replayed, "{first:?} {again:?}");
    assert_eq!((&again.value, &again.etag), (&first.value, &first.etag));
    first.value
}

async fn idempotent_creates_write_once(server: Running) {
    let api = client(&server);
    let (notes, k) = (api.notes(), key("note-1"));
    let input = NoteInput::new("once", "only");
    let note = replayed(|| notes.create_with_key(&input, &k)).await;
    let count = || async { notes.list(PageRequest::default()).await.unwrap().total };
    assert_eq!(count().await, 1);
    let err = notes
        .create_with_key(&NoteInput::new("other", "body"), &k)
        .await
        .unwrap_err();
    assert!(err.is(Slug::IdempotencyKeyReused), "{err:?}");
    assert_eq!(count().await, 1);
    // Random keys: two plain creates are two rows.
    notes.create(&input).await.unwrap();
    notes.create(&input).await.unwrap();
    assert_eq!(count().await, 3);

    // Every other keyed create answers a replay the same way.
    let [kc, kt, kv1, kv2, ka, ku, ko] = ["c", "t", "v1", "v2", "a", "u", "open"].map(key);
    let (comments, c) = (api.comments(note.id), CommentInput::new("c"));
    replayed(|| comments.create_with_key(&c, &kc)).await;
    let (tags, t) = (api.example_tags(), TagInput::new("t"));
    let tag = replayed(|| tags.create_with_key(&t, &kt)).await;
    // The same key and body on another route is another request.
    let err = api.tags().create_with_key(&t, &kt).await.unwrap_err();
    assert!(err.is(Slug::IdempotencyKeyReused), "{err:?}");
    assert_eq!(api.tags().get(tag.id).await.unwrap(), tag);
    let (v1, input) = (api.v1_notes(), NoteV1Input::new("v1"));
    replayed(|| async {
        let made = v1.create_with_key(&input, &kv1).await?;
        assert!(made.warning.is_some());
        Ok(made.value)
    })
    .await;
    let (v2, input) = (api.v2_notes(), NoteV2Input::new("v2").tags(["a"]));
    replayed(|| v2.create_with_key(&input, &kv2)).await;
    let total = v2.list(PageRequest::default()).await.unwrap().meta.total;
    assert_eq!(total, 2);
    let (articles, article) = (api.articles(), ArticleInput::new("a", "b"));
    replayed(|| articles.create_with_key(&article, &ka)).await;
    let total = articles
        .list_offset(PageRequest::default())
        .await
        .unwrap()
        .total;
    assert_eq!(total, 1);
    let (users, user) = (api.users(), UserInput::new("u"));
    replayed(|| users.create_with_key(&user, &ku)).await;
    // Area D answers even this refusal with its own body.
    match users.create_with_key(&UserInput::new("v"), &ku).await {
        Err(ClientError::Refused { status: 422, .. }) => {}
        other => panic!("{other:?}"),
    }

    // The ledger keeps its own keys: a reused one is 409 conflict there.
    let (accounts, open) = (api.accounts(), OpenAccount::new("acc", "o"));
    replayed(|| accounts.open_with_key(&open, &ko)).await;
    let (pay, deposit) = (key("pay-1"), NewEvent::deposit(100));
    replayed(|| accounts.append_with_key("acc", &deposit, &pay)).await;
    let err = accounts
        .append_with_key("acc", &NewEvent::deposit(7), &pay)
        .await
        .unwrap_err();
    assert!(err.is(Slug::Conflict), "{err:?}");
    assert_eq!(accounts.get("acc").await.unwrap().balance_cents, 100);
}

async fn conditional_writes_never_lose_an_update(server: Running) {
    let api = client(&server);
    let notes = api.notes();
    let note = notes
        .create_with_key(&NoteInput::new("v1", "b"), &key("n"))
        .await
        .unwrap();
    let seen = notes.get_tagged(note.value.id).await.unwrap();
    assert_eq!(
        Some(&seen.etag),
        note.etag.as_ref(),
        "a create answers the GET's tag"
    );
    assert_eq!(
        notes
            .get_if_none_match(note.value.id, &seen.etag)
            .await
            .unwrap(),
        None
    );

    // Two editors read the same version; the second write is refused, nothing written.
    let won = notes
        .update_if_match(note.value.id, &seen.etag, &NoteInput::new("v2", "mine"))
        .await
        .unwrap();
    assert_ne!(won.etag, seen.etag);
    let err = notes
        .update_if_match(note.value.id, &seen.etag, &NoteInput::new("v2", "theirs"))
        .await
        .unwrap_err();
    assert!(err.is(Slug::PreconditionFailed), "{err:?}");
    assert_eq!(err.status(), Some(412));
    assert_eq!(notes.get(note.value.id).await.unwrap().body, "mine");
    let err = notes
        .delete_if_match(note.value.id, &seen.etag)
        .await
        .unwrap_err();
    assert!(err.is(Slug::PreconditionFailed), "{err:?}");
    let fresh = notes
        .get_if_none_match(note.value.id, &seen.etag)
        .await
        .unwrap()
        .expect("changed since");
    assert_eq!(fresh, won);
    notes
        .delete_if_match(note.value.id, &won.etag)
        .await
        .unwrap();
    assert!(
        notes
            .get(note.value.id)
            .await
            .unwrap_err()
            .is(Slug::NotFound)
    );

    // The same on tags and comments.
    let tag = api.tags().create(&TagInput::new("a")).await.unwrap();
    let tag_seen = api.tags().get_tagged(tag.id).await.unwrap();
    api.tags()
        .update(tag.id, &TagInput::new("b"))
        .await
        .unwrap();
    let err = api
        .tags()
        .update_if_match(tag.id, &tag_seen.etag, &TagInput::new("c"))
        .await
        .unwrap_err();
    assert!(err.is(Slug::PreconditionFailed));
    assert_eq!(api.tags().get(tag.id).await.unwrap().name, "b");
    let parent = notes.create(&NoteInput::new("p", "b")).await.unwrap();
    let comments = api.comments(parent.id);
    let c = comments.create(&CommentInput::new("x")).await.unwrap();
    let c_seen = comments.get_tagged(c.id).await.unwrap();
    let c_new = comments
        .update_if_match(c.id, &c_seen.etag, &CommentInput::new("y"))
        .await
        .unwrap();
    assert_eq!(c_new.value.body, "y");
    let tags_seen: HashSet<_> = [tag_seen.etag, c_seen.etag, c_new.etag].into();
    assert_eq!(tags_seen.len(), 3);
}

async fn issued_tokens_authenticate_the_client(server: Running) {
    let anonymous = client(&server);
    let err = anonymous
        .notes()
        .list(PageRequest::default())
        .await
        .unwrap_err();
    assert!(err.is(Slug::Unauthorized), "{err:?}");
    // The operator key makes users and their first tokens.
    let operator = Client::builder(&server.base).api_key(KEY).build().unwrap();
    let user = operator
        .users()
        .create(&UserInput::new("ann"))
        .await
        .unwrap();
    let tokens = operator.users().tokens(user.id);
    let scoped = |scope| IssueToken {
        scope: Some(scope),
        ..IssueToken::default()
    };
    let writer = tokens.issue(&scoped(Scope::Write)).await.unwrap();
    let reader = tokens.issue(&scoped(Scope::Read)).await.unwrap();
    let as_user = |token: &client::RawToken| {
        Client::builder(&server.base)
            .bearer_token(token.expose())
            .build()
            .unwrap()
    };

    let note = as_user(&writer.token)
        .notes()
        .create(&NoteInput::new("mine", "b"))
        .await
        .unwrap();
    let reading = as_user(&reader.token);
    assert_eq!(reading.notes().get(note.id).await.unwrap(), note);
    let err = reading
        .notes()
        .create(&NoteInput::new("x", "y"))
        .await
        .unwrap_err();
    assert!(err.is(Slug::Forbidden), "{err:?}");

    tokens.revoke(writer.id).await.unwrap();
    let err = as_user(&writer.token)
        .notes()
        .get(note.id)
        .await
        .unwrap_err();
    assert!(err.is(Slug::Unauthorized), "{err:?}");
    // Verification is public.
    let check = anonymous.users().verify_token(&reader.token).await.unwrap();
    assert_eq!((check.valid, check.scope), (true, Some(Scope::Read)));
}
