use diesel::prelude::*;
use pagination::Page;
use storage::DbConnection;
use storage::counts::{self, Counted};

use crate::schema::versioned_notes as vn;
use crate::{Error, NoteInput, VersionedNote};

/// A stored row, every column in table order (so `vn::all_columns` selects it); `tags` is the
/// JSON text of the list.
#[derive(Queryable)]
struct NoteRow {
    id: i64,
    title: String,
    body: String,
    tags: String,
    created_at: String,
    updated_at: String,
    owner_id: Option<i64>,
}

fn to_note(row: NoteRow) -> Result<VersionedNote, Error> {
    let id = row.id;
    let tags =
        serde_json::from_str(&row.tags).map_err(|source| Error::CorruptTags { id, source })?;
    Ok(VersionedNote {
        id,
        title: row.title,
        body: row.body,
        tags,
        created_at: row.created_at,
        updated_at: row.updated_at,
        owner_id: row.owner_id,
    })
}

/// Creates a note owned by `owner` (`None`: no user).
pub fn create(
    conn: &mut DbConnection,
    input: &NoteInput,
    owner: Option<i64>,
) -> Result<VersionedNote, Error> {
    let now = storage::timestamp::now_rfc3339();
    let tags = serde_json::Value::from(input.tags.clone()).to_string();
    let row: NoteRow = diesel::insert_into(vn::table)
        .values((
            vn::title.eq(&input.title),
            vn::body.eq(&input.body),
            vn::tags.eq(&tags),
            vn::created_at.eq(&now),
            vn::updated_at.eq(&now),
            vn::owner_id.eq(owner),
        ))
        .returning(vn::all_columns)
        .get_result(conn)?;
    to_note(row)
}

pub fn get(conn: &mut DbConnection, id: i64) -> Result<VersionedNote, Error> {
    vn::table
        .find(id)
        .select(vn::all_columns)
        .first::<NoteRow>(conn)
        .optional()?
        .ok_or(Error::NotFound { id })
        .and_then(to_note)
}

/// One page by id descending (newest first).
pub fn page(conn: &mut DbConnection, page: Page) -> Result<Vec<VersionedNote>, Error> {
    let rows: Vec<NoteRow> = vn::table
        .select(vn::all_columns)
        .order(vn::id.desc())
        .limit(page.limit)
        .offset(page.offset)
        .load(conn)?;
    rows.into_iter().map(to_note).collect()
}

/// One page by id descending and how many notes exist (V2's list with its `meta.total`), in one
/// statement.
pub fn page_and_total(
    conn: &mut DbConnection,
    page: Page,
) -> Result<(Vec<VersionedNote>, i64), Error> {
    let counted = Counted::table("versioned_notes");
    let rows: Vec<(NoteRow, i64)> = vn::table
        .select((vn::all_columns, counts::total_column(counted)))
        .order(vn::id.desc())
        .limit(page.limit)
        .offset(page.offset)
        .load(conn)?;
    let (rows, total) = counts::split(conn, rows, counted)?;
    Ok((
        rows.into_iter().map(to_note).collect::<Result<_, _>>()?,
        total,
    ))
}

/// How many notes exist (V2's `meta.total`; V1's list shows no total and does not count).
pub fn count(conn: &mut DbConnection) -> Result<i64, Error> {
    Ok(counts::total(conn, Counted::table("versioned_notes"))?)
}
