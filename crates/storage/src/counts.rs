//! Exact row counts read in O(1): the `row_counts` table, kept by triggers in the same
//! transaction as every insert and delete of a counted table (migration `row_counts`). A list's
//! `total` sums a handful of counter rows instead of scanning the table, so the first page costs
//! the same at 1,000,000 rows as at 10. PostgreSQL spreads every count (a whole table's, a
//! note's comments', a user's tokens') over up to 16 shard rows (one per backend-pid residue) so
//! concurrent writers do not queue on one row lock; SQLite keeps one.

use diesel::backend::Backend;
use diesel::expression::{AppearsOnTable, SelectableExpression, ValidGrouping, is_aggregate};
use diesel::prelude::*;
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::serialize::ToSql;
use diesel::sql_types::BigInt;

use crate::DbConnection;

/// What a counter counts: a whole table, or the rows of one table under one parent row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    table: &'static str,
    parent: i64,
}

impl Counted {
    /// Every row of `table` (one of the counted tables: notes, tags, articles,
    /// versioned_notes, accounts, webhook_events).
    pub const fn table(table: &'static str) -> Self {
        Counted { table, parent: 0 }
    }

    /// The comments of note `note_id`.
    pub const fn comments_of(note_id: i64) -> Self {
        Counted {
            table: "comments",
            parent: note_id,
        }
    }

    /// The tokens of user `user_id`, revoked ones included.
    pub const fn tokens_of(user_id: i64) -> Self {
        Counted {
            table: "tokens",
            parent: user_id,
        }
    }
}

/// How many rows `what` covers, as of the reading transaction's snapshot.
pub fn total(conn: &mut DbConnection, what: Counted) -> QueryResult<i64> {
    diesel::select(total_column(what)).get_result(conn)
}

/// The total as a column of a page's own statement (a scalar subquery on `row_counts`), so that
/// a list costs one round trip to the database rather than two: `.select((cols,
/// total_column(what)))`, then [`split`] the rows.
pub fn total_column(what: Counted) -> TotalColumn {
    TotalColumn(what)
}

/// `(SELECT SUM(n) FROM row_counts WHERE …)` as an expression. Written as a query fragment
/// rather than with `diesel::dsl::sql`: a literal marks its whole statement as not cacheable,
/// so every list would be parsed and planned again on each request. This one keeps the
/// statement's text fixed for a counted table (the parent is a bind parameter), so the
/// prepared statement is reused.
#[derive(Debug, Clone, Copy)]
pub struct TotalColumn(Counted);

impl Expression for TotalColumn {
    type SqlType = BigInt;
}

impl<QS> SelectableExpression<QS> for TotalColumn {}

impl<QS> AppearsOnTable<QS> for TotalColumn {}

impl ValidGrouping<()> for TotalColumn {
    type IsAggregate = is_aggregate::Never;
}

impl QueryId for TotalColumn {
    type QueryId = ();
    // The SQL names the counted table: cache by the statement's text, not by its type.
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<DB> QueryFragment<DB> for TotalColumn
where
    DB: Backend,
    i64: ToSql<BigInt, DB>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        out.push_sql(
            "(SELECT CAST(COALESCE(SUM(row_counts.n), 0) AS BIGINT) FROM row_counts \
             WHERE row_counts.counted = '",
        );
        // The name goes into the SQL text, so only a counted table's is accepted.
        let table = self.0.table;
        let known = COUNTED_TABLES.contains(&table)
            || COUNTED_CHILDREN.iter().any(|(child, _, _)| *child == table);
        if !known {
            return Err(diesel::result::Error::QueryBuilderError(
                format!("{table:?} is not a counted table").into(),
            ));
        }
        out.push_sql(table);
        out.push_sql("' AND row_counts.parent = ");
        out.push_bind_param::<BigInt, i64>(&self.0.parent)?;
        out.push_sql(")");
        Ok(())
    }
}

/// Splits a page read with [`total_column`] into its items and the total. An empty page carries
/// no total (an offset past the end), so the total is then read on its own.
pub fn split<T>(
    conn: &mut DbConnection,
    rows: Vec<(T, i64)>,
    what: Counted,
) -> QueryResult<(Vec<T>, i64)> {
    match rows.first() {
        Some(&(_, total)) => Ok((rows.into_iter().map(|(item, _)| item).collect(), total)),
        None => Ok((Vec::new(), self::total(conn, what)?)),
    }
}

/// The whole tables whose count is kept.
pub const COUNTED_TABLES: [&str; 6] = [
    "notes",
    "tags",
    "articles",
    "versioned_notes",
    "accounts",
    "webhook_events",
];

/// The tables whose rows are counted per parent row: (table, parent table, column naming the
/// parent).
pub const COUNTED_CHILDREN: [(&str, &str, &str); 2] = [
    ("comments", "notes", "note_id"),
    ("tokens", "users", "user_id"),
];

/// A kept count that differs from the rows it counts.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct Drift {
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub counted: String,
    #[diesel(sql_type = BigInt)]
    pub parent: i64,
    #[diesel(sql_type = BigInt)]
    pub kept: i64,
    #[diesel(sql_type = BigInt)]
    pub actual: i64,
}

/// Compares every kept count with `COUNT(*)` of what it counts (a full scan of every counted
/// table: for checks and tests, never on a request). Empty when all agree.
pub fn audit(conn: &mut DbConnection) -> QueryResult<Vec<Drift>> {
    let kept = |counted: &str, parent: &str| {
        format!(
            "(SELECT CAST(COALESCE(SUM(r.n), 0) AS BIGINT) FROM row_counts r \
             WHERE r.counted = '{counted}' AND r.parent = {parent})"
        )
    };
    let mut parts: Vec<String> = COUNTED_TABLES
        .iter()
        .map(|t| {
            format!(
                "SELECT '{t}' AS counted, CAST(0 AS BIGINT) AS parent, {} AS kept, \
                 (SELECT COUNT(*) FROM {t}) AS actual",
                kept(t, "0")
            )
        })
        .collect();
    for (counted, parents, column) in COUNTED_CHILDREN {
        parts.push(format!(
            "SELECT '{counted}', p.id, {}, \
             (SELECT COUNT(*) FROM {counted} c WHERE c.{column} = p.id) FROM {parents} p",
            kept(counted, "p.id")
        ));
        // Counters left behind by a parent that no longer exists.
        parts.push(format!(
            "SELECT r.counted, r.parent, CAST(SUM(r.n) AS BIGINT), CAST(0 AS BIGINT) \
             FROM row_counts r WHERE r.counted = '{counted}' \
             AND NOT EXISTS (SELECT 1 FROM {parents} p WHERE p.id = r.parent) \
             GROUP BY r.counted, r.parent"
        ));
    }
    let sql = format!(
        "SELECT counted, parent, kept, actual FROM ({}) AS x WHERE kept <> actual \
         ORDER BY counted, parent",
        parts.join(" UNION ALL ")
    );
    diesel::sql_query(sql).load(conn)
}
