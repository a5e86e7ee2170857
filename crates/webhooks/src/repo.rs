//! Storage of received webhook events: plain functions over a connection.

use std::collections::{HashMap, HashSet};

use diesel::pg::PgConnection;
use diesel::prelude::*;
use diesel::sqlite::SqliteConnection;
use pagination::Page;
use storage::DbConnection;
use storage::counts::{self, Counted};

use crate::schema::webhook_events;
use crate::{Delivery, Error, Recorded, WebhookEvent};

/// Stores a verified delivery, unless the same `(t, v1)` — and therefore, `v1` being an HMAC
/// over `t` and the body, the same body — is already stored; then nothing is written and the
/// original id is returned. [`record_batch`] with a batch of one.
pub fn record(conn: &mut DbConnection, delivery: &Delivery) -> Result<Recorded, Error> {
    let mut recorded = record_batch(conn, &[delivery])?;
    recorded
        .pop()
        .ok_or(Error::Storage(diesel::result::Error::NotFound))
}

/// Stores several verified deliveries and answers each, in order, as [`record`] would have one
/// after another: a delivery whose `(t, v1)` is already stored, or appears earlier in the batch,
/// is a replay of that one. Several statements: the caller runs it in a transaction.
pub fn record_batch(
    conn: &mut DbConnection,
    deliveries: &[&Delivery],
) -> Result<Vec<Recorded>, Error> {
    let now = storage::timestamp::now_rfc3339();
    match conn {
        DbConnection::Postgresql(c) => insert_all_at_once(c, deliveries, &now),
        DbConnection::Sqlite(c) => insert_one_by_one(c, deliveries, &now),
    }
}

/// The row a delivery is stored as.
#[derive(Insertable)]
#[diesel(table_name = webhook_events)]
struct NewEvent<'a> {
    event_type: &'a str,
    payload: &'a str,
    delivered_at: &'a str,
    signature_t: &'a str,
    signature_v1: &'a str,
}

fn new_row<'a>(d: &'a Delivery, now: &'a str) -> NewEvent<'a> {
    NewEvent {
        event_type: &d.event_type,
        payload: &d.payload,
        delivered_at: now,
        signature_t: &d.signature_t,
        signature_v1: &d.signature_v1,
    }
}

/// PostgreSQL: one multi-row `INSERT … ON CONFLICT (signature_t, signature_v1) DO NOTHING
/// RETURNING`, then one lookup for the rows it skipped. Race-free across connections and server
/// instances: of several concurrent identical inserts exactly one goes through (the others wait
/// for it to commit, then skip), and the skipped ones read the winner's id in the next
/// statement, which sees every committed row.
fn insert_all_at_once(
    c: &mut PgConnection,
    deliveries: &[&Delivery],
    now: &str,
) -> Result<Vec<Recorded>, Error> {
    let values: Vec<_> = deliveries.iter().map(|d| new_row(d, now)).collect();
    let inserted: Vec<StoredSignature> = diesel::insert_into(webhook_events::table)
        .values(&values)
        .on_conflict((webhook_events::signature_t, webhook_events::signature_v1))
        .do_nothing()
        .returning(StoredSignature::as_returning())
        .get_results(c)?;
    let inserted: HashMap<Signature, i64> =
        inserted.into_iter().map(StoredSignature::keyed).collect();
    let skipped: Vec<Signature> = deliveries
        .iter()
        .map(|d| signature(d))
        .filter(|sig| !inserted.contains_key(sig))
        .collect();
    let stored = stored_ids(c, &skipped)?;
    let mut answered: HashSet<Signature> = HashSet::with_capacity(deliveries.len());
    deliveries
        .iter()
        .map(|d| {
            let sig = signature(d);
            if let Some(&id) = inserted.get(&sig) {
                // The batch's first delivery with this signature is the stored one.
                let replayed = !answered.insert(sig);
                return Ok(Recorded { id, replayed });
            }
            let id = stored
                .get(&sig)
                .copied()
                .ok_or(Error::Storage(diesel::result::Error::NotFound))?;
            Ok(Recorded { id, replayed: true })
        })
        .collect()
}

diesel::define_sql_function! {
    /// SQLite: the rowid of the last row this connection inserted.
    fn last_insert_rowid() -> diesel::sql_types::BigInt;
}

diesel::define_sql_function! {
    /// SQLite: the bytes a hex string spells. The replay index is on
    /// `(signature_t, unhex(signature_v1))`.
    fn unhex(hex: diesel::sql_types::Text) -> diesel::sql_types::Binary;
}

/// SQLite: the id of the stored delivery with this `(t, v1)`. The `v1` condition is written as
/// the replay index's expression, `unhex(signature_v1)`, so the lookup walks that index.
fn stored_id_query(
    d: &Delivery,
) -> webhook_events::BoxedQuery<'_, diesel::sqlite::Sqlite, diesel::sql_types::BigInt> {
    webhook_events::table
        .filter(webhook_events::signature_t.eq(&d.signature_t))
        .filter(unhex(webhook_events::signature_v1).eq(unhex(&d.signature_v1)))
        .select(webhook_events::id)
        .into_boxed()
}

/// SQLite: per delivery, `INSERT OR IGNORE` and then either `last_insert_rowid()` (stored) or
/// the stored row's id (replay). Every statement is prepared once per connection and cached: a
/// multi-row insert is not (its SQL depends on the row count, so Diesel prepares it anew for
/// each batch), and `RETURNING` makes SQLite fill and read back a temporary table on every run.
/// Together that was 8–15% of the writer's time per delivery.
///
/// `OR IGNORE` rather than `ON CONFLICT (t, v1) DO NOTHING`: the only constraint a bound row
/// can break is the unique (t, v1) one, and with no constraint left that could abort the
/// statement half-way, SQLite skips the statement journal.
///
/// Race-free: the first insert takes SQLite's single write lock, on the newest snapshot, and
/// keeps it until commit, so an ignored insert's conflicting row is visible to the lookup that
/// follows and nothing else is written in between.
fn insert_one_by_one(
    c: &mut SqliteConnection,
    deliveries: &[&Delivery],
    now: &str,
) -> Result<Vec<Recorded>, Error> {
    deliveries
        .iter()
        .map(|d| {
            let inserted = diesel::insert_or_ignore_into(webhook_events::table)
                .values(new_row(d, now))
                .execute(c)?;
            if inserted == 1 {
                let id = diesel::select(last_insert_rowid()).get_result(c)?;
                return Ok(Recorded {
                    id,
                    replayed: false,
                });
            }
            let id = stored_id_query(d).first(c)?;
            Ok(Recorded { id, replayed: true })
        })
        .collect()
}

/// `(t, v1)` of a delivery: what identifies an exact replay.
type Signature = (String, String);

/// A stored event's id and signature (PostgreSQL's replay lookups).
#[derive(Queryable, Selectable)]
#[diesel(table_name = webhook_events)]
struct StoredSignature {
    id: i64,
    signature_t: String,
    signature_v1: String,
}

impl StoredSignature {
    fn keyed(self) -> (Signature, i64) {
        ((self.signature_t, self.signature_v1), self.id)
    }
}

fn signature(d: &Delivery) -> Signature {
    (d.signature_t.clone(), d.signature_v1.clone())
}

/// PostgreSQL: the ids of the stored events with these signatures.
fn stored_ids(
    conn: &mut PgConnection,
    signatures: &[Signature],
) -> Result<HashMap<Signature, i64>, Error> {
    if signatures.is_empty() {
        return Ok(HashMap::new());
    }
    // Both columns, so the lookup walks the unique (t, v1) index.
    let ts: Vec<&str> = signatures.iter().map(|(t, _)| t.as_str()).collect();
    let v1s: Vec<&str> = signatures.iter().map(|(_, v1)| v1.as_str()).collect();
    let rows: Vec<StoredSignature> = webhook_events::table
        .filter(webhook_events::signature_t.eq_any(&ts))
        .filter(webhook_events::signature_v1.eq_any(&v1s))
        .select(StoredSignature::as_select())
        .load(conn)?;
    Ok(rows
        .into_iter()
        .map(StoredSignature::keyed)
        .filter(|(sig, _)| signatures.contains(sig))
        .collect())
}

// A declared function, not a `sql()` literal: a literal would make the page's statement one that
// is prepared again on every request. Both backends have `octet_length(text)`.
diesel::define_sql_function! {
    /// Bytes of a text value.
    fn octet_length(x: diesel::sql_types::Text) -> diesel::sql_types::Integer;
}

/// Payload and event type bytes up to which a listed event's payload comes back with the first
/// statement: a full page of such events stays within [`crate::LIST_PAGE_MAX_BYTES`].
pub const INLINE_TEXT_BYTES: i32 = (crate::LIST_PAGE_MAX_BYTES / pagination::MAX_LIMIT as usize
    - WebhookEvent::listed_len(0)) as i32;

/// A listed event's id, event type, payload when small enough, and time of delivery.
type MaybeInline = (i64, String, Option<String>, String);

/// One page of events, newest first (id descending), and the total count, in one statement
/// whenever every event on the page is small ([`INLINE_TEXT_BYTES`]), as nearly all are: the
/// payloads of larger ones are left out of it, and then the page is read again by size
/// ([`list_by_size`]). Either way a page costs about the budget in memory, not `limit` times
/// `MAX_BODY_BYTES`.
pub fn list(conn: &mut DbConnection, page: Page) -> Result<(Vec<WebhookEvent>, i64), Error> {
    let counted = Counted::table("webhook_events");
    let text_bytes =
        octet_length(webhook_events::payload) + octet_length(webhook_events::event_type);
    let rows: Vec<(MaybeInline, i64)> = webhook_events::table
        .select((
            (
                webhook_events::id,
                webhook_events::event_type,
                diesel::dsl::case_when(text_bytes.le(INLINE_TEXT_BYTES), webhook_events::payload),
                webhook_events::delivered_at,
            ),
            counts::total_column(counted),
        ))
        .order(webhook_events::id.desc())
        .limit(page.limit)
        .offset(page.offset)
        .load(conn)?;
    let (rows, total) = counts::split(conn, rows, counted)?;
    let inline: Option<Vec<WebhookEvent>> = rows
        .into_iter()
        .map(|(id, event_type, payload, delivered_at)| {
            Some(WebhookEvent {
                id,
                event_type,
                payload: payload?,
                delivered_at,
            })
        })
        .collect();
    match inline {
        Some(events) => Ok((events, total)),
        None => Ok((list_by_size(conn, page)?, total)),
    }
}

/// A page with large events: the sizes of the page's rows are read first and only the rows
/// that fit the budget are loaded.
fn list_by_size(conn: &mut DbConnection, page: Page) -> Result<Vec<WebhookEvent>, Error> {
    let sizes: Vec<(i64, i32)> = webhook_events::table
        .select((
            webhook_events::id,
            octet_length(webhook_events::payload) + octet_length(webhook_events::event_type),
        ))
        .order(webhook_events::id.desc())
        .limit(page.limit)
        .offset(page.offset)
        .load(conn)?;
    let fits = pagination::fitting(&sizes, crate::LIST_PAGE_MAX_BYTES, |(_, len)| {
        WebhookEvent::listed_len(usize::try_from(*len).unwrap_or(usize::MAX))
    });
    Ok(match (sizes.first(), sizes.get(fits - 1)) {
        // Ids in that range, newest first: a delivery stored since has a higher id.
        (Some((newest, _)), Some((oldest, _))) => webhook_events::table
            .select(WebhookEvent::as_select())
            .filter(webhook_events::id.le(*newest))
            .filter(webhook_events::id.ge(*oldest))
            .order(webhook_events::id.desc())
            .load(conn)?,
        _ => Vec::new(),
    })
}

/// How many events are stored.
pub fn count(conn: &mut DbConnection) -> Result<i64, Error> {
    Ok(counts::total(conn, Counted::table("webhook_events"))?)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use diesel::sqlite::Sqlite;
    use storage::Database;

    use super::*;

    #[derive(diesel::QueryableByName)]
    struct PlanRow {
        #[diesel(sql_type = diesel::sql_types::Text)]
        detail: String,
    }

    /// The SQLite replay lookup is answered from the unique `(t, unhex(v1))` index on both
    /// columns, not by scanning every row of that second.
    #[test]
    fn the_sqlite_replay_lookup_uses_the_replay_index() {
        let mut conn = Database::parse(":memory:").unwrap().establish().unwrap();
        storage::run_migrations(&mut conn).unwrap();
        let d = Delivery {
            event_type: "e".into(),
            payload: "{}".into(),
            signature_t: "1700000000".into(),
            signature_v1: "ab".repeat(32),
        };
        let sql = diesel::debug_query::<Sqlite, _>(&stored_id_query(&d)).to_string();
        let sql = sql.split(" -- binds").next().unwrap();
        let plan: Vec<PlanRow> = diesel::sql_query(format!("EXPLAIN QUERY PLAN {sql}"))
            .load(&mut conn)
            .unwrap();
        let plan: Vec<&str> = plan.iter().map(|r| r.detail.as_str()).collect();
        assert!(
            plan.iter()
                .any(|d| d
                    .contains("USING INDEX webhook_events_signature (signature_t=? AND <expr>=?)")),
            "plan: {plan:?}"
        );
    }
}
