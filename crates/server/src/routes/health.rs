use std::time::Duration;

use actix_web::web::Data;
use apistos::web::{ServiceConfig, get, resource};
use apistos::{ApiComponent, api_operation};
use schemars::JsonSchema;
use serde::Serialize;

use apistos::schemars;

use crate::auth::{Access, Rule};
use crate::context::Context;
use http_edge::db::Db;
use http_edge::probe::{Probe, ProbeDoc, database_ok};

/// How long a health check waits for the database.
const DB_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct Checks {
    /// `ok` or `error`
    pub database: String,
}

#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct HealthDto {
    /// `ok`, or `degraded` when a dependency fails
    pub status: String,
    /// `ok` or `error`
    pub db: String,
    /// The service identity (`SERVICE_NAME`)
    pub service: String,
    pub checks: Checks,
}

impl ProbeDoc for HealthDto {
    const OK: &'static str = "Healthy.";
    const UNAVAILABLE: &'static str = "Degraded: the database check failed.";
}

/// The answer of `/health/live`.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct LiveDto {
    /// Always `live`.
    #[schemars(extend("enum" = ["live"]))]
    pub status: &'static str,
}

impl ProbeDoc for LiveDto {
    const OK: &'static str = "The process serves requests.";
    const UNAVAILABLE: &'static str =
        "Never answered: a process that cannot serve answers nothing.";
}

/// The answer of `/health/ready`.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct ReadyDto {
    /// `ready`, or `not-ready`.
    #[schemars(extend("enum" = ["ready", "not-ready"]))]
    pub status: &'static str,
    /// `ok`, `error`, or `unchecked` while draining.
    #[schemars(extend("enum" = ["ok", "error", "unchecked"]))]
    pub database: &'static str,
    /// True from SIGTERM on, for the drain period (`DRAIN_SECS`), before the instance stops.
    pub draining: bool,
}

impl ProbeDoc for ReadyDto {
    const OK: &'static str = "Ready: the database takes writes and the instance is not draining.";
    const UNAVAILABLE: &'static str =
        "Not ready: the database would refuse writes, or the instance is draining.";
}

/// Health
///
/// Checks, within 2 seconds and without writing, that the database would take a write: it
/// answers a read; on SQLite its files are the ones the server has open, writable, and not on a
/// full disk; and no write has failed on a storage fault in the last 10 seconds without one
/// succeeding since. 503 with `db: "error"` otherwise.
#[api_operation(operation_id = "health", tag = "meta")]
pub async fn health(db: Db, context: Data<Context>) -> Probe<HealthDto> {
    let ok = database_ok(&db, DB_CHECK_TIMEOUT).await;
    let db_state = if ok { "ok" } else { "error" };
    Probe {
        ok,
        body: HealthDto {
            status: if ok { "ok" } else { "degraded" }.to_owned(),
            db: db_state.to_owned(),
            service: context.info.service_name.clone(),
            checks: Checks {
                database: db_state.to_owned(),
            },
        },
    }
}

/// Liveness
///
/// 200 while the process serves requests; it checks nothing else, so an orchestrator that
/// restarts on its failure never restarts a healthy process for a database outage.
#[api_operation(operation_id = "health_live", tag = "meta")]
pub async fn live() -> Probe<LiveDto> {
    Probe {
        ok: true,
        body: LiveDto { status: "live" },
    }
}

/// Readiness
///
/// 200 while the database would take a write (the check of `/health`) and the instance is not
/// draining; 503 otherwise. From SIGTERM on, the instance answers 503 here for `DRAIN_SECS`
/// while it keeps serving everything else, then stops as before: a load balancer that routes
/// on this drains it first.
#[api_operation(operation_id = "health_ready", tag = "meta")]
pub async fn ready(db: Db, context: Data<Context>) -> Probe<ReadyDto> {
    let draining = context.draining.load(std::sync::atomic::Ordering::Acquire);
    let database = match draining {
        true => "unchecked",
        false if database_ok(&db, DB_CHECK_TIMEOUT).await => "ok",
        false => "error",
    };
    let ok = database == "ok";
    Probe {
        ok,
        body: ReadyDto {
            status: if ok { "ready" } else { "not-ready" },
            database,
            draining,
        },
    }
}

/// Liveness and readiness: public.
/// Probes are never rate limited.
pub const ACCESS: &[Rule] = &[
    Rule::unmetered("/health", Access::Public),
    Rule::unmetered("/health/live", Access::Public),
    Rule::unmetered("/health/ready", Access::Public),
];

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(resource("/health").route(get().to(health)))
        .service(resource("/health/live").route(get().to(live)))
        .service(resource("/health/ready").route(get().to(ready)));
}
