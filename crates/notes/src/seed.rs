//! Demo notes, tags and comments in bulk (`server seed`). Each run numbers its rows after the
//! ones the table already counts, so seeding twice adds distinct rows (tag names are unique).

use diesel::prelude::*;
use storage::DbConnection;
use storage::counts::Counted;
use storage::seed::generated_rows;

use crate::schema::notes;
use crate::{Error, NoteInput, repo};

/// Inserts `count` notes ("Demo note N"), `batch` per statement; `progress` gets the rows
/// committed so far. Returns `count`.
pub fn notes(
    conn: &mut DbConnection,
    count: u64,
    batch: usize,
    progress: impl FnMut(u64),
) -> Result<u64, Error> {
    let sql = "INSERT INTO notes (title, body) \
               SELECT 'Demo note ' || k, 'The body of demo note ' || k || '.' FROM g";
    Ok(generated_rows(
        conn,
        Counted::table("notes"),
        count,
        batch,
        sql,
        progress,
    )?)
}

/// Inserts `count` tags ("demo-tag-N").
pub fn tags(
    conn: &mut DbConnection,
    count: u64,
    batch: usize,
    progress: impl FnMut(u64),
) -> Result<u64, Error> {
    let sql = "INSERT INTO tags (name) SELECT 'demo-tag-' || k FROM g";
    Ok(generated_rows(
        conn,
        Counted::table("tags"),
        count,
        batch,
        sql,
        progress,
    )?)
}

/// Inserts `count` comments on the oldest note (made first when there is none): one busy note,
/// the case where the comments list's `total` would cost the most to count.
pub fn comments(
    conn: &mut DbConnection,
    count: u64,
    batch: usize,
    progress: impl FnMut(u64),
) -> Result<u64, Error> {
    if count == 0 {
        return Ok(0);
    }
    let oldest: Option<i64> = notes::table
        .select(notes::id)
        .order(notes::id.asc())
        .first(conn)
        .optional()?;
    let note_id = match oldest {
        Some(id) => id,
        None => {
            let note = NoteInput {
                title: "Demo note with comments".into(),
                body: String::new(),
            };
            repo::notes::create(conn, &note, None)?.id
        }
    };
    let sql = format!(
        "INSERT INTO comments (note_id, body) SELECT {note_id}, 'Demo comment ' || k FROM g"
    );
    let counted = Counted::comments_of(note_id);
    Ok(generated_rows(conn, counted, count, batch, &sql, progress)?)
}
