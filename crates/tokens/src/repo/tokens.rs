use diesel::prelude::*;
use storage::DbConnection;

use crate::schema::tokens;
use crate::{Error, Scope, Token};

type Row = (i64, i64, String, String, String, Option<String>);
#[allow(clippy::type_complexity)]
const COLUMNS: (
    tokens::id,
    tokens::user_id,
    tokens::scope,
    tokens::label,
    tokens::created_at,
    tokens::revoked_at,
) = (
    tokens::id,
    tokens::user_id,
    tokens::scope,
    tokens::label,
    tokens::created_at,
    tokens::revoked_at,
);

fn to_token((id, user_id, scope, label, created_at, revoked_at): Row) -> Token {
    Token {
        id,
        user_id,
        // The CHECK constraint admits only the three names; the lowest scope is the safe
        // reading of anything else.
        scope: Scope::parse(&scope).unwrap_or(Scope::Read),
        label,
        created_at,
        revoked_at,
    }
}

/// Stores a new active token under its digest. A digest that exists already is a unique
/// violation (`Error::Storage`); with 256 random bits it does not happen.
pub fn insert(
    conn: &mut DbConnection,
    user_id: i64,
    token_hash: &str,
    scope: Scope,
    label: &str,
) -> Result<Token, Error> {
    let row: Row = diesel::insert_into(tokens::table)
        .values((
            tokens::user_id.eq(user_id),
            tokens::token_hash.eq(token_hash),
            tokens::scope.eq(scope.as_str()),
            tokens::label.eq(label),
            tokens::created_at.eq(storage::timestamp::now_rfc3339()),
        ))
        .returning(COLUMNS)
        .get_result(conn)?;
    Ok(to_token(row))
}

/// Every token of a user, newest first, revoked ones included.
pub fn list_for_user(conn: &mut DbConnection, user_id: i64) -> Result<Vec<Token>, Error> {
    let rows: Vec<Row> = tokens::table
        .filter(tokens::user_id.eq(user_id))
        .select(COLUMNS)
        .order(tokens::id.desc())
        .load(conn)?;
    Ok(rows.into_iter().map(to_token).collect())
}

pub fn find(conn: &mut DbConnection, id: i64) -> Result<Option<Token>, Error> {
    Ok(tokens::table
        .find(id)
        .select(COLUMNS)
        .first::<Row>(conn)
        .optional()?
        .map(to_token))
}

/// The token stored under this digest (one indexed lookup), active or not.
pub fn find_by_hash(conn: &mut DbConnection, token_hash: &str) -> Result<Option<Token>, Error> {
    Ok(tokens::table
        .filter(tokens::token_hash.eq(token_hash))
        .select(COLUMNS)
        .first::<Row>(conn)
        .optional()?
        .map(to_token))
}

/// Sets `revoked_at` if the token is still active; returns the revoked token, or `None` when
/// it was already revoked (or does not exist). The row is kept.
pub fn revoke(conn: &mut DbConnection, id: i64) -> Result<Option<Token>, Error> {
    Ok(
        diesel::update(tokens::table.filter(tokens::id.eq(id).and(tokens::revoked_at.is_null())))
            .set(tokens::revoked_at.eq(storage::timestamp::now_rfc3339()))
            .returning(COLUMNS)
            .get_result::<Row>(conn)
            .optional()?
            .map(to_token),
    )
}
