use diesel::prelude::*;
use pagination::Page;
use storage::DbConnection;

use crate::schema::notes;
use crate::{Error, Note, NoteInput};

type Row = (i64, String, String);
const COLUMNS: (notes::id, notes::title, notes::body) = (notes::id, notes::title, notes::body);

fn to_note((id, title, body): Row) -> Note {
    Note { id, title, body }
}

/// One page of notes by id ascending, and the total count.
pub fn list(conn: &mut DbConnection, page: Page) -> Result<(Vec<Note>, i64), Error> {
    let rows: Vec<Row> = notes::table
        .select(COLUMNS)
        .order(notes::id.asc())
        .limit(page.limit)
        .offset(page.offset)
        .load(conn)?;
    let total: i64 = notes::table.count().get_result(conn)?;
    Ok((rows.into_iter().map(to_note).collect(), total))
}

pub fn create(conn: &mut DbConnection, input: &NoteInput) -> Result<Note, Error> {
    let row: Row = diesel::insert_into(notes::table)
        .values((notes::title.eq(&input.title), notes::body.eq(&input.body)))
        .returning(COLUMNS)
        .get_result(conn)?;
    Ok(to_note(row))
}

pub fn get(conn: &mut DbConnection, id: i64) -> Result<Note, Error> {
    notes::table
        .find(id)
        .select(COLUMNS)
        .first::<Row>(conn)
        .optional()?
        .map(to_note)
        .ok_or(Error::NoteNotFound { id })
}

pub fn update(conn: &mut DbConnection, id: i64, input: &NoteInput) -> Result<Note, Error> {
    diesel::update(notes::table.find(id))
        .set((notes::title.eq(&input.title), notes::body.eq(&input.body)))
        .returning(COLUMNS)
        .get_result::<Row>(conn)
        .optional()?
        .map(to_note)
        .ok_or(Error::NoteNotFound { id })
}

/// Deletes the note and (by cascade) its comments.
pub fn delete(conn: &mut DbConnection, id: i64) -> Result<(), Error> {
    match diesel::delete(notes::table.find(id)).execute(conn)? {
        0 => Err(Error::NoteNotFound { id }),
        _ => Ok(()),
    }
}

/// Fails with `NoteNotFound` unless the note exists.
pub fn ensure_exists(conn: &mut DbConnection, id: i64) -> Result<(), Error> {
    let found: Option<i64> = notes::table
        .find(id)
        .select(notes::id)
        .first(conn)
        .optional()?;
    found.map(|_| ()).ok_or(Error::NoteNotFound { id })
}
