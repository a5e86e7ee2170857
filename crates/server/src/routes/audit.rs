//! `GET /audit`: the audit trail (crates/audit), operator data.

use actix_web::web::Json;
use apistos::web::{ServiceConfig, get, resource};
use apistos::{ApiComponent, api_operation};
use audit::{Entry, Query};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use apistos::schemars;

use crate::auth::{Access, Rule};
use http_edge::db::Db;
use http_edge::error::ApiError;
use http_edge::extract::RawQuery;

/// One successful write.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct AuditEntryDto {
    pub id: i64,
    /// RFC 3339, UTC.
    pub at: String,
    /// `user` (a user's token), `operator` (the operator key) or `anonymous` (authentication
    /// off).
    #[schemars(extend("enum" = ["user", "operator", "anonymous"]))]
    pub actor: String,
    /// The token's user, for `user`.
    #[schemars(extend("type" = "integer", "nullable" = true))]
    pub user_id: Option<i64>,
    /// The token's id (never the token), for `user`.
    #[schemars(extend("type" = "integer", "nullable" = true))]
    pub token_id: Option<i64>,
    pub method: String,
    /// The operation's route template (`/notes/{note_id}`).
    pub route: String,
    /// What was written: the request's path, or the created resource's
    /// (`/notes/7`; an appended event is `/accounts/{id}/events/{sequence}`).
    pub resource: String,
}

impl From<Entry> for AuditEntryDto {
    fn from(e: Entry) -> Self {
        AuditEntryDto {
            id: e.id,
            at: e.at,
            actor: e.actor,
            user_id: e.user_id,
            token_id: e.token_id,
            method: e.method,
            route: e.route,
            resource: e.resource,
        }
    }
}

/// `before`, `limit` and `user_id` of the trail.
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct AuditQuery {
    /// Only rows older than this id (the previous page's `next_cursor`).
    #[schemars(range(min = 1))]
    pub before: Option<i64>,
    /// Rows per page, 1 to 100 (default 20).
    #[schemars(range(min = 1, max = audit::PAGE_MAX))]
    pub limit: Option<i64>,
    /// Only this user's writes.
    pub user_id: Option<i64>,
}

/// A page of the trail, newest first.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct AuditPage {
    pub items: Vec<AuditEntryDto>,
    pub limit: i64,
    /// Older rows follow this page.
    pub has_more: bool,
    /// The `before` of the next page, when `has_more`.
    pub next_cursor: Option<i64>,
}

/// The audit trail
///
/// Every successful write, newest first: who made it (the user and token id, or the
/// operator), when, the operation and the resource written. Operator data: with
/// `API_AUTH=tokens` it needs the operator key. Paged by `next_cursor` in the body (no `Link`:
/// its targets would drop the `user_id` filter).
#[api_operation(operation_id = "list_audit", tag = "meta", error_code = 422)]
pub async fn list(db: Db, q: RawQuery<AuditQuery>) -> Result<Json<AuditPage>, ApiError> {
    let query = Query::parse(q.get("before"), q.get("limit"), q.get("user_id"))?;
    let (items, has_more) = db.read(move |c| audit::page(c, query)).await?;
    let next_cursor = has_more.then(|| items.last().map(|e| e.id)).flatten();
    Ok(Json(AuditPage {
        items: items.into_iter().map(AuditEntryDto::from).collect(),
        limit: query.limit,
        has_more,
        next_cursor,
    }))
}

/// The audit trail is operator data.
pub const ACCESS: &[Rule] = &[Rule::any("/audit", Access::OperatorOnly)];

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(resource("/audit").route(get().to(list)));
}
