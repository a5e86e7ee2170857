use diesel::prelude::*;
use pagination::Page;
use storage::DbConnection;
use storage::counts::{self, Counted};

use crate::schema::comments;
use crate::{Comment, CommentInput, Error};

/// A comment row whose note vanished between the check and the insert is a missing note.
fn note_gone(note_id: i64) -> impl Fn(diesel::result::Error) -> Error {
    move |e| match e {
        diesel::result::Error::DatabaseError(
            diesel::result::DatabaseErrorKind::ForeignKeyViolation,
            _,
        ) => Error::NoteNotFound { id: note_id },
        other => Error::Storage(other),
    }
}

/// The comments of one note by id ascending, and their count. The note must exist: a page
/// with comments shows it does (one statement); an empty page checks it.
pub fn list(
    conn: &mut DbConnection,
    note_id: i64,
    page: Page,
) -> Result<(Vec<Comment>, i64), Error> {
    let counted = Counted::comments_of(note_id);
    let rows: Vec<(Comment, i64)> = comments::table
        .filter(comments::note_id.eq(note_id))
        .select((comments::all_columns, counts::total_column(counted)))
        .order(comments::id.asc())
        .limit(page.limit)
        .offset(page.offset)
        .load(conn)?;
    if rows.is_empty() {
        super::notes::ensure_exists(conn, note_id)?;
    }
    Ok(counts::split(conn, rows, counted)?)
}

pub fn create(
    conn: &mut DbConnection,
    note_id: i64,
    input: &CommentInput,
    owner: Option<i64>,
) -> Result<Comment, Error> {
    super::notes::ensure_exists(conn, note_id)?;
    diesel::insert_into(comments::table)
        .values((
            comments::note_id.eq(note_id),
            comments::body.eq(&input.body),
            comments::owner_id.eq(owner),
        ))
        .returning(comments::all_columns)
        .get_result::<Comment>(conn)
        .map_err(note_gone(note_id))
}

/// A comment of that note; a comment id of another note is not found.
pub fn get(conn: &mut DbConnection, note_id: i64, id: i64) -> Result<Comment, Error> {
    super::notes::ensure_exists(conn, note_id)?;
    comments::table
        .filter(comments::id.eq(id).and(comments::note_id.eq(note_id)))
        .select(comments::all_columns)
        .first::<Comment>(conn)
        .optional()?
        .ok_or(Error::CommentNotFound { note_id, id })
}

/// The comment, locked until the end of the transaction (see [`super::notes::lock`]).
pub fn lock(conn: &mut DbConnection, note_id: i64, id: i64) -> Result<Comment, Error> {
    super::notes::ensure_exists(conn, note_id)?;
    let query = comments::table
        .filter(comments::id.eq(id).and(comments::note_id.eq(note_id)))
        .select(comments::all_columns);
    let row: Option<Comment> = match conn {
        DbConnection::Postgresql(c) => query.for_update().first(c).optional()?,
        DbConnection::Sqlite(c) => query.first(c).optional()?,
    };
    row.ok_or(Error::CommentNotFound { note_id, id })
}

pub fn update(
    conn: &mut DbConnection,
    note_id: i64,
    id: i64,
    input: &CommentInput,
) -> Result<Comment, Error> {
    super::notes::ensure_exists(conn, note_id)?;
    diesel::update(comments::table.filter(comments::id.eq(id).and(comments::note_id.eq(note_id))))
        .set(comments::body.eq(&input.body))
        .returning(comments::all_columns)
        .get_result::<Comment>(conn)
        .optional()?
        .ok_or(Error::CommentNotFound { note_id, id })
}

pub fn delete(conn: &mut DbConnection, note_id: i64, id: i64) -> Result<(), Error> {
    super::notes::ensure_exists(conn, note_id)?;
    let target = comments::table.filter(comments::id.eq(id).and(comments::note_id.eq(note_id)));
    match diesel::delete(target).execute(conn)? {
        0 => Err(Error::CommentNotFound { note_id, id }),
        _ => Ok(()),
    }
}
