//! `GET /` (service metadata) and `GET /problems/{slug}` (documentation of each problem type,
//! so every `type` URI resolves).

use actix_web::http::header;
use actix_web::web::{Data, Json, Path};
use actix_web::{HttpRequest, HttpResponse};
use apistos::web::{ServiceConfig, get, resource};
use apistos::{ApiComponent, api_operation};
use problem_details::{Problem, Slug};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use apistos::schemars;

use crate::auth::{Access, Rule};
use crate::context::Context;
use http_edge::error::ApiError;

#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct ServiceInfo {
    pub name: String,
    pub description: String,
    pub version: String,
    pub status: String,
}

/// Service metadata
#[api_operation(operation_id = "service_info", tag = "meta")]
pub async fn root(context: Data<Context>) -> Json<ServiceInfo> {
    Json(ServiceInfo {
        name: context.info.service_name.clone(),
        description:
            "Notes, articles, versioned notes, tokens, accounts and webhooks over HTTP+JSON."
                .to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        status: "ok".to_owned(),
    })
}

#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct ProblemTypeDoc {
    pub slug: String,
    pub title: String,
    pub status: u16,
    pub description: String,
}

#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct SlugPath {
    pub slug: String,
}

/// Describe a problem type
///
/// JSON by default; an HTML page when the client prefers `text/html` (a browser following a
/// `type` URI).
#[api_operation(operation_id = "problem_type", tag = "meta", error_code = 404)]
pub async fn problem_type(req: HttpRequest, path: Path<SlugPath>) -> Result<Either, ApiError> {
    let slug = Slug::parse(&path.slug)
        .ok_or_else(|| ApiError::new(Problem::not_found("Problem type", &path.slug)))?;
    let doc = ProblemTypeDoc {
        slug: slug.as_str().to_owned(),
        title: slug.title().to_owned(),
        status: slug.status(),
        description: slug.description().to_owned(),
    };
    let wants_html = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/html"));
    Ok(if wants_html {
        Either::Left(html_page(&doc))
    } else {
        Either::Right(Json(doc))
    })
}

pub type Either = actix_web::Either<HttpResponse, Json<ProblemTypeDoc>>;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn html_page(doc: &ProblemTypeDoc) -> HttpResponse {
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body><h1>{title}</h1><p>HTTP status {status}, type slug <code>{slug}</code>.</p>\
         <p>{description}</p></body></html>",
        title = escape(&doc.title),
        status = doc.status,
        slug = escape(&doc.slug),
        description = escape(&doc.description),
    );
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .body(body)
}

/// The Prometheus text exposition (`text/plain; version=0.0.4`).
pub struct MetricsText(String);

impl actix_web::Responder for MetricsText {
    type Body = actix_web::body::BoxBody;
    fn respond_to(self, _: &HttpRequest) -> HttpResponse {
        HttpResponse::Ok()
            .content_type(prometheus::TEXT_FORMAT)
            .body(self.0)
    }
}

impl ApiComponent for MetricsText {
    http_edge::no_schema!();
    fn responses(
        v: apistos::OpenApiVersion,
        _: Option<String>,
        _: Option<String>,
    ) -> Option<apistos::paths::Responses> {
        let description = "Every metric now, in the Prometheus text format.";
        Some(http_edge::answers::text_ok(
            prometheus::TEXT_FORMAT,
            description,
            v,
        ))
    }
}

/// Metrics
///
/// Requests by route template, method and status class, their latency, requests in flight,
/// refusals by cause, the database pool and the process, in the Prometheus text format
/// (docs/OPERATIONS.md). With `API_AUTH=tokens` it needs the operator key.
#[api_operation(operation_id = "metrics", tag = "meta")]
pub async fn metrics(req: HttpRequest) -> Result<MetricsText, ApiError> {
    let edge = http_edge::Edge::of(&req)?;
    Ok(MetricsText(edge.metrics.render(&edge.db)))
}

/// The service's identity and what problem `type` URIs point to: public. The metrics are
/// operator data, never rate limited (a scraper must not lose samples).
pub const ACCESS: &[Rule] = &[
    Rule::any("/", Access::Public),
    Rule::tree("/problems", Access::Public),
    Rule::unmetered("/metrics", Access::OperatorOnly),
];

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(resource("/").route(get().to(root)))
        .service(resource("/problems/{slug}").route(get().to(problem_type)))
        .service(resource("/metrics").route(get().to(metrics)));
}
