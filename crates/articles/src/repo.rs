//! Repository functions over `&mut DbConnection`, the same code on SQLite and PostgreSQL. The
//! caller decides on transactions.

use diesel::prelude::*;
use pagination::{Cursor, CursorPage, OffsetPage, Page};
use storage::DbConnection;
use storage::counts::{self, Counted};

use crate::schema::articles;
use crate::{Article, Error, NewArticle};

/// Inserts one article, owned by `owner` (`None`: no user).
pub fn create(
    conn: &mut DbConnection,
    new: &NewArticle,
    owner: Option<i64>,
) -> Result<Article, Error> {
    let row: Article = diesel::insert_into(articles::table)
        .values((
            articles::title.eq(&new.title),
            articles::author.eq(&new.author),
            articles::category.eq(new.category.as_deref()),
            articles::created_at.eq(&new.created_at),
            articles::owner_id.eq(owner),
        ))
        .returning(articles::all_columns)
        .get_result(conn)?;
    Ok(row)
}

/// Inserts `rows` with one multi-row `INSERT`; returns how many were inserted. Keep a batch
/// within the backends' bind limits (4 values per row: SQLite allows 32,766 binds,
/// PostgreSQL 65,535).
pub fn insert_batch(conn: &mut DbConnection, rows: &[NewArticle]) -> Result<usize, Error> {
    if rows.is_empty() {
        return Ok(0);
    }
    let values: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                articles::title.eq(&r.title),
                articles::author.eq(&r.author),
                articles::category.eq(r.category.as_deref()),
                articles::created_at.eq(&r.created_at),
            )
        })
        .collect();
    let inserted = storage::with_backend!(conn, |c| diesel::insert_into(articles::table)
        .values(&values)
        .execute(c))?;
    Ok(inserted)
}

/// Offset paging: `ORDER BY id DESC LIMIT ? OFFSET ?`, and `total` from the kept count
/// (`storage::counts`, no scan). The page's cost grows with the offset: the skipped rows are
/// read and thrown away, which is why the cursor route exists.
pub fn list_offset(conn: &mut DbConnection, page: Page) -> Result<OffsetPage<Article>, Error> {
    let counted = Counted::table("articles");
    let rows: Vec<(Article, i64)> = articles::table
        .select((articles::all_columns, counts::total_column(counted)))
        .order(articles::id.desc())
        .limit(page.limit)
        .offset(page.offset)
        .load(conn)?;
    let (rows, total) = counts::split(conn, rows, counted)?;
    Ok(OffsetPage::new(rows, page, total))
}

/// Cursor paging: one range query on the primary key,
/// `WHERE id < after ORDER BY id DESC LIMIT limit + 1` (no `WHERE` on the first page). No
/// `OFFSET` and no `COUNT`: the cost is the same on the first page and the ten-thousandth.
pub fn list_cursor(conn: &mut DbConnection, cursor: Cursor) -> Result<CursorPage<Article>, Error> {
    let first_page = articles::table
        .select(articles::all_columns)
        .order(articles::id.desc())
        .limit(cursor.fetch());
    let rows: Vec<Article> = match cursor.after {
        Some(after) => first_page.filter(articles::id.lt(after)).load(conn)?,
        None => first_page.load(conn)?,
    };
    Ok(CursorPage::from_rows(rows, cursor, |a| a.id))
}

/// How many articles there are.
pub fn count(conn: &mut DbConnection) -> Result<i64, Error> {
    Ok(counts::total(conn, Counted::table("articles"))?)
}
