//! [`Application::build`]: the one way the service is assembled, used by `main` and the tests.

use std::net::TcpListener;
use std::sync::Arc;

use actix_cors::Cors;
use actix_web::HttpResponse;
use actix_web::dev::Server;
use actix_web::middleware::{Condition, Logger, from_fn};
use actix_web::web::{self, Data};
use anyhow::Context as _;
use apistos::app::{BuildConfig, OpenApiWrapper};
use serde_json::Value;
use storage::{Database, Store};

use crate::auth::{self, Access, Rule, Rules};
use crate::context::Context;
use crate::deprecation::{self, V1Policy};
use crate::openapi::{self, SPEC_PATH};
use crate::routes;
use crate::settings::Settings;
use http_edge::Edge;
use http_edge::db::Db;
use http_edge::middleware::limits::{self, Limits};
use http_edge::middleware::problems::{self, ProblemBase};
use http_edge::middleware::{access_log, head, headers, path, rate_limit};
use http_edge::serve::Serving;

/// Identity of this instance, for `/`, `/health` and the problem documents.
#[derive(Debug, Clone)]
pub struct AppInfo {
    pub service_name: String,
}

/// A route module: what registers its routes, and who may call them (crate::auth).
type Area = (
    fn(&mut apistos::web::ServiceConfig),
    &'static [&'static [Rule]],
);

/// Every route module the OpenAPI document describes, each with its access rules: a module
/// is registered with its rules or not at all.
const AREAS: &[Area] = &[
    (routes::meta::configure, &[routes::meta::ACCESS]),
    (routes::health::configure, &[routes::health::ACCESS]),
    (routes::notes::configure, &[routes::notes::ACCESS]),
    (routes::comments::configure, &[routes::comments::ACCESS]),
    (routes::tags::configure, &[routes::tags::ACCESS]),
    (routes::accounts::configure, &[routes::accounts::ACCESS]),
    (routes::tokens::configure, &[routes::tokens::ACCESS]),
    (routes::articles::configure, &[routes::articles::ACCESS]),
    (
        routes::versioned_notes::configure,
        &[routes::versioned_notes::ACCESS],
    ),
    (
        routes::examples::configure,
        &[
            routes::examples::ACCESS,
            routes::examples::note_handlers::ACCESS,
            routes::examples::tag_handlers::ACCESS,
        ],
    ),
    (routes::webhooks::configure, &[routes::webhooks::ACCESS]),
    (routes::audit::configure, &[routes::audit::ACCESS]),
];

/// The API's description (registered below, outside the documented routes): public.
const DOCS_ACCESS: &[Rule] = &[
    Rule::any(SPEC_PATH, Access::Public),
    Rule::tree("/docs", Access::Public),
];

/// Every route the OpenAPI document describes.
pub fn routes(cfg: &mut apistos::web::ServiceConfig) {
    for (configure, _) in AREAS {
        configure(cfg);
    }
}

/// Every route's access rule.
pub fn rules() -> Rules {
    let areas = AREAS.iter().flat_map(|(_, rules)| rules.iter().copied());
    Rules::new(areas.chain([DOCS_ACCESS]))
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
        let store = db.store().clone();
        let credentials = auth::Credentials::from_settings(&settings);
        let context = Context {
            info: AppInfo {
                service_name: settings.service_name.clone(),
            },
            appender: ledger::Appender::new(store.clone()),
            recorder: webhooks::Recorder::new(store.clone()),
            intake: routes::webhooks::intake(&settings)?,
            v1: V1Policy {
                form: settings.deprecation_form,
                proxies: settings.trusted_proxies,
            },
            v1_usage: versioned_notes::UsageRecorder::new(store.clone()),
            guard: auth::Guard {
                mode: settings.api_auth,
                rules: rules(),
                credentials,
            },
            token_policy: tokens::Policy {
                lifetime: settings.token_lifetime,
                max_active: settings.token_max_active,
            },
            pruner: idempotency::Pruner::start(store, settings.idempotency_ttl),
        };
        let edge = Edge {
            db,
            limits: Limits {
                max_body_bytes: settings.max_body_bytes,
                request_timeout: settings.request_timeout,
            },
            problems: ProblemBase::new(settings.problem_base_url.clone(), settings.trusted_proxies),
            routes: openapi::route_table(&doc),
            key_ttl: settings.idempotency_ttl,
            rate_limit: settings
                .rate_limit_per_minute
                .map(|n| rate_limit::RateLimiter::new(n, settings.trusted_proxies)),
        };
        let shared = Shared {
            edge: Data::new(edge),
            context: Data::new(context),
            cors_origins: settings.cors_origins.clone(),
            doc,
        };
        let workers = settings.workers.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        });
        // No more threads for database calls than the pool has connections: a thread beyond
        // them would only wait for one, and each thread's malloc arena keeps what it once
        // held (16 threads took the SQLite server to 108 MiB on a 1,000,000-row table, the pool
        // size to 43 MiB; docs/PERFORMANCE.md, "Memory").
        let pool = usize::try_from(pool_size(db_backend)).unwrap_or(usize::MAX);
        let serving = Serving {
            workers,
            blocking_threads: pool.div_ceil(workers),
            // Behind trusted proxies every connection comes from a proxy: no per-address cap.
            connections_per_client: (settings.trusted_proxies.0 == 0)
                .then_some(settings.max_connections_per_client),
        };
        let server = http_edge::serve::serve(listener, serving, move || shared.clone().app())?;
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

/// What every worker's app is built from.
#[derive(Clone)]
struct Shared {
    edge: Data<Edge>,
    context: Data<Context>,
    cors_origins: Vec<String>,
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
        let app = actix_web::App::new()
            .document(openapi::spec())
            .app_data(self.edge)
            .app_data(self.context)
            .app_data(web::PathConfig::default().error_handler(problems::path_error));
        // Innermost first: a request passes them bottom-up (see docs/ARCHITECTURE.md).
        app.configure(routes)
            .default_service(web::to(problems::no_route))
            .wrap(from_fn(head::as_get))
            .wrap(from_fn(deprecation::count))
            .wrap(from_fn(auth::guard))
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
