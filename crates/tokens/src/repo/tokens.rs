use diesel::prelude::*;
use pagination::Page;
use storage::DbConnection;
use storage::counts::{self, Counted};

use crate::schema::tokens;
use crate::{Error, Scope, Token};

/// A token row, every column in table order (so `tokens::all_columns` selects it, and returns
/// it where a statement needs `RETURNING`: diesel's `as_returning()` does not compile for the
/// two-backend connection). The digest is read but never leaves this module.
#[derive(Queryable)]
struct TokenRow {
    id: i64,
    user_id: i64,
    _token_hash: String,
    scope: String,
    label: String,
    created_at: String,
    revoked_at: Option<String>,
    expires_at: Option<String>,
    last_used_at: Option<String>,
}

/// A new token as written.
#[derive(Insertable)]
#[diesel(table_name = tokens)]
pub struct NewToken<'a> {
    pub user_id: i64,
    pub token_hash: &'a str,
    pub scope: &'a str,
    pub label: &'a str,
    pub created_at: &'a str,
    pub expires_at: &'a str,
}

impl From<TokenRow> for Token {
    fn from(row: TokenRow) -> Token {
        Token {
            id: row.id,
            user_id: row.user_id,
            // The CHECK constraint admits only the three names; the lowest scope is the safe
            // reading of anything else.
            scope: Scope::parse(&row.scope).unwrap_or(Scope::Read),
            label: row.label,
            created_at: row.created_at,
            revoked_at: row.revoked_at,
            expires_at: row.expires_at,
            last_used_at: row.last_used_at,
        }
    }
}

/// Stores a new active token under its digest. A digest that exists already is a unique
/// violation (`Error::Storage`); with 256 random bits it does not happen.
pub fn insert(conn: &mut DbConnection, new: &NewToken<'_>) -> Result<Token, Error> {
    let row: TokenRow = diesel::insert_into(tokens::table)
        .values(new)
        .returning(tokens::all_columns)
        .get_result(conn)?;
    Ok(row.into())
}

/// A user's tokens, newest first, revoked ones included: every one (`page` is `None`, as the
/// specification lists them) or one page of them; and how many the user has (the kept count,
/// read in the same statement).
pub fn list_for_user(
    conn: &mut DbConnection,
    user_id: i64,
    page: Option<Page>,
) -> Result<(Vec<Token>, i64), Error> {
    let counted = Counted::tokens_of(user_id);
    let query = tokens::table
        .filter(tokens::user_id.eq(user_id))
        .select((tokens::all_columns, counts::total_column(counted)))
        .order(tokens::id.desc());
    let rows: Vec<(TokenRow, i64)> = match page {
        None => query.load(conn)?,
        Some(page) => query.limit(page.limit).offset(page.offset).load(conn)?,
    };
    let (rows, total) = counts::split(conn, rows, counted)?;
    Ok((rows.into_iter().map(Token::from).collect(), total))
}

/// How many of the user's tokens are active at `now` (RFC 3339): not revoked, not expired.
pub fn count_active(conn: &mut DbConnection, user_id: i64, now: &str) -> Result<i64, Error> {
    Ok(tokens::table
        .filter(tokens::user_id.eq(user_id))
        .filter(tokens::revoked_at.is_null())
        .filter(tokens::expires_at.is_null().or(tokens::expires_at.gt(now)))
        .count()
        .get_result(conn)?)
}

/// Up to `limit` of the user's tokens older than the token `before`, newest first: the next
/// chunk of a list read in chunks.
pub fn older_than(
    conn: &mut DbConnection,
    user_id: i64,
    before: i64,
    limit: i64,
) -> Result<Vec<Token>, Error> {
    let rows: Vec<TokenRow> = tokens::table
        .filter(tokens::user_id.eq(user_id))
        .filter(tokens::id.lt(before))
        .order(tokens::id.desc())
        .limit(limit)
        .select(tokens::all_columns)
        .load(conn)?;
    Ok(rows.into_iter().map(Token::from).collect())
}

pub fn find(conn: &mut DbConnection, id: i64) -> Result<Option<Token>, Error> {
    Ok(tokens::table
        .find(id)
        .select(tokens::all_columns)
        .first::<TokenRow>(conn)
        .optional()?
        .map(Token::from))
}

/// The token stored under this digest (one indexed lookup), active or not.
pub fn find_by_hash(conn: &mut DbConnection, token_hash: &str) -> Result<Option<Token>, Error> {
    Ok(tokens::table
        .filter(tokens::token_hash.eq(token_hash))
        .select(tokens::all_columns)
        .first::<TokenRow>(conn)
        .optional()?
        .map(Token::from))
}

/// Sets `revoked_at` if the token is not revoked yet; returns the revoked token, or `None` when
/// it was already revoked (or does not exist). The row is kept.
pub fn revoke(conn: &mut DbConnection, id: i64) -> Result<Option<Token>, Error> {
    Ok(
        diesel::update(tokens::table.filter(tokens::id.eq(id).and(tokens::revoked_at.is_null())))
            .set(tokens::revoked_at.eq(storage::timestamp::now_rfc3339()))
            .returning(tokens::all_columns)
            .get_result::<TokenRow>(conn)
            .optional()?
            .map(Token::from),
    )
}

/// Records a use at `now` unless one at or after `since` is recorded already (so concurrent
/// requests write it once).
pub fn touch(conn: &mut DbConnection, id: i64, now: &str, since: &str) -> Result<(), Error> {
    diesel::update(
        tokens::table.filter(
            tokens::id.eq(id).and(
                tokens::last_used_at
                    .is_null()
                    .or(tokens::last_used_at.lt(since)),
            ),
        ),
    )
    .set(tokens::last_used_at.eq(now))
    .execute(conn)?;
    Ok(())
}
