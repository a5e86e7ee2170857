use diesel::prelude::*;
use storage::DbConnection;

use crate::schema::users;
use crate::{Error, NewUser, User};

pub fn create(conn: &mut DbConnection, input: &NewUser) -> Result<User, Error> {
    let row: User = diesel::insert_into(users::table)
        .values((
            users::name.eq(&input.name),
            users::created_at.eq(storage::timestamp::now_rfc3339()),
        ))
        .returning(users::all_columns)
        .get_result(conn)?;
    Ok(row)
}

pub fn get(conn: &mut DbConnection, id: i64) -> Result<User, Error> {
    users::table
        .find(id)
        .select(users::all_columns)
        .first::<User>(conn)
        .optional()?
        .ok_or(Error::UserNotFound { id })
}

/// Fails with `UserNotFound` unless the user exists.
pub fn ensure_exists(conn: &mut DbConnection, id: i64) -> Result<(), Error> {
    let found: Option<i64> = users::table
        .find(id)
        .select(users::id)
        .first(conn)
        .optional()?;
    found.map(|_| ()).ok_or(Error::UserNotFound { id })
}

/// Locks the user's row until the end of the transaction (PostgreSQL `FOR UPDATE`; a SQLite
/// write transaction already excludes every other writer): what is counted for the user
/// cannot change before the write it allows. Fails with `UserNotFound` unless it exists.
pub fn lock(conn: &mut DbConnection, id: i64) -> Result<(), Error> {
    let query = users::table.find(id).select(users::id);
    let found: Option<i64> = match conn {
        DbConnection::Postgresql(c) => query.for_update().first(c).optional()?,
        DbConnection::Sqlite(c) => query.first(c).optional()?,
    };
    found.map(|_| ()).ok_or(Error::UserNotFound { id })
}
