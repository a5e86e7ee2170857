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

/// Logs `attempts` at `now`: one statement per few hundred rows, not one per row (a round of
/// deliveries logs up to a hundred attempts per endpoint).
pub fn log_deliveries(
    conn: &mut DbConnection,
    attempts: &[NewDelivery<'_>],
    now: &str,
) -> QueryResult<()> {
    // 11 values a row: far below SQLite's 32,766 bound parameters per statement.
    for chunk in attempts.chunks(500) {
        let rows: Vec<_> = chunk.iter().map(|new| delivery_row(new, now)).collect();
        storage::with_backend!(conn, |c| diesel::insert_into(d::table)
            .values(&rows)
            .execute(c))?;
    }
    Ok(())
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
