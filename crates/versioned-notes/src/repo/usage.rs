use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::Text;
use diesel::upsert::excluded;
use pagination::Page;
use storage::DbConnection;

use crate::schema::v1_usage as u;
use crate::tally::Counts;
use crate::{CallerUsage, Error};

/// Adds the tallied calls of each caller (`crate::tally`): one upsert per caller, atomic on
/// both backends, so every instance sharing the database adds to the same counts. A caller's
/// `first_seen` is kept from its first row; `last_seen` only moves forward (instances write
/// their tallies in any order).
pub fn record_all(conn: &mut DbConnection, counts: &Counts) -> Result<(), Error> {
    let later = "CASE WHEN excluded.last_seen > v1_usage.last_seen \
                 THEN excluded.last_seen ELSE v1_usage.last_seen END";
    for (caller, p) in counts {
        storage::with_backend!(conn, |c| diesel::insert_into(u::table)
            .values((
                u::caller.eq(caller),
                u::calls.eq(p.calls),
                u::first_seen.eq(&p.first_seen),
                u::last_seen.eq(&p.last_seen),
            ))
            .on_conflict(u::caller)
            .do_update()
            .set((
                u::calls.eq(u::calls + excluded(u::calls)),
                u::last_seen.eq(sql::<Text>(later)),
            ))
            .execute(c))?;
    }
    Ok(())
}

/// Counts one V1 call by `caller`, now: [`record_all`] with a tally of one.
pub fn record(conn: &mut DbConnection, caller: &str) -> Result<(), Error> {
    let tally = crate::tally::Tally::default();
    tally.record(caller, &storage::timestamp::now_rfc3339());
    record_all(conn, &tally.take())
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
