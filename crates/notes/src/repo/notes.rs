use diesel::prelude::*;
use pagination::Page;
use storage::DbConnection;
use storage::counts::{self, Counted};

use crate::schema::notes;
use crate::{Error, Note, NoteInput};

/// One page of notes by id ascending, and the total count (one statement).
pub fn list(conn: &mut DbConnection, page: Page) -> Result<(Vec<Note>, i64), Error> {
    let counted = Counted::table("notes");
    let rows: Vec<(Note, i64)> = notes::table
        .select((notes::all_columns, counts::total_column(counted)))
        .order(notes::id.asc())
        .limit(page.limit)
        .offset(page.offset)
        .load(conn)?;
    Ok(counts::split(conn, rows, counted)?)
}

/// Creates a note owned by `owner` (`None`: no user).
pub fn create(
    conn: &mut DbConnection,
    input: &NoteInput,
    owner: Option<i64>,
) -> Result<Note, Error> {
    let row: Note = diesel::insert_into(notes::table)
        .values((
            notes::title.eq(&input.title),
            notes::body.eq(&input.body),
            notes::owner_id.eq(owner),
        ))
        .returning(notes::all_columns)
        .get_result(conn)?;
    Ok(row)
}

pub fn get(conn: &mut DbConnection, id: i64) -> Result<Note, Error> {
    notes::table
        .find(id)
        .select(notes::all_columns)
        .first::<Note>(conn)
        .optional()?
        .ok_or(Error::NoteNotFound { id })
}

/// The note, locked until the end of the transaction (PostgreSQL `FOR UPDATE`; a SQLite write
/// transaction already excludes every other writer): what a conditional update or delete
/// compares against cannot change before it writes.
pub fn lock(conn: &mut DbConnection, id: i64) -> Result<Note, Error> {
    let query = notes::table.find(id).select(notes::all_columns);
    let row: Option<Note> = match conn {
        DbConnection::Postgresql(c) => query.for_update().first(c).optional()?,
        DbConnection::Sqlite(c) => query.first(c).optional()?,
    };
    row.ok_or(Error::NoteNotFound { id })
}

pub fn update(conn: &mut DbConnection, id: i64, input: &NoteInput) -> Result<Note, Error> {
    diesel::update(notes::table.find(id))
        .set((notes::title.eq(&input.title), notes::body.eq(&input.body)))
        .returning(notes::all_columns)
        .get_result::<Note>(conn)
        .optional()?
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
