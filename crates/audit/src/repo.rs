//! The `audit_log` table.

use diesel::prelude::*;
use storage::DbConnection;

use crate::schema::audit_log;
use crate::{Action, Entry};

/// Most rows one page holds.
pub const PAGE_MAX: i64 = 100;

pub(crate) fn insert(
    conn: &mut DbConnection,
    action: &Action,
    resource: &str,
    at: &str,
) -> QueryResult<()> {
    diesel::insert_into(audit_log::table)
        .values(row(action, resource, at))
        .execute(conn)?;
    Ok(())
}

/// [`insert`] for several writes, in one statement (in the order given, so ids ascend with
/// it). Batched writes (the ledger's group commit) record theirs at once.
pub(crate) fn insert_all(
    conn: &mut DbConnection,
    writes: &[(&Action, &str)],
    at: &str,
) -> QueryResult<()> {
    // 7 values a row: far below SQLite's 32,766 bound parameters per statement.
    for chunk in writes.chunks(1_000) {
        let rows: Vec<_> = chunk
            .iter()
            .map(|(action, resource)| row(action, resource, at))
            .collect();
        storage::with_backend!(conn, |c| diesel::insert_into(audit_log::table)
            .values(&rows)
            .execute(c))?;
    }
    Ok(())
}

#[allow(clippy::type_complexity)]
fn row<'a>(
    action: &'a Action,
    resource: &'a str,
    at: &'a str,
) -> (
    diesel::dsl::Eq<audit_log::at, &'a str>,
    diesel::dsl::Eq<audit_log::actor, &'static str>,
    diesel::dsl::Eq<audit_log::user_id, Option<i64>>,
    diesel::dsl::Eq<audit_log::token_id, Option<i64>>,
    diesel::dsl::Eq<audit_log::method, &'a String>,
    diesel::dsl::Eq<audit_log::route, &'a String>,
    diesel::dsl::Eq<audit_log::resource, &'a str>,
) {
    (
        audit_log::at.eq(at),
        audit_log::actor.eq(action.actor.kind()),
        audit_log::user_id.eq(action.actor.owner_id()),
        audit_log::token_id.eq(action.actor.token_id()),
        audit_log::method.eq(&action.method),
        audit_log::route.eq(&action.route),
        audit_log::resource.eq(resource),
    )
}

/// Which rows a page holds: newest first, older than `before` (an id; `None`: from the newest),
/// at most `limit` (1..=[`PAGE_MAX`]), of one user's writes or everyone's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Query {
    pub before: Option<i64>,
    pub limit: i64,
    pub user_id: Option<i64>,
}

/// One page, and whether older rows follow it.
pub fn page(conn: &mut DbConnection, q: Query) -> QueryResult<(Vec<Entry>, bool)> {
    let limit = q.limit.clamp(1, PAGE_MAX);
    let mut query = audit_log::table
        .select(audit_log::all_columns)
        .order(audit_log::id.desc())
        .limit(limit + 1)
        .into_boxed();
    if let Some(before) = q.before {
        query = query.filter(audit_log::id.lt(before));
    }
    if let Some(user) = q.user_id {
        query = query.filter(audit_log::user_id.eq(user));
    }
    let mut rows: Vec<Entry> = query
        .load::<Row>(conn)?
        .into_iter()
        .map(Entry::from)
        .collect();
    // One row past the page says whether older ones follow.
    let more = rows.len() as i64 > limit;
    rows.truncate(usize::try_from(limit).unwrap_or(0));
    Ok((rows, more))
}

#[derive(Queryable)]
struct Row {
    id: i64,
    at: String,
    actor: String,
    user_id: Option<i64>,
    token_id: Option<i64>,
    method: String,
    route: String,
    resource: String,
}

impl From<Row> for Entry {
    fn from(r: Row) -> Self {
        Entry {
            id: r.id,
            at: r.at,
            actor: r.actor,
            user_id: r.user_id,
            token_id: r.token_id,
            method: r.method,
            route: r.route,
            resource: r.resource,
        }
    }
}
