//! The service's tables in foreign-key order, each read and written through its domain crate's
//! Diesel schema. Rows are always read in primary-key order, text keys compared bytewise on
//! both backends, so a table yields the same rows in the same order (and the same checksum)
//! from SQLite and from PostgreSQL.

use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::Bool;
use sha2::{Digest, Sha256};
use storage::{Backend, DbConnection};

/// Bind parameters per statement: SQLite's limit (32,766) is the lower of the two backends'
/// (PostgreSQL's is 65,535), so one batch fits whichever backend is the target.
const MAX_BINDS: usize = 32_766;
/// Rows held in memory at once, however narrow the table.
const MAX_BATCH: usize = 5_000;

/// Rows per read and per multi-row `INSERT` for a table of `columns` columns.
pub(crate) const fn batch_rows(columns: usize) -> usize {
    let rows = MAX_BINDS / columns;
    if rows < MAX_BATCH { rows } else { MAX_BATCH }
}

/// The SHA-256 of a table's rows in key order, and how many rows went into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checksum {
    pub rows: u64,
    pub sha256: String,
}

/// What the copy and the verification need from one table.
pub(crate) trait Table: Sync {
    fn name(&self) -> &'static str;
    fn columns(&self) -> &'static [&'static str];
    /// The identity column PostgreSQL numbers new rows from, if the table has one.
    fn serial(&self) -> Option<&'static str>;
    fn count(&self, conn: &mut DbConnection) -> QueryResult<i64>;
    /// Copies every row of `from` into `to`, ids included; `progress` gets the running total
    /// after each batch.
    fn copy(
        &self,
        from: &mut DbConnection,
        to: &mut DbConnection,
        progress: &mut dyn FnMut(u64),
    ) -> QueryResult<u64>;
    fn checksum(&self, conn: &mut DbConnection) -> QueryResult<Checksum>;
}

/// A value's bytes for the checksum: a type tag, then a fixed-width or length-prefixed body.
/// No two different rows encode alike, and how a backend stores the value (SQLite's 0/1 for a
/// boolean, PostgreSQL's `t`/`f`) never shows through: both are read into the same Rust type.
pub(crate) trait Canonical {
    fn feed(&self, hash: &mut Sha256);
}

impl Canonical for i64 {
    fn feed(&self, hash: &mut Sha256) {
        hash.update([b'i']);
        hash.update(self.to_be_bytes());
    }
}

impl Canonical for bool {
    fn feed(&self, hash: &mut Sha256) {
        hash.update([b'b', u8::from(*self)]);
    }
}

impl Canonical for String {
    fn feed(&self, hash: &mut Sha256) {
        hash.update([b's']);
        hash.update((self.len() as u64).to_be_bytes());
        hash.update(self.as_bytes());
    }
}

impl<T: Canonical> Canonical for Option<T> {
    fn feed(&self, hash: &mut Sha256) {
        match self {
            None => hash.update([b'n']),
            Some(value) => {
                hash.update([b'v']);
                value.feed(hash);
            }
        }
    }
}

/// How PostgreSQL must compare a key to order it as SQLite does: text bytewise (`COLLATE "C"`
/// is not on every key column, and the database's own collation may be a locale's).
macro_rules! pg_collation {
    (Text) => {
        " COLLATE \"C\""
    };
    (BigInt) => {
        ""
    };
}

/// One table: a unit struct implementing [`Table`] over the domain crate's schema. The row
/// struct lists every column; the select, the insert and the checksum all follow that list.
macro_rules! table {
    (
        $unit:ident = $krate:ident::schema::$name:ident,
        key $key:ident: $key_type:ident,
        serial $serial:expr,
        { $($col:ident: $ty:ty),+ $(,)? }
    ) => {
        pub(crate) struct $unit;

        const _: () = {
            use ::$krate::schema::$name as t;

            const COLUMNS: &[&str] = &[$(stringify!($col)),+];

            #[derive(Queryable)]
            struct Row {
                $($col: $ty),+
            }

            /// Up to `limit` rows after `after` in key order.
            fn page(
                conn: &mut DbConnection,
                after: Option<&Row>,
                limit: usize,
            ) -> QueryResult<Vec<Row>> {
                let key = match conn.backend() {
                    Backend::Postgres => {
                        concat!(stringify!($key), pg_collation!($key_type))
                    }
                    Backend::Sqlite => stringify!($key),
                };
                let mut query = t::table
                    .select(($(t::$col,)+))
                    .order(sql::<diesel::sql_types::$key_type>(key))
                    .limit(i64::try_from(limit).unwrap_or(i64::MAX))
                    .into_boxed();
                if let Some(last) = after {
                    query = query.filter(
                        sql::<Bool>(&format!("{key} > "))
                            .bind::<diesel::sql_types::$key_type, _>(&last.$key),
                    );
                }
                query.load::<Row>(conn)
            }

            /// Calls `each` with every batch of rows in key order; returns the row count.
            fn walk(
                conn: &mut DbConnection,
                mut each: impl FnMut(&[Row], u64) -> QueryResult<()>,
            ) -> QueryResult<u64> {
                let limit = batch_rows(COLUMNS.len());
                let mut total = 0u64;
                let mut last: Option<Row> = None;
                loop {
                    let rows = page(conn, last.as_ref(), limit)?;
                    total += rows.len() as u64;
                    if !rows.is_empty() {
                        each(&rows, total)?;
                    }
                    if rows.len() < limit {
                        return Ok(total);
                    }
                    last = rows.into_iter().last();
                }
            }

            impl Table for $unit {
                fn name(&self) -> &'static str {
                    stringify!($name)
                }

                fn columns(&self) -> &'static [&'static str] {
                    COLUMNS
                }

                fn serial(&self) -> Option<&'static str> {
                    $serial
                }

                fn count(&self, conn: &mut DbConnection) -> QueryResult<i64> {
                    t::table.count().get_result(conn)
                }

                fn copy(
                    &self,
                    from: &mut DbConnection,
                    to: &mut DbConnection,
                    progress: &mut dyn FnMut(u64),
                ) -> QueryResult<u64> {
                    walk(from, |rows, total| {
                        let values: Vec<_> =
                            rows.iter().map(|r| ($(t::$col.eq(&r.$col),)+)).collect();
                        // Multi-row inserts only compile on the concrete connection.
                        storage::with_backend!(&mut *to, |c| diesel::insert_into(t::table)
                            .values(&values)
                            .execute(c))?;
                        progress(total);
                        Ok(())
                    })
                }

                fn checksum(&self, conn: &mut DbConnection) -> QueryResult<Checksum> {
                    let mut hash = Sha256::new();
                    let rows = walk(conn, |rows, _| {
                        for r in rows {
                            $(Canonical::feed(&r.$col, &mut hash);)+
                        }
                        Ok(())
                    })?;
                    Ok(Checksum {
                        rows,
                        sha256: hex::encode(hash.finalize()),
                    })
                }
            }
        };
    };
}

table!(Notes = notes::schema::notes, key id: BigInt, serial Some("id"), {
    id: i64, title: String, body: String, owner_id: Option<i64>,
});
table!(Tags = notes::schema::tags, key id: BigInt, serial Some("id"), {
    id: i64, name: String, owner_id: Option<i64>,
});
table!(Comments = notes::schema::comments, key id: BigInt, serial Some("id"), {
    id: i64, note_id: i64, body: String, owner_id: Option<i64>,
});
table!(Articles = articles::schema::articles, key id: BigInt, serial Some("id"), {
    id: i64, title: String, author: String, category: Option<String>, created_at: String,
    owner_id: Option<i64>,
});
table!(VersionedNotes = versioned_notes::schema::versioned_notes, key id: BigInt,
    serial Some("id"), {
    id: i64, title: String, body: String, tags: String, created_at: String, updated_at: String,
    owner_id: Option<i64>,
});
table!(V1Usage = versioned_notes::schema::v1_usage, key caller: Text, serial None, {
    caller: String, calls: i64, first_seen: String, last_seen: String,
});
table!(Users = tokens::schema::users, key id: BigInt, serial Some("id"), {
    id: i64, name: String, created_at: String,
});
table!(Tokens = tokens::schema::tokens, key id: BigInt, serial Some("id"), {
    id: i64, user_id: i64, token_hash: String, scope: String, label: String,
    created_at: String, revoked_at: Option<String>, expires_at: Option<String>,
    last_used_at: Option<String>,
});
table!(Accounts = ledger::schema::accounts, key account_id: Text, serial None, {
    account_id: String, owner: String, balance_cents: i64, is_open: bool,
    last_sequence: i64, updated_at: String, owner_id: Option<i64>,
});
table!(AccountEvents = ledger::schema::account_events, key id: BigInt, serial Some("id"), {
    id: i64, aggregate_id: String, aggregate_type: String, event_type: String,
    payload: String, sequence: i64, occurred_at: String,
});
table!(IdempotencyKeys = idempotency::schema::idempotency_keys, key id: BigInt,
    serial Some("id"), {
    id: i64, caller: String, idempotency_key: String, fingerprint: String, status: i64,
    location: Option<String>, body: String, created_at: String,
});
table!(WebhookEvents = webhooks::schema::webhook_events, key id: BigInt, serial Some("id"), {
    id: i64, event_type: String, payload: String, delivered_at: String,
    signature_t: String, signature_v1: String,
});
table!(WebhookEndpoints = outbound_webhooks::schema::webhook_endpoints, key id: BigInt,
    serial Some("id"), {
    id: i64, owner_id: Option<i64>, url: String, event_types: String, enabled: bool,
    secret_version: i64, secret_salt: String, previous_secret_until: i64, created_at: String, updated_at: String,
    cursor_id: i64, failed_attempts: i64, next_attempt_at: i64, lease_owner: String,
    lease_until: i64,
});
table!(WebhookDeliveries = outbound_webhooks::schema::webhook_deliveries, key id: BigInt,
    serial Some("id"), {
    id: i64, endpoint_id: i64, message_id: String, event_id: i64, attempt: i64,
    outcome: String, response_status: Option<i64>, latency_ms: i64, error: Option<String>,
    next_attempt_at: Option<i64>, attempted_at: String, manual: bool,
});
table!(AuditLog = audit::schema::audit_log, key id: BigInt, serial Some("id"), {
    id: i64, at: String, actor: String, user_id: Option<i64>, token_id: Option<i64>,
    method: String, route: String, resource: String,
});

/// Every table of the service, parents before children (comments after notes, tokens after
/// users, account events after accounts). `__diesel_schema_migrations` is not here: the target
/// gets its own from running the migrations.
pub(crate) static TABLES: [&dyn Table; 15] = [
    &Notes,
    &Tags,
    &Comments,
    &Articles,
    &VersionedNotes,
    &V1Usage,
    &Users,
    &Tokens,
    &Accounts,
    &AccountEvents,
    &IdempotencyKeys,
    &WebhookEvents,
    &WebhookEndpoints,
    &WebhookDeliveries,
    &AuditLog,
];

/// Tables the copy leaves out because the target derives them: `row_counts` is kept by the
/// target's own triggers as the copy inserts rows (the verification audits it).
pub const DERIVED_TABLES: [&str; 1] = ["row_counts"];

/// Columns the copy leaves out because the target sets them as it inserts: on PostgreSQL an
/// event's `tx` is the transaction that wrote it (the global feed's commit order,
/// `ledger::repo::feed_after`), so a copied event belongs to the copy's transaction; SQLite
/// has no such column.
///
/// An endpoint's place in that feed (`cursor_tx`) follows: [`fill_derived`] sets it from the
/// target's own event at `cursor_id` (the same event, already delivered).
pub const DERIVED_COLUMNS: [(&str, &str); 2] =
    [("account_events", "tx"), ("webhook_endpoints", "cursor_tx")];

/// Sets the [`DERIVED_COLUMNS`] the target does not set by itself, after the copy.
pub(crate) fn fill_derived(conn: &mut DbConnection) -> QueryResult<()> {
    if conn.backend() == Backend::Postgres {
        diesel::sql_query(
            "UPDATE webhook_endpoints SET cursor_tx = COALESCE((SELECT a.tx FROM account_events a \
             WHERE a.id = webhook_endpoints.cursor_id), 0)",
        )
        .execute(conn)?;
    }
    Ok(())
}

/// Every table the copy covers, in the order it copies them, with the columns it copies.
pub fn tables() -> impl Iterator<Item = (&'static str, &'static [&'static str])> {
    TABLES.iter().map(|t| (t.name(), t.columns()))
}
