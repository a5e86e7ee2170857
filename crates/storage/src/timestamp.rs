//! Timestamps are stored as UTC text that sorts chronologically on both backends.

use chrono::{SecondsFormat, Utc};
use diesel::QueryResult;
use diesel::prelude::*;
use diesel::sql_types::BigInt;

use crate::DbConnection;

/// RFC 3339, UTC, second precision: `2026-11-23T02:41:19Z`.
pub fn now_rfc3339() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// [`now_rfc3339`]'s form, `ago` before now: the cut-off of what is kept for `ago`.
pub fn rfc3339_ago(ago: std::time::Duration) -> String {
    let ago = chrono::Duration::from_std(ago).unwrap_or(chrono::Duration::MAX);
    Utc::now()
        .checked_sub_signed(ago)
        .unwrap_or(chrono::DateTime::<Utc>::MIN_UTC)
        .to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The ledger's form `YYYY-MM-DD HH:MM:SS` (UTC).
pub fn now_sql() -> String {
    Utc::now().format("%Y-%m-%d %H:%M:%S").to_string()
}

/// Now in Unix milliseconds by the database's clock: the one clock that every process using the
/// database shares, for times that one process writes and another compares (a lease's end, a
/// retry's due time). On PostgreSQL the server's `clock_timestamp()`, so that instances on
/// machines whose clocks disagree still agree on whether a lease has run out; SQLite runs in
/// the process, and every process on one file runs on one machine (WAL needs shared memory), so
/// its clock is this machine's.
pub fn database_ms(conn: &mut DbConnection) -> QueryResult<i64> {
    match conn {
        DbConnection::Postgresql(c) => diesel::select(diesel::dsl::sql::<BigInt>(
            "CAST(FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS BIGINT)",
        ))
        .get_result(c),
        DbConnection::Sqlite(_) => Ok(local_ms()),
    }
}

/// Now in Unix milliseconds by this machine's clock.
pub fn local_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let a = now_rfc3339();
        assert_eq!(a.len(), 20);
        assert!(a.ends_with('Z'));
        assert_eq!(&a[10..11], "T");
        let b = now_sql();
        assert_eq!(b.len(), 19);
        assert_eq!(&b[10..11], " ");
        let day = rfc3339_ago(std::time::Duration::from_secs(86_400));
        assert_eq!(day.len(), 20);
        assert!(day < now_rfc3339());
    }
}
