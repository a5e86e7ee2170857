//! [`Application::build`]: the one way the service is assembled, used by `main` and the tests.

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::middleware::{Condition, from_fn};
use actix_web::web::{self, Data};
use anyhow::Context as _;
use apistos::app::{BuildConfig, OpenApiWrapper};
use serde_json::Value;
use storage::{Database, Store};

use crate::auth::{self};
use crate::context::{AppInfo, Context};
use crate::deprecation;
use crate::openapi::{self, SPEC_PATH};
use crate::routes;
use crate::settings::Settings;
use http_edge::Edge;
use http_edge::db::Db;
use http_edge::middleware::limits::{self, Limits};
use http_edge::middleware::problems::{self, ProblemBase};
use http_edge::middleware::{access_log, consistency, head, headers, path, rate_limit, spans};
use http_edge::serve::Serving;
pub use http_edge::serve::StopSignals;

pub struct Application {
    port: u16,
    server: Server,
    /// Shared with `/health/ready`.
    draining: Arc<AtomicBool>,
    drain: Duration,
    /// Flushed when the server stops.
    spans: Option<trace_context::export::Exporter>,
}

/// Opens the database named by `settings.database_url` and applies pending migrations.
pub async fn open_database(settings: &Settings) -> anyhow::Result<Db> {
    let database = settings.database()?;
    let store = web::block(move || -> anyhow::Result<_> {
        // Opening the store first creates the SQLite directory.
        let store = Store::open(database.clone(), database.backend().pool_size())
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

/// [`storage::migrate`], one log line per wait and one when done.
fn migrate(database: &Database) -> anyhow::Result<()> {
    let done = storage::migrate(database, MIGRATION_PATIENCE, |waited, why| {
        log::warn!(
            "migrations wait for a lock another session holds ({:.0} s so far, at most {} s; \
             a server that died mid-migration holds it until PostgreSQL notices): {why}",
            waited.as_secs_f64(),
            MIGRATION_PATIENCE.as_secs()
        );
    })
    .map_err(|e| anyhow::anyhow!("DATABASE_URL: migrations failed: {e}"))?;
    log::info!(
        "migrations: {} applied now; the schema is at version {}",
        done.applied,
        done.version
    );
    Ok(())
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
        let db = match settings.replica_pools()? {
            Some(standbys) => {
                log::info!(
                    "standbys: {} serve reads ({:?})",
                    standbys.len(),
                    settings.replica_reads
                );
                db.with_replicas(standbys)
            }
            None => db,
        };
        let listener = TcpListener::bind(settings.bind)
            .with_context(|| format!("BIND: cannot listen on {}", settings.bind))?;
        let port = listener.local_addr()?.port();
        let doc = Arc::new(openapi::generate_for(settings.api_auth).await);
        let db_backend = db.backend();
        let db_has_replicas = db.has_replicas();
        let store = db.store().clone();
        let draining = Arc::new(AtomicBool::new(false));
        let v1_usage = versioned_notes::UsageRecorder::new(store.clone());
        let v1 = deprecation::V1 {
            form: settings.deprecation_form,
            usage: v1_usage.clone(),
        };
        let guard = auth::Guard {
            mode: settings.api_auth,
            rules: routes::rules(),
        };
        let keys =
            idempotency::Expiry::with_clock(settings.idempotency_ttl, settings.key_clock.clone());
        let metrics = http_edge::metrics::Metrics::new(&settings.service_name)?;
        let spans = match &settings.otlp {
            Some(config) => Some(trace_context::export::Exporter::start(config)?),
            None => None,
        };
        store.observe(metrics.storage_observer());
        metrics.sampled_counter(
            "ledger_retries_total",
            "Ledger transactions run again after contention (a lock, a serialization failure, \
             a key raced by another request).",
            || ledger::service::RETRIES.load(std::sync::atomic::Ordering::Relaxed),
        )?;
        let context = Context {
            info: AppInfo {
                service_name: settings.service_name.clone(),
            },
            appender: ledger::Appender::new(store.clone()),
            recorder: webhooks::Recorder::new(store.clone()),
            intake: routes::webhooks::intake(&settings)?,
            webhook_verifications: routes::webhooks::verifications(&metrics)?,
            v1_usage,
            token_policy: tokens::Policy {
                lifetime: settings.token_lifetime,
                max_active: settings.token_max_active,
            },
            dispatcher: outbound_webhooks::dispatch::Dispatcher::start(
                store.clone(),
                settings.outbound_webhooks.clone(),
            )?,
            pruner: idempotency::Pruner::start(store, keys.clone()),
            streams: http_edge::sse::Streams::new(
                settings.event_streams,
                Arc::clone(&draining),
                &metrics.counter(
                    "event_stream_events_total",
                    "Events the live streams sent, by source: handed (over by the commit in \
                     this process) or database (read back: catch-up, another process's commits).",
                    &["source"],
                )?,
            ),
            draining: Arc::clone(&draining),
        };
        let edge = Edge {
            db,
            limits: Limits {
                max_body_bytes: settings.max_body_bytes,
                request_timeout: settings.request_timeout,
            },
            problems: ProblemBase::new(settings.problem_base_url.clone(), settings.trusted_proxies),
            routes: openapi::route_table(&doc),
            keys,
            rate_limit: settings.rate_limit_per_minute.map(|n| {
                let rules = routes::rules();
                rate_limit::RateLimiter::new(n, move |path| !rules.metered(path))
            }),
            proxies: settings.trusted_proxies,
            // Swagger UI's static assets.
            cacheable: vec!["/docs".to_owned()],
            metrics,
            spans: spans.clone(),
            credentials: auth::Credentials::new(
                settings.api_keys.iter().map(|k| k.expose()),
                &settings.api_key_header,
                settings.jwt_secret.as_ref().map(|s| s.expose()),
            ),
        };
        let parts = AppParts {
            edge: Data::new(edge),
            context: Data::new(context),
            guard: Data::new(guard),
            v1: Data::new(v1),
            cors_origins: settings.cors_origins.clone(),
            record_metrics: settings.metrics,
            export_spans: spans.is_some(),
            replicas: db_has_replicas,
            doc,
        };
        let serving = Serving::new(
            settings.workers,
            db_backend.pool_size(),
            // Behind trusted proxies every connection comes from a proxy: no per-address cap.
            (settings.trusted_proxies.0 == 0).then_some(settings.max_connections_per_client),
        );
        let server = http_edge::serve::serve(listener, serving, move || parts.clone().app())?;
        Ok(Application {
            port,
            server,
            draining,
            drain: settings.drain,
            spans,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Runs until stopped through [`Application::handle`].
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let served = self.server.await;
        flush(self.spans).await;
        served
    }

    /// Runs until one of `signals` (`http_edge::serve::StopSignals::stop`).
    pub async fn run_until_signalled(self, signals: StopSignals) -> std::io::Result<()> {
        signals.stop(self.server.handle(), self.draining, self.drain);
        let served = self.server.await;
        flush(self.spans).await;
        served
    }

    pub fn handle(&self) -> actix_web::dev::ServerHandle {
        self.server.handle()
    }
}

/// Sends the spans still queued for the collector (within its export timeout).
async fn flush(spans: Option<trace_context::export::Exporter>) {
    let Some(spans) = spans else { return };
    match web::block(move || spans.shutdown()).await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => log::warn!("{err}"),
        Err(err) => log::warn!("span export: {err}"),
    }
}

/// What every worker's app is built from.
#[derive(Clone)]
struct AppParts {
    edge: Data<Edge>,
    context: Data<Context>,
    guard: Data<auth::Guard>,
    v1: Data<deprecation::V1>,
    cors_origins: Vec<String>,
    /// `METRICS`: whether the record layer counts requests (`/metrics` answers either way).
    record_metrics: bool,
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` is set: each request's span goes to the collector.
    export_spans: bool,
    /// `DATABASE_REPLICA_URLS` is set: writes answer a `Consistency-Token`.
    replicas: bool,
    doc: Arc<Value>,
}

impl AppParts {
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
            .app_data(self.guard)
            .app_data(self.v1)
            .app_data(web::PathConfig::default().error_handler(problems::path_error));
        // Innermost first: a request passes them bottom-up (see docs/ARCHITECTURE.md).
        app.configure(routes::configure)
            .default_service(web::to(problems::no_route))
            .wrap(from_fn(head::as_get))
            .wrap(Condition::new(self.replicas, from_fn(consistency::stamp)))
            .wrap(from_fn(deprecation::count))
            .wrap(from_fn(auth::guard))
            .wrap(from_fn(rate_limit::limit))
            .wrap(from_fn(limits::enforce))
            .wrap(from_fn(problems::render))
            .wrap(from_fn(deprecation::headers))
            .wrap(from_fn(headers::stamp))
            .wrap(Condition::new(
                !self.cors_origins.is_empty(),
                headers::cors(&self.cors_origins),
            ))
            .wrap(from_fn(access_log::log))
            .wrap(Condition::new(self.export_spans, from_fn(spans::export)))
            .wrap(Condition::new(
                self.record_metrics,
                from_fn(http_edge::metrics::record),
            ))
            .wrap(from_fn(path::normalize))
            .build_with(SPEC_PATH, BuildConfig::default().disable_openapi_route())
            .configure(|cfg| http_edge::serve::docs(cfg, SPEC_PATH, doc, "Notes service API"))
    }
}
