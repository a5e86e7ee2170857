use std::collections::BTreeMap;
use std::time::Duration;

use actix_web::body::BoxBody;
use actix_web::http::StatusCode;
use actix_web::web::Data;
use actix_web::{HttpRequest, HttpResponse, Responder};
use apistos::paths::{MediaType, Response, Responses};
use apistos::reference_or::ReferenceOr;
use apistos::web::{ServiceConfig, get, resource};
use apistos::{ApiComponent, ApistosSchema, OpenApiVersion, VersionSpecificSchema, api_operation};
use schemars::JsonSchema;
use serde::Serialize;

use apistos::schemars;

use crate::auth::{Access, Rule};
use crate::context::Context;
use http_edge::db::Db;

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

/// 200 when healthy, 503 (same shape) when degraded.
pub struct HealthReply(HealthDto);

impl Responder for HealthReply {
    type Body = BoxBody;
    fn respond_to(self, _: &HttpRequest) -> HttpResponse {
        let status = if self.0.db == "ok" {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        HttpResponse::build(status).json(self.0)
    }
}

impl ApiComponent for HealthReply {
    fn child_schemas(v: OpenApiVersion) -> Vec<(String, ReferenceOr<ApistosSchema>)> {
        HealthDto::child_schemas(v)
    }
    fn schema(v: OpenApiVersion) -> Option<(String, ReferenceOr<ApistosSchema>)> {
        HealthDto::schema(v)
    }
    fn responses(v: OpenApiVersion, _: Option<String>, _: Option<String>) -> Option<Responses> {
        let (name, _) = HealthDto::schema(v)?;
        let response = |description: &str| {
            let schema = match v {
                OpenApiVersion::OAS3_0 => VersionSpecificSchema::OAS3_0(ReferenceOr::Reference {
                    _ref: format!("#/components/schemas/{name}"),
                }),
                OpenApiVersion::OAS3_1 => VersionSpecificSchema::OAS3_1(
                    HealthDto::schema(v)
                        .and_then(|(_, s)| match s {
                            ReferenceOr::Object(o) => Some(o),
                            ReferenceOr::Reference { .. } => None,
                        })
                        .unwrap_or_default(),
                ),
            };
            ReferenceOr::Object(Response {
                description: description.to_owned(),
                content: BTreeMap::from([(
                    "application/json".to_owned(),
                    MediaType {
                        schema: Some(schema),
                        ..Default::default()
                    },
                )]),
                ..Default::default()
            })
        };
        Some(Responses {
            responses: BTreeMap::from([
                ("200".to_owned(), response("Healthy.")),
                (
                    "503".to_owned(),
                    response("Degraded: the database check failed."),
                ),
            ]),
            ..Default::default()
        })
    }
}

/// Health
///
/// Checks, within 2 seconds and without writing, that the database would take a write: it
/// answers a read; on SQLite its files are the ones the server has open, writable, and not on a
/// full disk; and no write has failed on a storage fault in the last 10 seconds without one
/// succeeding since. 503 with `db: "error"` otherwise.
#[api_operation(operation_id = "health", tag = "meta")]
pub async fn health(db: Db, context: Data<Context>) -> HealthReply {
    let db_state = match db.check(DB_CHECK_TIMEOUT).await {
        Ok(()) => "ok",
        Err(e) => {
            log::warn!("health: the database would refuse writes: {e}");
            "error"
        }
    };
    HealthReply(HealthDto {
        status: if db_state == "ok" { "ok" } else { "degraded" }.to_owned(),
        db: db_state.to_owned(),
        service: context.info.service_name.clone(),
        checks: Checks {
            database: db_state.to_owned(),
        },
    })
}

/// Liveness and readiness: public.
pub const ACCESS: &[Rule] = &[Rule::any("/health", Access::Public)];

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(resource("/health").route(get().to(health)));
}
