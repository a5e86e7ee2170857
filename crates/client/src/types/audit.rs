//! The audit trail (`GET /audit`, operator data).

use serde::Deserialize;

use super::paging::query;

/// Which page of the trail: newest first, `before` an id (the previous page's `next_cursor`),
/// at most `limit` rows (1 to 100; default 20), optionally one user's writes.
///
/// ```
/// let page = client::AuditRequest::new(50).user(7).before(1200);
/// assert_eq!((page.limit, page.user_id, page.before), (Some(50), Some(7), Some(1200)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AuditRequest {
    pub limit: Option<u32>,
    pub before: Option<i64>,
    pub user_id: Option<i64>,
}

impl AuditRequest {
    /// The newest `limit` rows.
    pub fn new(limit: u32) -> Self {
        AuditRequest {
            limit: Some(limit),
            ..AuditRequest::default()
        }
    }

    /// Rows older than the row `cursor`.
    pub fn before(mut self, cursor: i64) -> Self {
        self.before = Some(cursor);
        self
    }

    /// Only the writes of `user`.
    pub fn user(mut self, user: i64) -> Self {
        self.user_id = Some(user);
        self
    }

    pub(crate) fn query(&self) -> Vec<(&'static str, String)> {
        query([
            ("limit", self.limit.map(i128::from)),
            ("before", self.before.map(i128::from)),
            ("user_id", self.user_id.map(i128::from)),
        ])
    }
}

/// One successful write (schema `AuditEntryDto`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AuditEntry {
    pub id: i64,
    /// RFC 3339, UTC.
    pub at: String,
    /// `user`, `operator` or `anonymous`.
    pub actor: String,
    pub user_id: Option<i64>,
    /// The id of the token that made it (never the token).
    pub token_id: Option<i64>,
    pub method: String,
    /// The route template (`/notes/{note_id}`).
    pub route: String,
    /// What was written (a create: what it made).
    pub resource: String,
}

/// A page of the trail (schema `AuditPage`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AuditPage {
    pub items: Vec<AuditEntry>,
    pub limit: i64,
    pub has_more: bool,
    /// The `before` of the next page.
    pub next_cursor: Option<i64>,
}
