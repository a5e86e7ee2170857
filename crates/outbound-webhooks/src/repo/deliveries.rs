//! The delivery log: one row per attempt, kept with its endpoint.

use diesel::prelude::*;
use pagination::Page;
use storage::DbConnection;

use crate::model::Delivery;
use crate::schema::webhook_deliveries as d;

/// A delivery to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDelivery<'a> {
    pub endpoint_id: i64,
    pub message_id: &'a str,
    pub event_id: i64,
    pub attempt: i64,
    pub outcome: &'a str,
    pub response_status: Option<i64>,
    pub latency_ms: i64,
    pub error: Option<&'a str>,
    pub next_attempt_at: Option<i64>,
    pub manual: bool,
}

/// A row of the delivery log, its columns named in table order (`d::all_columns`).
#[derive(Queryable)]
struct DeliveryRow {
    id: i64,
    endpoint_id: i64,
    message_id: String,
    event_id: i64,
    attempt: i64,
    outcome: String,
    response_status: Option<i64>,
    latency_ms: i64,
    error: Option<String>,
    next_attempt_at: Option<i64>,
    attempted_at: String,
    manual: bool,
}

fn delivery(row: DeliveryRow) -> Delivery {
    Delivery {
        id: row.id,
        endpoint_id: row.endpoint_id,
        message_id: row.message_id,
        event_id: row.event_id,
        attempt: row.attempt,
        outcome: row.outcome,
        response_status: row.response_status,
        latency_ms: row.latency_ms,
        error: row.error,
        next_attempt_at: row.next_attempt_at,
        attempted_at: row.attempted_at,
        manual: row.manual,
    }
}

pub fn insert_delivery(
    conn: &mut DbConnection,
    new: &NewDelivery<'_>,
    now: &str,
) -> QueryResult<Delivery> {
    let row = delivery_row(new, now);
    storage::with_backend!(conn, |c| diesel::insert_into(d::table)
        .values(row)
        .returning(d::all_columns)
        .get_result::<DeliveryRow>(c))
    .map(delivery)
}

/// The head of [`log_deliveries`]' statement: the columns it fills, in the order of its JSON
/// rows (`attempted_at` last, bound once for all of them).
macro_rules! insert_into_log {
    () => {
        "INSERT INTO webhook_deliveries (endpoint_id, message_id, event_id, attempt, outcome, \
         response_status, latency_ms, error, next_attempt_at, manual, attempted_at) "
    };
}

/// Logs `attempts` at `now` in one statement that takes them all as one JSON array: two bound
/// values and a short statement, where a multi-row insert bound 11 values a row into a
/// statement as long as the batch (this one is still prepared on every call, as Diesel keeps
/// no raw SQL prepared, but it is short). The
/// dispatcher logs about a hundred attempts per write, inside the SQLite write lock the
/// appends wait for, and preparing and binding was a third of that insert's time
/// (docs/PERFORMANCE.md). The two backends read JSON arrays with different SQL, hence one
/// statement each. SQLite's `jsonb_each`, not `json_each`: it hands each row to the ten `->>`
/// as JSONB, where `json_each` handed it as text that each of them parsed again (half the
/// JSON work of the dispatcher's writer under `perf`, 2026-12-08).
pub fn log_deliveries(
    conn: &mut DbConnection,
    attempts: &[NewDelivery<'_>],
    now: &str,
) -> QueryResult<()> {
    use diesel::sql_types::Text;
    if attempts.is_empty() {
        return Ok(());
    }
    let rows: Vec<_> = attempts
        .iter()
        .map(|a| {
            (
                a.endpoint_id,
                a.message_id,
                a.event_id,
                a.attempt,
                a.outcome,
                a.response_status,
                a.latency_ms,
                a.error,
                a.next_attempt_at,
                a.manual,
            )
        })
        .collect();
    let rows = serde_json::to_string(&rows)
        .map_err(|e| diesel::result::Error::SerializationError(Box::new(e)))?;
    // Rows are inserted in the array's order, so that ids follow the attempts' order.
    match conn {
        DbConnection::Postgresql(c) => diesel::sql_query(concat!(
            insert_into_log!(),
            "SELECT (r ->> 0)::bigint, r ->> 1, (r ->> 2)::bigint, (r ->> 3)::bigint, r ->> 4, \
               (r ->> 5)::bigint, (r ->> 6)::bigint, r ->> 7, (r ->> 8)::bigint, \
               (r ->> 9)::boolean, $2 \
             FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS t(r, n) ORDER BY n"
        ))
        .bind::<Text, _>(rows)
        .bind::<Text, _>(now)
        .execute(c),
        DbConnection::Sqlite(c) => diesel::sql_query(concat!(
            insert_into_log!(),
            "SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, \
               value ->> 5, value ->> 6, value ->> 7, value ->> 8, value ->> 9, ?2 \
             FROM jsonb_each(?1) ORDER BY key"
        ))
        .bind::<Text, _>(rows)
        .bind::<Text, _>(now)
        .execute(c),
    }
    .map(drop)
}

#[allow(clippy::type_complexity)]
fn delivery_row<'a>(
    new: &NewDelivery<'a>,
    now: &'a str,
) -> (
    diesel::dsl::Eq<d::endpoint_id, i64>,
    diesel::dsl::Eq<d::message_id, &'a str>,
    diesel::dsl::Eq<d::event_id, i64>,
    diesel::dsl::Eq<d::attempt, i64>,
    diesel::dsl::Eq<d::outcome, &'a str>,
    diesel::dsl::Eq<d::response_status, Option<i64>>,
    diesel::dsl::Eq<d::latency_ms, i64>,
    diesel::dsl::Eq<d::error, Option<&'a str>>,
    diesel::dsl::Eq<d::next_attempt_at, Option<i64>>,
    diesel::dsl::Eq<d::attempted_at, &'a str>,
    diesel::dsl::Eq<d::manual, bool>,
) {
    (
        d::endpoint_id.eq(new.endpoint_id),
        d::message_id.eq(new.message_id),
        d::event_id.eq(new.event_id),
        d::attempt.eq(new.attempt),
        d::outcome.eq(new.outcome),
        d::response_status.eq(new.response_status),
        d::latency_ms.eq(new.latency_ms),
        d::error.eq(new.error),
        d::next_attempt_at.eq(new.next_attempt_at),
        d::attempted_at.eq(now),
        d::manual.eq(new.manual),
    )
}

/// A page of an endpoint's deliveries, newest first, and how many there are.
pub fn deliveries(
    conn: &mut DbConnection,
    endpoint_id: i64,
    page: Page,
) -> QueryResult<(Vec<Delivery>, i64)> {
    let rows = d::table
        .filter(d::endpoint_id.eq(endpoint_id))
        .order(d::id.desc())
        .limit(page.limit)
        .offset(page.offset)
        .load::<DeliveryRow>(conn)?;
    let total = d::table
        .filter(d::endpoint_id.eq(endpoint_id))
        .count()
        .get_result(conn)?;
    Ok((rows.into_iter().map(delivery).collect(), total))
}

pub fn get_delivery(
    conn: &mut DbConnection,
    endpoint_id: i64,
    id: i64,
) -> QueryResult<Option<Delivery>> {
    Ok(d::table
        .filter(d::endpoint_id.eq(endpoint_id))
        .filter(d::id.eq(id))
        .first::<DeliveryRow>(conn)
        .optional()?
        .map(delivery))
}
