//! [`Application::build`]: the one way the service is assembled, used by `main` and the tests.

use std::net::TcpListener;
use std::sync::Arc;

use actix_web::dev::Server;
use actix_web::middleware::{Logger, from_fn};
use actix_web::web::{self, Data};
use actix_web::{HttpResponse, HttpServer};
use anyhow::Context;
use apistos::app::{BuildConfig, OpenApiWrapper};
use serde_json::Value;
use storage::Database;

use crate::db::Db;
use crate::middleware::problems::{self, BodyLimit, ProblemBase, RouteTable};
use crate::middleware::{headers, rate_limit};
use crate::openapi::{self, SPEC_PATH};
use crate::routes;
use crate::settings::Settings;

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
}

pub struct Application {
    port: u16,
    server: Server,
}

/// Opens the database named by `settings.database_url` and applies pending migrations.
pub async fn open_database(settings: &Settings) -> anyhow::Result<Db> {
    let database = Database::parse(&settings.database_url);
    let backend = database.backend();
    let pool = web::block(move || -> anyhow::Result<_> {
        let pool = database
            .pool(pool_size(backend))
            .context("DATABASE_URL: cannot connect")?;
        let mut conn = pool.get().context("DATABASE_URL: cannot connect")?;
        storage::run_migrations(&mut conn)
            .map_err(|e| anyhow::anyhow!("DATABASE_URL: migrations failed: {e}"))?;
        Ok(pool)
    })
    .await??;
    Ok(Db::new(pool, backend))
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
        let doc = Arc::new(openapi::generate().await);
        let shared = Shared {
            db: Data::new(db),
            info: Data::new(AppInfo {
                service_name: settings.service_name.clone(),
            }),
            problem_base: Data::new(ProblemBase(settings.problem_base_url.clone())),
            route_table: Data::new(openapi::route_table(&doc)),
            limiter: settings.rate_limit_per_minute.map(|n| {
                Data::new(rate_limit::RateLimiter::new(
                    n,
                    settings.trust_forwarded_for,
                ))
            }),
            body_limit: settings.max_body_bytes,
            doc,
        };
        let mut server = HttpServer::new(move || shared.clone().app())
            .listen(listener)?
            .shutdown_timeout(10);
        if let Some(workers) = settings.workers {
            server = server.workers(workers);
        }
        Ok(Application {
            port,
            server: server.run(),
        })
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
    info: Data<AppInfo>,
    problem_base: Data<ProblemBase>,
    route_table: Data<RouteTable>,
    limiter: Option<Data<rate_limit::RateLimiter>>,
    body_limit: usize,
    doc: Arc<Value>,
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
            .app_data(self.info)
            .app_data(self.problem_base)
            .app_data(self.route_table)
            .app_data(BodyLimit(self.body_limit))
            .app_data(web::PayloadConfig::new(self.body_limit))
            .app_data(web::PathConfig::default().error_handler(problems::path_error));
        if let Some(limiter) = self.limiter {
            app = app.app_data(limiter);
        }
        app.configure(routes)
            .default_service(web::to(problems::no_route))
            .wrap(from_fn(rate_limit::body_cap))
            .wrap(from_fn(rate_limit::limit))
            .wrap(from_fn(problems::render))
            .wrap(from_fn(headers::stamp))
            .wrap(Logger::new(
                "%a \"%r\" %s %b %Dms request_id=%{x-request-id}o",
            ))
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
