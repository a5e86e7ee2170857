use diesel::prelude::*;
use pagination::Page;
use storage::DbConnection;

use crate::schema::versioned_notes as vn;
use crate::{Error, NoteInput, VersionedNote};

type Row = (i64, String, String, String, String, String);
const COLUMNS: (
    vn::id,
    vn::title,
    vn::body,
    vn::tags,
    vn::created_at,
    vn::updated_at,
) = (
    vn::id,
    vn::title,
    vn::body,
    vn::tags,
    vn::created_at,
    vn::updated_at,
);

fn to_note((id, title, body, tags, created_at, updated_at): Row) -> Result<VersionedNote, Error> {
    let tags = serde_json::from_str(&tags).map_err(|source| Error::CorruptTags { id, source })?;
    Ok(VersionedNote {
        id,
        title,
        body,
        tags,
        created_at,
        updated_at,
    })
}

pub fn create(conn: &mut DbConnection, input: &NoteInput) -> Result<VersionedNote, Error> {
    let now = storage::timestamp::now_rfc3339();
    let tags = serde_json::Value::from(input.tags.clone()).to_string();
    let row: Row = diesel::insert_into(vn::table)
        .values((
            vn::title.eq(&input.title),
            vn::body.eq(&input.body),
            vn::tags.eq(&tags),
            vn::created_at.eq(&now),
            vn::updated_at.eq(&now),
        ))
        .returning(COLUMNS)
        .get_result(conn)?;
    to_note(row)
}

pub fn get(conn: &mut DbConnection, id: i64) -> Result<VersionedNote, Error> {
    vn::table
        .find(id)
        .select(COLUMNS)
        .first::<Row>(conn)
        .optional()?
        .ok_or(Error::NotFound { id })
        .and_then(to_note)
}

/// One page by id descending (newest first).
pub fn page(conn: &mut DbConnection, page: Page) -> Result<Vec<VersionedNote>, Error> {
    let rows: Vec<Row> = vn::table
        .select(COLUMNS)
        .order(vn::id.desc())
        .limit(page.limit)
        .offset(page.offset)
        .load(conn)?;
    rows.into_iter().map(to_note).collect()
}

/// How many notes exist (V2's `meta.total`; V1's list shows no total and does not count).
pub fn count(conn: &mut DbConnection) -> Result<i64, Error> {
    Ok(vn::table.count().get_result(conn)?)
}
