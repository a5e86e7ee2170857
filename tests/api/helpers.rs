use std::time::Duration;

use reqwest::{Method, Response, StatusCode};
use serde_json::Value;
use server::{Application, Settings};
use storage::testing::TestDatabase;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A database made for one test and removed afterwards.
pub struct TestDb {
    pub url: String,
    _db: TestDatabase,
}

impl TestDb {
    /// `None` when the backend is PostgreSQL and `TEST_POSTGRES_URL` is not set.
    pub fn create(backend: Backend) -> Option<TestDb> {
        let backend = match backend {
            Backend::Sqlite => storage::Backend::Sqlite,
            Backend::Postgres => storage::Backend::Postgres,
        };
        let admin = std::env::var("TEST_POSTGRES_URL").ok();
        let db = TestDatabase::create(backend, admin.as_deref()).expect("test database")?;
        Some(TestDb {
            url: db.url.clone(),
            _db: db,
        })
    }
}

pub struct TestApp {
    pub address: String,
    pub client: reqwest::Client,
    #[allow(dead_code)]
    pub backend: Backend,
    #[allow(dead_code)]
    pub db: TestDb,
    handle: actix_web::dev::ServerHandle,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        // Stop the workers; the database is dropped after.
        let handle = self.handle.clone();
        std::mem::drop(handle.stop(false));
    }
}

pub fn test_settings(db: &TestDb) -> Settings {
    Settings {
        database_url: db.url.clone(),
        bind: "127.0.0.1:0".parse().unwrap(),
        workers: Some(2),
        // The suite runs hundreds of servers at once on two cores with every write synced: a
        // healthy write can wait seconds there. The production deadlines (2 s) would turn that
        // wait into a 503 and fail an unrelated test, so the suite waits longer; the tests of
        // the deadlines themselves set the ones they check.
        db_timeouts: storage::Timeouts {
            checkout: Duration::from_secs(15),
            lock: Duration::from_secs(15),
            queue: Duration::from_secs(15),
            answer: Duration::from_secs(20),
            ..storage::Timeouts::default()
        },
        ..Settings::default()
    }
}

impl TestApp {
    pub async fn spawn(backend: Backend) -> Option<TestApp> {
        TestApp::spawn_with(backend, |_| {}).await
    }

    /// Starts the real application on a fresh database with adjusted settings.
    pub async fn spawn_with(
        backend: Backend,
        adjust: impl FnOnce(&mut Settings),
    ) -> Option<TestApp> {
        let db = TestDb::create(backend)?;
        let mut settings = test_settings(&db);
        adjust(&mut settings);
        let app = Application::build(settings)
            .await
            .expect("application starts");
        Some(TestApp::start(app, backend, db))
    }

    pub fn start(app: Application, backend: Backend, db: TestDb) -> TestApp {
        let address = format!("http://127.0.0.1:{}", app.port());
        let handle = app.handle();
        tokio::spawn(app.run_until_stopped());
        TestApp {
            address,
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
            backend,
            db,
            handle,
        }
    }

    /// Stops the server (gracefully); the database stays for another one.
    pub async fn handle_stop(&self) {
        self.handle.stop(true).await;
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.address, path)
    }

    pub fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.client.request(method, self.url(path))
    }

    pub async fn get(&self, path: &str) -> Response {
        self.request(Method::GET, path).send().await.unwrap()
    }

    pub async fn delete(&self, path: &str) -> Response {
        self.request(Method::DELETE, path).send().await.unwrap()
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> Response {
        self.request(Method::POST, path)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    pub async fn put_json(&self, path: &str, body: &Value) -> Response {
        self.request(Method::PUT, path)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// Sends raw bytes with the given content type.
    pub async fn send_raw(
        &self,
        method: Method,
        path: &str,
        content_type: &str,
        body: impl Into<reqwest::Body>,
    ) -> Response {
        self.request(method, path)
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap()
    }

    pub async fn create_note(&self, title: &str, body: &str) -> Value {
        let res = self
            .post_json("/notes", &serde_json::json!({"title": title, "body": body}))
            .await;
        assert_eq!(res.status(), StatusCode::CREATED);
        res.json().await.unwrap()
    }
}

/// Reads a JSON body, asserting the status first.
pub async fn json(res: Response, status: StatusCode) -> Value {
    let actual = res.status();
    let text = res.text().await.unwrap();
    assert_eq!(actual, status, "unexpected status; body: {text}");
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
}

/// Asserts a problem document with this status and slug; returns it.
pub async fn problem(res: Response, status: StatusCode, slug: &str) -> Value {
    assert_eq!(
        res.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/problem+json"),
        "problem content type"
    );
    assert!(res.headers().contains_key("x-request-id"));
    let body = json(res, status).await;
    let ty = body["type"].as_str().unwrap();
    assert!(ty.ends_with(&format!("/{slug}")), "type {ty} is not {slug}");
    assert_eq!(body["status"], status.as_u16());
    assert!(body["title"].is_string());
    assert!(body["detail"].is_string());
    body
}

/// The `(field, code)` pairs of a 422's `errors`.
pub fn field_errors(problem: &Value) -> Vec<(String, String)> {
    problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert!(e["message"].is_string());
            (
                e["field"].as_str().unwrap().to_owned(),
                e["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Declares `async fn name(app: TestApp)` tests to run on both backends:
/// `name::sqlite` and `name::postgres` (the latter passes trivially without
/// `TEST_POSTGRES_URL`).
#[macro_export]
macro_rules! api_tests {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use $crate::helpers::{Backend, TestApp};

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let app = TestApp::spawn(Backend::Sqlite).await.unwrap();
                super::$name(app).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[cfg_attr(not(postgres_tests), ignore = "needs TEST_POSTGRES_URL (a PostgreSQL server)")]
            async fn postgres() {
                match TestApp::spawn(Backend::Postgres).await {
                    Some(app) => super::$name(app).await,
                    None => eprintln!("TEST_POSTGRES_URL not set: skipped"),
                }
            }
        }
    )*};
}

/// Like [`api_tests!`] for tests that take a backend and build their own app.
#[macro_export]
macro_rules! backend_tests {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use $crate::helpers::Backend;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(Backend::Sqlite).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[cfg_attr(not(postgres_tests), ignore = "needs TEST_POSTGRES_URL (a PostgreSQL server)")]
            async fn postgres() {
                if std::env::var("TEST_POSTGRES_URL").is_ok() {
                    super::$name(Backend::Postgres).await;
                } else {
                    eprintln!("TEST_POSTGRES_URL not set: skipped");
                }
            }
        }
    )*};
}

/// For property tests, whose runner is synchronous: a runtime of their own with the app
/// running on it; drive requests with `rt.block_on`. `None` for PostgreSQL without
/// `TEST_POSTGRES_URL`.
pub fn app_on_own_runtime(backend: Backend) -> Option<(TestApp, tokio::runtime::Runtime)> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let app = rt.block_on(TestApp::spawn(backend))?;
    Some((app, rt))
}

/// Like [`backend_tests!`] for synchronous tests (property tests that build their own runtime
/// with [`app_on_own_runtime`]).
#[macro_export]
macro_rules! sync_backend_tests {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use $crate::helpers::Backend;

            #[test]
            fn sqlite() {
                super::$name(Backend::Sqlite);
            }

            #[test]
            #[cfg_attr(not(postgres_tests), ignore = "needs TEST_POSTGRES_URL (a PostgreSQL server)")]
            fn postgres() {
                if std::env::var("TEST_POSTGRES_URL").is_ok() {
                    super::$name(Backend::Postgres);
                } else {
                    eprintln!("TEST_POSTGRES_URL not set: skipped");
                }
            }
        }
    )*};
}

/// Runs `f` on a fresh connection to the test's database, off the async workers.
pub async fn with_conn<T: Send + 'static>(
    db: &TestDb,
    f: impl FnOnce(&mut storage::DbConnection) -> T + Send + 'static,
) -> T {
    let url = db.url.clone();
    tokio::task::spawn_blocking(move || {
        let mut conn = storage::Database::parse(&url).unwrap().establish().unwrap();
        f(&mut conn)
    })
    .await
    .unwrap()
}

/// Every log line of this test binary from the server side (not the HTTP client's), captured by
/// one process-wide logger at `trace` so leak tests can scan what the service logged; each as
/// the JSON object `LOG_FORMAT=json` writes.
pub struct LogCapture {
    lines: std::sync::Mutex<Vec<String>>,
}

impl log::Log for LogCapture {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        let target = metadata.target();
        !(target.starts_with("reqwest") || target.starts_with("hyper"))
    }
    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
            if lines.len() < 2_000_000 {
                // As LOG_FORMAT=json writes it: the message and every key-value.
                lines.push(http_edge::middleware::access_log::json_line("-", record));
            }
        }
    }
    fn flush(&self) {}
}

impl LogCapture {
    /// A copy of every line captured so far.
    pub fn snapshot(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The process-wide capture, installed on first use (no other test installs a logger).
pub fn log_capture() -> &'static LogCapture {
    static CAPTURE: std::sync::OnceLock<&'static LogCapture> = std::sync::OnceLock::new();
    CAPTURE.get_or_init(|| {
        let capture: &'static LogCapture = Box::leak(Box::new(LogCapture {
            lines: std::sync::Mutex::new(Vec::new()),
        }));
        log::set_logger(capture).expect("only tests/api/helpers.rs installs a logger");
        log::set_max_level(log::LevelFilter::Trace);
        capture
    })
}
