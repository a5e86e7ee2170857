#![doc = include_str!("../README.md")]

pub mod repo;
pub mod schema;

use ownership::Actor;
use problem_details::{FieldError, Problem, ToProblem};

pub use repo::{PAGE_MAX, Query};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid query")]
    Validation(Vec<FieldError>),
    #[error("audit storage")]
    Storage(#[from] diesel::result::Error),
}

impl ToProblem for Error {
    fn to_problem(&self) -> Problem {
        match self {
            Error::Validation(errors) => Problem::validation(errors.clone()),
            Error::Storage(_) => Problem::internal(),
        }
    }
}

/// Rows a page holds by default.
pub const PAGE_DEFAULT: i64 = 20;

impl Query {
    /// `before` (an id ≥ 1; absent: from the newest), `limit` (1..=[`PAGE_MAX`], default
    /// [`PAGE_DEFAULT`]) and `user_id` (any integer), as raw query values; every invalid one
    /// is reported at once.
    pub fn parse(
        before: Option<&str>,
        limit: Option<&str>,
        user_id: Option<&str>,
    ) -> Result<Query, Error> {
        use pagination::{Params, parse_in};
        let mut params = Params::new();
        let before = params.optional(parse_in("before", before, 1..=i64::MAX));
        let limit = params.take(parse_in("limit", limit, 1..=PAGE_MAX), PAGE_DEFAULT);
        let user_id = params.optional(pagination::parse_int("user_id", user_id));
        params
            .finish(Query {
                before,
                limit,
                user_id,
            })
            .map_err(Error::Validation)
    }
}

/// One page of the trail, newest first, and whether older rows follow.
pub fn page(conn: &mut storage::DbConnection, query: Query) -> Result<(Vec<Entry>, bool), Error> {
    Ok(repo::page(conn, query)?)
}

/// A write about to be made: who and what; [`record`] adds the time and the resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    pub actor: Actor,
    /// `POST`, `PUT`, `DELETE`, …
    pub method: String,
    /// The route template (`/notes/{note_id}`).
    pub route: String,
    /// The request's path: the resource written, unless the write names another (a create
    /// names what it made).
    pub path: String,
}

/// One recorded write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub id: i64,
    /// RFC 3339, UTC.
    pub at: String,
    /// `anonymous`, `operator` or `user`.
    pub actor: String,
    pub user_id: Option<i64>,
    pub token_id: Option<i64>,
    pub method: String,
    pub route: String,
    pub resource: String,
}

/// Records `action` as done now, on `resource` (`None`: the request's path). Call it inside the
/// write's own transaction.
pub fn record(
    conn: &mut storage::DbConnection,
    action: &Action,
    resource: Option<&str>,
) -> diesel::QueryResult<()> {
    repo::insert(
        conn,
        action,
        resource.unwrap_or(&action.path),
        &storage::timestamp::now_rfc3339(),
    )
}

/// [`record`] for several writes done now, in one statement: each `action` on its resource
/// (`None`: its request's path). Call it inside the writes' own transaction.
pub fn record_all(
    conn: &mut storage::DbConnection,
    writes: &[(&Action, Option<&str>)],
) -> diesel::QueryResult<()> {
    if writes.is_empty() {
        return Ok(());
    }
    let rows: Vec<(&Action, &str)> = writes
        .iter()
        .map(|(action, resource)| (*action, resource.unwrap_or(&action.path)))
        .collect();
    repo::insert_all(conn, &rows, &storage::timestamp::now_rfc3339())
}

#[cfg(test)]
mod tests {
    use super::*;
    use problem_details::FieldErrorCode;

    #[test]
    fn a_query_defaults_and_reports_every_bad_value() {
        assert_eq!(
            Query::parse(None, None, None).ok(),
            Some(Query {
                before: None,
                limit: PAGE_DEFAULT,
                user_id: None
            })
        );
        assert_eq!(
            Query::parse(Some("9"), Some("100"), Some("-3")).ok(),
            Some(Query {
                before: Some(9),
                limit: 100,
                user_id: Some(-3)
            })
        );
        let Err(Error::Validation(errors)) = Query::parse(Some("0"), Some("101"), Some("x")) else {
            panic!("accepted");
        };
        let fields: Vec<_> = errors.iter().map(|e| (e.field.as_str(), e.code)).collect();
        assert_eq!(
            fields,
            [
                ("before", FieldErrorCode::OutOfRange),
                ("limit", FieldErrorCode::OutOfRange),
                ("user_id", FieldErrorCode::Invalid)
            ]
        );
    }
}
