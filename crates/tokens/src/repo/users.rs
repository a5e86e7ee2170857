use diesel::prelude::*;
use storage::DbConnection;

use crate::schema::users;
use crate::{Error, NewUser, User};

type Row = (i64, String, String);
const COLUMNS: (users::id, users::name, users::created_at) =
    (users::id, users::name, users::created_at);

fn to_user((id, name, created_at): Row) -> User {
    User {
        id,
        name,
        created_at,
    }
}

pub fn create(conn: &mut DbConnection, input: &NewUser) -> Result<User, Error> {
    let row: Row = diesel::insert_into(users::table)
        .values((
            users::name.eq(&input.name),
            users::created_at.eq(storage::timestamp::now_rfc3339()),
        ))
        .returning(COLUMNS)
        .get_result(conn)?;
    Ok(to_user(row))
}

pub fn get(conn: &mut DbConnection, id: i64) -> Result<User, Error> {
    users::table
        .find(id)
        .select(COLUMNS)
        .first::<Row>(conn)
        .optional()?
        .map(to_user)
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
