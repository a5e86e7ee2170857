//! The endpoint and delivery tables (`deliveries`), the same Diesel code on SQLite and
//! PostgreSQL. Nothing here opens a transaction ([`crate::service`] and [`crate::dispatch`] do).

use std::time::Duration;

use diesel::prelude::*;
use ledger::FeedPosition;
use pagination::Page;
use storage::DbConnection;
use storage::timestamp::database_ms;

use crate::model::{Endpoint, EventTypes};
use crate::schema::{webhook_deliveries as d, webhook_endpoints as e};

mod deliveries;

pub use deliveries::*;

/// An endpoint as stored (its cursor and lease are the dispatcher's, read apart).
#[derive(Queryable, Selectable)]
#[diesel(table_name = e)]
struct EndpointRow {
    id: i64,
    owner_id: Option<i64>,
    url: String,
    event_types: String,
    enabled: bool,
    secret_version: i64,
    secret_salt: String,
    created_at: String,
    updated_at: String,
    failed_attempts: i64,
    next_attempt_at: i64,
}

fn endpoint(row: EndpointRow) -> Endpoint {
    Endpoint {
        id: row.id,
        owner_id: row.owner_id,
        url: row.url,
        event_types: EventTypes::from_stored(&row.event_types),
        enabled: row.enabled,
        secret_version: row.secret_version,
        secret_salt: row.secret_salt,
        created_at: row.created_at,
        updated_at: row.updated_at,
        failed_attempts: row.failed_attempts,
        next_attempt_at: row.next_attempt_at,
    }
}

/// Holds registrations for `owner`'s endpoints back until this transaction ends, so that
/// concurrent ones cannot pass the cap together: a PostgreSQL advisory lock (owners that share
/// its key only wait for each other); a SQLite write holds the one write lock already.
pub fn lock_owner(conn: &mut DbConnection, owner: Option<i64>) -> QueryResult<()> {
    if let DbConnection::Postgresql(c) = conn {
        let key = i32::try_from(owner.unwrap_or(0).rem_euclid(i64::from(i32::MAX))).unwrap_or(0);
        diesel::sql_query("SELECT pg_advisory_xact_lock(7301, $1)")
            .bind::<diesel::sql_types::Integer, _>(key)
            .execute(c)?;
    }
    Ok(())
}

/// How many endpoints `owner` has (the operator's when `None`).
pub fn count_of(conn: &mut DbConnection, owner: Option<i64>) -> QueryResult<i64> {
    let count = e::table.count().into_boxed();
    match owner {
        Some(owner) => count.filter(e::owner_id.eq(owner)),
        None => count.filter(e::owner_id.is_null()),
    }
    .get_result(conn)
}

/// A new endpoint, starting after `head` (it receives what is committed from now on).
pub fn insert(
    conn: &mut DbConnection,
    owner_id: Option<i64>,
    url: &str,
    types: &EventTypes,
    salt: &str,
    head: FeedPosition,
    now: &str,
) -> QueryResult<Endpoint> {
    let row = (
        e::owner_id.eq(owner_id),
        e::secret_salt.eq(salt),
        e::url.eq(url),
        e::event_types.eq(types.stored()),
        e::created_at.eq(now),
        e::updated_at.eq(now),
        e::cursor_tx.eq(head.tx),
        e::cursor_id.eq(head.id),
    );
    storage::with_backend!(conn, |c| diesel::insert_into(e::table)
        .values(row)
        .returning(EndpointRow::as_returning())
        .get_result::<EndpointRow>(c))
    .map(endpoint)
}

pub fn get(conn: &mut DbConnection, id: i64) -> QueryResult<Option<Endpoint>> {
    Ok(e::table
        .find(id)
        .select(EndpointRow::as_select())
        .first::<EndpointRow>(conn)
        .optional()?
        .map(endpoint))
}

/// A page of endpoints by id (only `owner`'s when given), and how many there are.
pub fn list(
    conn: &mut DbConnection,
    owner: Option<i64>,
    page: Page,
) -> QueryResult<(Vec<Endpoint>, i64)> {
    let mut q = e::table
        .select(EndpointRow::as_select())
        .order(e::id.asc())
        .into_boxed();
    let mut count = e::table.count().into_boxed();
    if let Some(owner) = owner {
        q = q.filter(e::owner_id.eq(owner));
        count = count.filter(e::owner_id.eq(owner));
    }
    let rows = q
        .limit(page.limit)
        .offset(page.offset)
        .load::<EndpointRow>(conn)?;
    Ok((
        rows.into_iter().map(endpoint).collect(),
        count.get_result(conn)?,
    ))
}

/// Changes an endpoint's URL, event types or enabled flag (each when given).
pub fn update(
    conn: &mut DbConnection,
    id: i64,
    url: Option<&str>,
    types: Option<&EventTypes>,
    enabled: Option<bool>,
    now: &str,
) -> QueryResult<()> {
    let target = e::table.find(id);
    if let Some(url) = url {
        diesel::update(target).set(e::url.eq(url)).execute(conn)?;
    }
    if let Some(types) = types {
        diesel::update(target)
            .set(e::event_types.eq(types.stored()))
            .execute(conn)?;
    }
    if let Some(enabled) = enabled {
        // Enabled again: the next event is tried at once.
        diesel::update(target)
            .set((e::enabled.eq(enabled), e::next_attempt_at.eq(0)))
            .execute(conn)?;
    }
    diesel::update(target)
        .set(e::updated_at.eq(now))
        .execute(conn)?;
    Ok(())
}

/// A new secret version; the previous one still signs for `grace` (until then by the database's
/// clock, which every process reads). `None` while an earlier rotation's grace lasts: rotating
/// then would end that grace at once.
pub fn rotate(
    conn: &mut DbConnection,
    id: i64,
    grace: Duration,
    now: &str,
) -> QueryResult<Option<i64>> {
    let now_ms = database_ms(conn)?;
    let grace_until = after(now_ms, grace);
    let rotated = diesel::update(
        e::table
            .find(id)
            .filter(e::previous_secret_until.le(now_ms)),
    )
    .set((
        e::secret_version.eq(e::secret_version + 1),
        e::previous_secret_until.eq(grace_until),
        e::updated_at.eq(now),
    ))
    .execute(conn)?;
    if rotated == 0 {
        return Ok(None);
    }
    e::table
        .find(id)
        .select(e::secret_version)
        .first(conn)
        .map(Some)
}

pub fn delete(conn: &mut DbConnection, id: i64) -> QueryResult<()> {
    diesel::delete(d::table.filter(d::endpoint_id.eq(id))).execute(conn)?;
    diesel::delete(e::table.find(id)).execute(conn)?;
    Ok(())
}

/// What the dispatcher needs of an endpoint it delivers for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    pub endpoint: Endpoint,
    pub cursor: FeedPosition,
    /// Secret versions that sign now: the current one, and the previous one in its grace.
    pub versions: Vec<i64>,
}

/// `ms` (Unix milliseconds) plus `span`.
pub fn after(ms: i64, span: Duration) -> i64 {
    ms.saturating_add(i64::try_from(span.as_millis()).unwrap_or(i64::MAX))
}

/// Enabled endpoints with events after their place (before `head`, the feed's last position),
/// whose next attempt is due and that no live process delivers for; those that waited longest
/// first. Due times and leases are read against the database's clock, as they were written
/// ([`database_ms`]): processes whose own clocks disagree still agree on them.
pub fn due(conn: &mut DbConnection, head: FeedPosition, limit: i64) -> QueryResult<Vec<i64>> {
    let now_ms = database_ms(conn)?;
    let behind = e::cursor_tx
        .lt(head.tx)
        .or(e::cursor_tx.eq(head.tx).and(e::cursor_id.lt(head.id)));
    e::table
        .filter(e::enabled.eq(true))
        .filter(behind)
        .filter(e::next_attempt_at.le(now_ms))
        .filter(e::lease_until.lt(now_ms))
        .select(e::id)
        .order((e::next_attempt_at.asc(), e::id.asc()))
        .limit(limit)
        .load(conn)
}

/// Takes (or renews) the lease on endpoint `id` for `owner` for `span` (by the database's
/// clock): only when no other process holds a live one. Returns its state when taken.
pub fn lease(
    conn: &mut DbConnection,
    id: i64,
    owner: &str,
    span: Duration,
) -> QueryResult<Option<Due>> {
    let now_ms = database_ms(conn)?;
    let until = after(now_ms, span);
    let taken = diesel::update(
        e::table
            .find(id)
            .filter(e::enabled.eq(true))
            .filter(e::lease_until.lt(now_ms).or(e::lease_owner.eq(owner))),
    )
    .set((e::lease_owner.eq(owner), e::lease_until.eq(until)))
    .execute(conn)?;
    if taken == 0 {
        return Ok(None);
    }
    let (row, cursor_tx, cursor_id) = e::table
        .find(id)
        .select((EndpointRow::as_select(), e::cursor_tx, e::cursor_id))
        .first::<(EndpointRow, i64, i64)>(conn)?;
    let versions = versions_at(conn, id, now_ms)?;
    Ok(Some(Due {
        endpoint: endpoint(row),
        cursor: FeedPosition {
            tx: cursor_tx,
            id: cursor_id,
        },
        versions,
    }))
}

/// Where an endpoint stands after attempts: its place in the feed, the failed attempts at the
/// next event, when that is due (0: at once) and until when the lease is held (0: given back),
/// both in Unix ms by the database's clock.
pub struct Standing {
    pub cursor: FeedPosition,
    pub failed_attempts: i64,
    pub next_attempt_at: i64,
    pub lease_until: i64,
}

/// Records where endpoint `id` stands after an attempt (`standing` given now by the database's
/// clock, [`database_ms`]), while `owner` still holds its lease and the endpoint is enabled.
/// `false` when the lease was lost (another process goes on) or the endpoint was disabled
/// meanwhile (its events wait): nothing is changed, and the deliverer stops.
pub fn advance(
    conn: &mut DbConnection,
    id: i64,
    owner: &str,
    standing: &Standing,
) -> QueryResult<bool> {
    let Standing {
        cursor,
        failed_attempts,
        next_attempt_at,
        lease_until,
    } = *standing;
    let held = e::table
        .find(id)
        .filter(e::lease_owner.eq(owner))
        .filter(e::enabled.eq(true));
    let changed = diesel::update(held)
        .set((
            e::cursor_tx.eq(cursor.tx),
            e::cursor_id.eq(cursor.id),
            e::failed_attempts.eq(failed_attempts),
            e::next_attempt_at.eq(next_attempt_at),
            e::lease_until.eq(lease_until),
        ))
        .execute(conn)?;
    Ok(changed == 1)
}

/// Gives the lease back (the endpoint may be taken by any process at once).
pub fn release(conn: &mut DbConnection, id: i64, owner: &str) -> QueryResult<()> {
    diesel::update(e::table.find(id).filter(e::lease_owner.eq(owner)))
        .set(e::lease_until.eq(0))
        .execute(conn)?;
    Ok(())
}

/// The secret versions that sign endpoint `id`'s deliveries now: the current one, and the
/// previous one while a rotation's grace lasts (by the database's clock).
pub fn signing_versions(conn: &mut DbConnection, id: i64) -> QueryResult<Vec<i64>> {
    let now_ms = database_ms(conn)?;
    versions_at(conn, id, now_ms)
}

fn versions_at(conn: &mut DbConnection, id: i64, now_ms: i64) -> QueryResult<Vec<i64>> {
    let (version, grace) = e::table
        .find(id)
        .select((e::secret_version, e::previous_secret_until))
        .first::<(i64, i64)>(conn)?;
    let mut versions = vec![version];
    if grace > now_ms && version > 1 {
        versions.push(version - 1);
    }
    Ok(versions)
}
