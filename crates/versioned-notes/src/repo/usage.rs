use diesel::prelude::*;
use diesel::upsert::excluded;
use pagination::Page;
use storage::DbConnection;

use crate::schema::v1_usage as u;
use crate::{CallerUsage, Error};

/// Counts one V1 call by `caller`: one upsert, atomic on both backends, so every instance
/// sharing the database adds to the same counts.
pub fn record(conn: &mut DbConnection, caller: &str) -> Result<(), Error> {
    let now = storage::timestamp::now_rfc3339();
    storage::with_backend!(conn, |c| diesel::insert_into(u::table)
        .values((
            u::caller.eq(caller),
            u::calls.eq(1_i64),
            u::first_seen.eq(&now),
            u::last_seen.eq(&now),
        ))
        .on_conflict(u::caller)
        .do_update()
        .set((
            u::calls.eq(u::calls + 1_i64),
            u::last_seen.eq(excluded(u::last_seen)),
        ))
        .execute(c))?;
    Ok(())
}

/// Callers by calls descending (then by name), paged, with the number of callers.
pub fn list(conn: &mut DbConnection, page: Page) -> Result<(Vec<CallerUsage>, i64), Error> {
    let usage: Vec<CallerUsage> = u::table
        .select(u::all_columns)
        .order((u::calls.desc(), u::caller.asc()))
        .limit(page.limit)
        .offset(page.offset)
        .load(conn)?;
    let total: i64 = u::table.count().get_result(conn)?;
    Ok((usage, total))
}
