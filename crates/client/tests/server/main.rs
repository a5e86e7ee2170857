//! The client against the real service over HTTP, started in-process on a random port: every
//! test runs on SQLite, and again on PostgreSQL when `TEST_POSTGRES_URL` names an admin
//! connection (each in a throwaway database).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{SystemTime, UNIX_EPOCH};

use client::{Client, IdempotencyKey};
use server::{Application, Secret, Settings};
use storage::Backend;
use storage::testing::TestDatabase;

/// The macro that declares the tests, before the area modules so that they can use it.
#[macro_use]
mod harness {
    /// The settings function of a test module: `defaults` unless one is named.
    macro_rules! settings_or_defaults {
        () => {
            crate::defaults
        };
        ($adjust:ident) => {
            super::$adjust
        };
    }

    /// Declares `async fn name(server: Running)` tests as `name::sqlite` and `name::postgres`,
    /// on a server with `defaults` or the settings function given after `=>`.
    macro_rules! on_both_backends {
        ($($name:ident $(=> $adjust:ident)?),* $(,)?) => {$(
            mod $name {
                use storage::Backend;

                const ADJUST: fn(&mut server::Settings) = settings_or_defaults!($($adjust)?);

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    let server = crate::start(Backend::Sqlite, ADJUST).await.unwrap();
                    super::$name(server).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[cfg_attr(not(postgres_tests), ignore = "needs TEST_POSTGRES_URL (a PostgreSQL server)")]
                async fn postgres() {
                    match crate::start(Backend::Postgres, ADJUST).await {
                        Some(server) => super::$name(server).await,
                        None => eprintln!("TEST_POSTGRES_URL not set: skipped on PostgreSQL"),
                    }
                }
            }
        )*};
    }
}

mod accounts;
mod articles;
mod consistency;
mod meta;
mod notes;
mod safe_writes;
mod tokens;
mod versioned;
mod webhooks;

const KEY: &str = "client-test-api-key";
const SECRET: &str = "client-test-jwt-secret-at-least-32-bytes";
const WEBHOOK_SECRET: &str = "whsec_client_test";
const SERVICE: &str = "client-test-service";

struct Running {
    base: String,
    backend: Backend,
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
        backend,
        handle,
        _db: db,
    })
}

/// The default settings of these tests.
fn defaults(_: &mut Settings) {}

/// A client of `server` that insists on talking to this test service.
fn connect(server: &Running) -> Client {
    Client::builder(&server.base)
        .expect_service(SERVICE)
        .build()
        .unwrap()
}

/// Unix seconds.
fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn key(name: &str) -> IdempotencyKey {
    IdempotencyKey::new(name).unwrap()
}
