//! [`Application::build`]: the one way the service is assembled, used by `main` and the tests.

use std::net::TcpListener;
use std::sync::Arc;

use actix_cors::Cors;
use actix_service::{IntoServiceFactory, ServiceFactoryExt};
use actix_web::HttpResponse;
use actix_web::dev::Extensions;
use actix_web::dev::Server;
use actix_web::middleware::{Condition, Logger, from_fn};
use actix_web::web::{self, Data};
use anyhow::Context;
use apistos::app::{BuildConfig, OpenApiWrapper};
use serde_json::Value;
use storage::{Database, Store};

use crate::middleware::deprecation::{self, V1Policy, V1Usage};
use crate::middleware::token_auth;
use crate::openapi::{self, SPEC_PATH};
use crate::routes;
use crate::settings::Settings;
use http_edge::connection::Paced;
use http_edge::db::Db;
use http_edge::idempotent::KeyTtl;
use http_edge::middleware::limits::{self, ConnectionCounter, Limits};
use http_edge::middleware::problems::{self, BodyLimit, ProblemBase, RouteTable};
use http_edge::middleware::{access_log, head, headers, path, rate_limit};

/// Identity of this instance, for `/`, `/health` and the problem documents.
#[derive(Debug, Clone)]
pub struct AppInfo {
    pub service_name: String,
}

/// Every route the OpenAPI document describes.
pub fn routes(cfg: &mut apistos::web::ServiceConfig) {
    routes::meta::configure(cfg);
    routes::health::configure(cfg);
    routes::notes::configure(cfg);
    routes::comments::configure(cfg);
    routes::tags::configure(cfg);
    routes::accounts::configure(cfg);
    routes::tokens::configure(cfg);
    routes::articles::configure(cfg);
    routes::versioned_notes::configure(cfg);
    routes::examples::configure(cfg);
    routes::webhooks::configure(cfg);
    routes::audit::configure(cfg);
}

pub struct Application {
    port: u16,
    server: Server,
}

/// Opens the database named by `settings.database_url` and applies pending migrations.
pub async fn open_database(settings: &Settings) -> anyhow::Result<Db> {
    let database = settings.database()?;
    let store = web::block(move || -> anyhow::Result<_> {
        // Opening the store first creates the SQLite directory.
        let store = Store::open(database.clone(), pool_size(database.backend()))
            .context("DATABASE_URL: cannot connect")?;
        migrate(&database)?;
        Ok(store)
    })
    .await??;
    Ok(Db::new(store))
}

/// How long a start waits for a lock that a migration needs (held by a session of a server
/// that died mid-migration, until PostgreSQL notices, or by another instance migrating).
pub const MIGRATION_PATIENCE: std::time::Duration = std::time::Duration::from_secs(120);

/// Applies pending migrations on a connection of its own, without the statement timeout that
/// bounds requests (a migration that backfills a large table may run for minutes), outlasting
/// a lock another session holds for up to [`MIGRATION_PATIENCE`] (one log line per wait).
fn migrate(database: &Database) -> anyhow::Result<()> {
    let unbounded = database.clone().with_timeouts(storage::Timeouts {
        statement: std::time::Duration::ZERO,
        ..database.timeouts
    });
    let mut conn = unbounded
        .establish()
        .context("DATABASE_URL: cannot connect")?;
    let applied =
        storage::run_migrations_patiently(&mut conn, MIGRATION_PATIENCE, |waited, why| {
            log::warn!(
                "migrations wait for a lock another session holds ({:.0} s so far, at most {} s; \
             a server that died mid-migration holds it until PostgreSQL notices): {why}",
                waited.as_secs_f64(),
                MIGRATION_PATIENCE.as_secs()
            );
        })
        .map_err(|e| anyhow::anyhow!("DATABASE_URL: migrations failed: {e}"))?;
    let at = storage::applied_migrations(&mut conn)
        .ok()
        .and_then(|versions| versions.into_iter().max())
        .unwrap_or_default();
    log::info!("migrations: {applied} applied now; the schema is at version {at}");
    Ok(())
}

pub fn pool_size(backend: storage::Backend) -> u32 {
    match backend {
        storage::Backend::Sqlite => 8,
        storage::Backend::Postgres => 16,
    }
}

impl Application {
    /// Connects, migrates, binds `settings.bind` (port 0 picks a free port) and returns the
    /// server ready to run.
    pub async fn build(settings: Settings) -> anyhow::Result<Application> {
        let db = open_database(&settings).await?;
        Application::serve(settings, db).await
    }

    /// Like [`Application::build`] with a database handle made by the caller (used to start
    /// against an unreachable database in the health tests).
    pub async fn serve(settings: Settings, db: Db) -> anyhow::Result<Application> {
        let listener = TcpListener::bind(settings.bind)
            .with_context(|| format!("BIND: cannot listen on {}", settings.bind))?;
        let port = listener.local_addr()?.port();
        let doc = Arc::new(openapi::generate_for(settings.api_auth).await);
        let db_backend = db.backend();
        let v1_usage = Data::new(V1Usage::new(db.store().clone()));
        let db_store = db.store().clone();
        let shared = Shared {
            appender: Data::new(ledger::Appender::new(db.store().clone())),
            recorder: Data::new(webhooks::Recorder::new(db.store().clone())),
            db: Data::new(db),
            info: Data::new(AppInfo {
                service_name: settings.service_name.clone(),
            }),
            problem_base: Data::new(ProblemBase::new(
                settings.problem_base_url.clone(),
                settings.trusted_proxies,
            )),
            route_table: Data::new(openapi::route_table(&doc)),
            limiter: settings
                .rate_limit_per_minute
                .map(|n| Data::new(rate_limit::RateLimiter::new(n, settings.trusted_proxies))),
            body_limit: settings.max_body_bytes,
            limits: Data::new(Limits {
                max_body_bytes: settings.max_body_bytes,
                request_timeout: settings.request_timeout,
            }),
            v1_usage,
            v1_policy: Data::new(V1Policy {
                form: settings.deprecation_form,
                proxies: settings.trusted_proxies,
            }),
            webhooks: Data::new(routes::webhooks::WebhookState::from_settings(&settings)?),
            example_auth: Data::new(routes::examples::ExampleAuth::from_settings(&settings)),
            cors_origins: settings.cors_origins.clone(),
            api_auth: Data::new(settings.api_auth),
            token_policy: Data::new(tokens::Policy {
                lifetime: settings.token_lifetime,
                max_active: settings.token_max_active,
            }),
            key_ttl: Data::new(KeyTtl(settings.idempotency_ttl)),
            _pruner: Arc::new(idempotency::Pruner::start(
                db_store.clone(),
                settings.idempotency_ttl,
            )),
            doc,
        };
        // Behind trusted proxies every connection comes from a proxy: no per-address cap.
        let connections = (settings.trusted_proxies.0 == 0)
            .then(|| ConnectionCounter::new(settings.max_connections_per_client));
        let workers = settings.workers.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        });
        // No more threads for database calls than the pool has connections: a thread beyond
        // them would only wait for one, and each thread's malloc arena keeps what it once
        // held (16 threads took the SQLite server to 108 MiB on a 1,000,000-row table, the pool
        // size to 43 MiB; docs/PERFORMANCE.md, "Memory").
        let pool = usize::try_from(pool_size(db_backend)).unwrap_or(usize::MAX);
        let builder = actix_server::Server::build()
            .workers(workers)
            .worker_max_blocking_threads(pool.div_ceil(workers).max(1))
            .shutdown_timeout(10);
        let shutdown = builder.graceful_shutdown_signal();
        let local = listener.local_addr()?;
        // What actix-web's `HttpServer::listen` assembles, with each socket wrapped in
        // `connection::Paced` on its way to the HTTP/1 dispatcher.
        let server = builder
            .listen("notes-service", listener, move || {
                let (connections, shutdown) = (connections.clone(), shutdown.clone());
                let http = actix_http::HttpService::build()
                    .graceful_shutdown_signal(move || {
                        let shutdown = shutdown.clone();
                        async move { shutdown.notified().await }
                    })
                    // The head must arrive within 5 s (actix's default, kept explicit); the
                    // body within REQUEST_TIMEOUT of it (`middleware::limits`).
                    .client_request_timeout(std::time::Duration::from_secs(5))
                    .client_disconnect_timeout(std::time::Duration::from_secs(1))
                    .local_addr(local)
                    .on_connect_ext(move |io: &Paced, data: &mut Extensions| {
                        if let Some(counter) = &connections {
                            limits::on_connect(counter, io.tcp(), data);
                        }
                        data.insert(io.shared());
                    })
                    .h1(actix_service::map_config(
                        shared.clone().app().into_factory(),
                        |_| actix_web::dev::AppConfig::default(),
                    ));
                actix_service::fn_service(|io: actix_web::rt::net::TcpStream| {
                    let peer = io.peer_addr().ok();
                    std::future::ready(Ok::<_, actix_http::error::DispatchError>((
                        Paced::new(io),
                        peer,
                    )))
                })
                .and_then(http)
            })?
            .run();
        Ok(Application { port, server })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Runs until SIGINT/SIGTERM, then drains in-flight requests (graceful shutdown).
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.server.await
    }

    pub fn handle(&self) -> actix_web::dev::ServerHandle {
        self.server.handle()
    }
}

#[derive(Clone)]
struct Shared {
    db: Data<Db>,
    /// Group commit for ledger appends and webhook deliveries: one each per process, shared by
    /// every worker.
    appender: Data<ledger::Appender>,
    recorder: Data<webhooks::Recorder>,
    info: Data<AppInfo>,
    problem_base: Data<ProblemBase>,
    route_table: Data<RouteTable>,
    limiter: Option<Data<rate_limit::RateLimiter>>,
    body_limit: usize,
    limits: Data<Limits>,
    v1_policy: Data<V1Policy>,
    v1_usage: Data<V1Usage>,
    webhooks: Data<routes::webhooks::WebhookState>,
    example_auth: Data<routes::examples::ExampleAuth>,
    cors_origins: Vec<String>,
    api_auth: Data<token_auth::ApiAuth>,
    token_policy: Data<tokens::Policy>,
    key_ttl: Data<KeyTtl>,
    /// Deletes expired idempotency keys while the app lives.
    _pruner: Arc<idempotency::Pruner>,
    doc: Arc<Value>,
}

/// Cross-origin access for the configured origins only (`CORS_ORIGINS`); the request id and
/// rate-limit headers are readable by browser clients.
fn cors(origins: &[String]) -> Cors {
    origins
        .iter()
        .fold(Cors::default(), |cors, origin| cors.allowed_origin(origin))
        .allow_any_method()
        .allow_any_header()
        .expose_headers([
            "x-request-id",
            "ratelimit-limit",
            "ratelimit-remaining",
            "ratelimit-reset",
            "retry-after",
            "deprecation",
            "sunset",
            "link",
        ])
        .max_age(600)
}

impl Shared {
    fn app(
        self,
    ) -> actix_web::App<
        impl actix_web::dev::ServiceFactory<
            actix_web::dev::ServiceRequest,
            Config = (),
            Response = actix_web::dev::ServiceResponse<impl actix_web::body::MessageBody>,
            Error = actix_web::Error,
            InitError = (),
        >,
    > {
        let doc = self.doc;
        let mut app = actix_web::App::new()
            .document(openapi::spec())
            .app_data(self.db)
            .app_data(self.appender)
            .app_data(self.recorder)
            .app_data(self.info)
            .app_data(self.v1_policy)
            .app_data(self.v1_usage)
            .app_data(self.webhooks)
            .app_data(self.example_auth)
            .app_data(self.problem_base)
            .app_data(self.route_table)
            .app_data(self.api_auth)
            .app_data(self.token_policy)
            .app_data(self.key_ttl)
            .app_data(BodyLimit(self.body_limit))
            .app_data(self.limits)
            .app_data(web::PathConfig::default().error_handler(problems::path_error));
        if let Some(limiter) = self.limiter {
            app = app.app_data(limiter);
        }
        // Innermost first: a request passes them bottom-up (see docs/ARCHITECTURE.md).
        app.configure(routes)
            .default_service(web::to(problems::no_route))
            .wrap(from_fn(head::as_get))
            .wrap(from_fn(deprecation::count))
            .wrap(from_fn(token_auth::guard))
            .wrap(from_fn(rate_limit::limit))
            .wrap(from_fn(limits::enforce))
            .wrap(from_fn(problems::render))
            .wrap(from_fn(deprecation::headers))
            .wrap(from_fn(headers::stamp))
            .wrap(Condition::new(
                !self.cors_origins.is_empty(),
                cors(&self.cors_origins),
            ))
            .wrap(
                Logger::new(
                    "%a \"%{request_line}xi\" %s %b %Dms request_id=%{x-request-id}o \
                     actor=%{actor}xo",
                )
                .custom_request_replace("request_line", access_log::log_safe_request_line)
                .custom_response_replace("actor", access_log::actor),
            )
            .wrap(from_fn(path::normalize))
            .build_with(SPEC_PATH, BuildConfig::default().disable_openapi_route())
            .route(
                SPEC_PATH,
                web::get().to(move || {
                    let doc = doc.clone();
                    async move { HttpResponse::Ok().json(&*doc) }
                }),
            )
            .route(
                "/docs",
                web::get().to(|| async {
                    HttpResponse::PermanentRedirect()
                        .insert_header(("Location", "/docs/"))
                        .finish()
                }),
            )
            .service(swagger_ui_dist::generate_scope(
                swagger_ui_dist::ApiDefinition {
                    uri_prefix: "/docs",
                    api_definition: swagger_ui_dist::OpenApiSource::Uri(SPEC_PATH),
                    title: Some("Notes service API"),
                },
            ))
    }
}
