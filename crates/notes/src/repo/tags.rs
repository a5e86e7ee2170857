use diesel::prelude::*;
use pagination::Page;
use storage::DbConnection;
use storage::counts::{self, Counted};

use crate::schema::tags;
use crate::{Error, Tag, TagInput};

fn duplicate(input: &TagInput) -> impl Fn(diesel::result::Error) -> Error + '_ {
    move |e| {
        if storage::is_unique_violation(&e) {
            Error::DuplicateTagName {
                name: input.name.clone(),
            }
        } else {
            Error::Storage(e)
        }
    }
}

/// One page of tags by id ascending, and the total count (one statement).
pub fn list(conn: &mut DbConnection, page: Page) -> Result<(Vec<Tag>, i64), Error> {
    let counted = Counted::table("tags");
    let rows: Vec<(Tag, i64)> = tags::table
        .select((tags::all_columns, counts::total_column(counted)))
        .order(tags::id.asc())
        .limit(page.limit)
        .offset(page.offset)
        .load(conn)?;
    Ok(counts::split(conn, rows, counted)?)
}

/// Creates a tag; a name that exists already is `DuplicateTagName` (the unique index decides,
/// so two concurrent creates of one name cannot both win). It belongs to `owner`.
pub fn create(conn: &mut DbConnection, input: &TagInput, owner: Option<i64>) -> Result<Tag, Error> {
    diesel::insert_into(tags::table)
        .values((tags::name.eq(&input.name), tags::owner_id.eq(owner)))
        .returning(tags::all_columns)
        .get_result::<Tag>(conn)
        .map_err(duplicate(input))
}

pub fn get(conn: &mut DbConnection, id: i64) -> Result<Tag, Error> {
    tags::table
        .find(id)
        .select(tags::all_columns)
        .first::<Tag>(conn)
        .optional()?
        .ok_or(Error::TagNotFound { id })
}

/// The tag, locked until the end of the transaction (see [`super::notes::lock`]).
pub fn lock(conn: &mut DbConnection, id: i64) -> Result<Tag, Error> {
    let query = tags::table.find(id).select(tags::all_columns);
    let row: Option<Tag> = match conn {
        DbConnection::Postgresql(c) => query.for_update().first(c).optional()?,
        DbConnection::Sqlite(c) => query.first(c).optional()?,
    };
    row.ok_or(Error::TagNotFound { id })
}

pub fn update(conn: &mut DbConnection, id: i64, input: &TagInput) -> Result<Tag, Error> {
    diesel::update(tags::table.find(id))
        .set(tags::name.eq(&input.name))
        .returning(tags::all_columns)
        .get_result::<Tag>(conn)
        .optional()
        .map_err(duplicate(input))?
        .ok_or(Error::TagNotFound { id })
}

pub fn delete(conn: &mut DbConnection, id: i64) -> Result<(), Error> {
    match diesel::delete(tags::table.find(id)).execute(conn)? {
        0 => Err(Error::TagNotFound { id }),
        _ => Ok(()),
    }
}
