//! What went wrong with the database, as far as the caller needs to know: whether the request
//! may be retried, whether the connection may be reused, and what to tell the client. Domain
//! crates keep wrapping `diesel::result::Error` in their `Storage` variant; [`Fault::find`]
//! digs it out of any error's source chain, so one classification serves every crate.

use std::fmt;

use crate::observe::Conflict;
use diesel::result::{DatabaseErrorKind as Kind, Error as DieselError};

/// `err` and every error below it in its source chain, outermost first.
pub fn sources<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(err), |e| e.source())
}

/// A storage failure a client can be told about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// The disk (or SQLite's `max_page_count`, or PostgreSQL's tablespace) is full.
    Full,
    /// The database refuses writes: a read-only file or directory, an immutable file, a
    /// read-only PostgreSQL transaction (a standby).
    ReadOnly,
    /// The operating system failed a read or write of the database files.
    Io,
    /// The database files at the configured path are no longer the ones this process has open
    /// (replaced or deleted under it).
    Replaced,
    /// Another writer holds the lock (SQLite busy, PostgreSQL lock timeout or deadlock) or the
    /// transaction could not be serialized: nothing was written, retrying may succeed.
    Busy,
    /// A statement ran past the statement timeout, or a queue wait ran past its bound.
    Timeout,
    /// The database cannot be reached: no connection within the checkout timeout, or the
    /// connection was lost.
    Unavailable,
    /// The stored data is damaged: a page fails SQLite's check ("malformed"), a stored value
    /// does not decode, or the WAL lost committed frames. Needs an operator.
    Damaged,
}

impl Fault {
    pub const ALL: [Fault; 8] = [
        Fault::Full,
        Fault::ReadOnly,
        Fault::Io,
        Fault::Replaced,
        Fault::Busy,
        Fault::Timeout,
        Fault::Unavailable,
        Fault::Damaged,
    ];

    /// The fault behind `err`, if it is one (constraint violations, "not found" and the like are
    /// not faults: they are the domain's business).
    pub fn of(err: &DieselError) -> Option<Fault> {
        match err {
            DieselError::DatabaseError(kind, info) => match kind {
                Kind::SerializationFailure => Some(Fault::Busy),
                Kind::ReadOnlyTransaction => Some(Fault::ReadOnly),
                Kind::ClosedConnection | Kind::UnableToSendCommand => Some(Fault::Unavailable),
                _ => from_message(info.message()),
            },
            DieselError::RollbackErrorOnCommit { commit_error, .. } => {
                Some(Fault::of(commit_error).unwrap_or(Fault::Unavailable))
            }
            DieselError::BrokenTransactionManager => Some(Fault::Unavailable),
            // A stored value that does not decode as its column's type.
            DieselError::DeserializationError(_) => Some(Fault::Damaged),
            _ => None,
        }
    }

    /// The first fault in `err`'s source chain (`err` itself included).
    pub fn find(err: &(dyn std::error::Error + 'static)) -> Option<Fault> {
        sources(err).find_map(|e| match e.downcast_ref::<DieselError>() {
            Some(d) => Fault::of(d),
            None => e.downcast_ref::<StoreError>().map(|s| s.fault),
        })
    }

    /// Whether `err` (or an error in its source chain) is PostgreSQL ending a statement to
    /// break a deadlock or a serialization conflict: its transaction (or savepoint) did nothing,
    /// and running the same work again may succeed. A lock timeout is not one: that work has
    /// already waited as long as it may.
    pub fn is_conflict(err: &(dyn std::error::Error + 'static)) -> bool {
        Fault::conflict(err).is_some()
    }

    /// Which conflict [`Fault::is_conflict`] found (never `LockWait`: a lock timeout is not
    /// one by itself).
    pub fn conflict(err: &(dyn std::error::Error + 'static)) -> Option<Conflict> {
        sources(err).find_map(|e| match e.downcast_ref::<DieselError>() {
            Some(DieselError::DatabaseError(Kind::SerializationFailure, _)) => {
                Some(Conflict::Serialization)
            }
            Some(DieselError::DatabaseError(_, info)) => {
                let m = info.message().to_ascii_lowercase();
                if m.contains("deadlock detected") {
                    Some(Conflict::Deadlock)
                } else if m.contains("could not serialize") {
                    Some(Conflict::Serialization)
                } else {
                    None
                }
            }
            _ => None,
        })
    }

    /// The connection that reported this fault must not serve another request: a SQLite
    /// connection opened while the file was read-only stays read-only, one that saw an I/O error
    /// may hold a stale view of replaced files, a PostgreSQL connection that was cut is dead.
    pub fn discards_connection(self) -> bool {
        matches!(
            self,
            Fault::ReadOnly | Fault::Io | Fault::Replaced | Fault::Unavailable
        )
    }

    /// Seconds a client should wait before retrying (the `Retry-After` of the answer).
    pub fn retry_after_secs(self) -> u32 {
        match self {
            Fault::Busy | Fault::Timeout | Fault::Unavailable => 1,
            Fault::ReadOnly | Fault::Io | Fault::Replaced => 5,
            Fault::Full => 30,
            Fault::Damaged => 60,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Fault::Full => "full",
            Fault::ReadOnly => "read-only",
            Fault::Io => "i/o error",
            Fault::Replaced => "replaced",
            Fault::Busy => "busy",
            Fault::Timeout => "timeout",
            Fault::Unavailable => "unavailable",
            Fault::Damaged => "damaged",
        }
    }

    pub(crate) fn code(self) -> u8 {
        match self {
            Fault::Full => 1,
            Fault::ReadOnly => 2,
            Fault::Io => 3,
            Fault::Replaced => 4,
            Fault::Busy => 5,
            Fault::Timeout => 6,
            Fault::Unavailable => 7,
            Fault::Damaged => 8,
        }
    }

    pub(crate) fn from_code(code: u8) -> Option<Fault> {
        Fault::ALL.into_iter().find(|f| f.code() == code)
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// SQLite reports its result codes only as messages through Diesel (`sqlite3_errmsg`), and
/// PostgreSQL's SQLSTATEs outside a handful of classes arrive the same way.
fn from_message(message: &str) -> Option<Fault> {
    let m = message.to_ascii_lowercase();
    let has = |s: &str| m.contains(s);
    if has("database or disk is full") || has("no space left on device") || has("disk full") {
        Some(Fault::Full)
    } else if has("readonly database")
        || has("read-only")
        || has("read only")
        || has("permission denied")
        || has("operation not permitted")
    {
        Some(Fault::ReadOnly)
    } else if has("malformed") || has("file is not a database") || has("database corrupt") {
        Some(Fault::Damaged)
    } else if has("disk i/o error") || has("unable to open database file") {
        Some(Fault::Io)
    } else if has("database is locked")
        || has("database table is locked")
        || has("database is busy")
        || has("deadlock detected")
        || has("could not serialize")
        || has("lock timeout")
    {
        Some(Fault::Busy)
    } else if has("statement timeout") || has("canceling statement") {
        Some(Fault::Timeout)
    } else if has("terminating connection")
        || has("server closed the connection")
        || has("connection to server")
        || has("no connection to the server")
        || has("the database system is")
        || has("could not connect")
    {
        Some(Fault::Unavailable)
    } else {
        None
    }
}

/// A failure of the storage layer itself (not of the operation it ran): no connection, no
/// lock, a failed `BEGIN` or `COMMIT`, replaced files. `detail` is for the log, never for the
/// client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("storage {fault}: {detail}")]
pub struct StoreError {
    pub fault: Fault,
    pub detail: String,
}

impl StoreError {
    pub fn new(fault: Fault, detail: impl Into<String>) -> Self {
        StoreError {
            fault,
            detail: detail.into(),
        }
    }

    /// A Diesel error met by the storage layer; one that is not a known fault counts as an I/O
    /// failure (the database answered something this layer cannot use).
    pub fn from_diesel(err: &DieselError) -> Self {
        StoreError::new(Fault::of(err).unwrap_or(Fault::Io), err.to_string())
    }
}

/// The outcome of running an operation through the [`crate::Store`]: the operation's own error,
/// or a storage failure around it.
#[derive(Debug)]
pub enum Failure<E> {
    Op(E),
    Store(StoreError),
}

impl<E> From<StoreError> for Failure<E> {
    fn from(e: StoreError) -> Self {
        Failure::Store(e)
    }
}

/// A database error as the driver reports one (`kind`, `message`), for tests of how errors
/// are classified, here and in the crates that retry on them.
#[cfg(any(test, feature = "testing"))]
pub fn database_error(kind: Kind, message: &'static str) -> DieselError {
    struct Info(&'static str);
    impl diesel::result::DatabaseErrorInformation for Info {
        fn message(&self) -> &str {
            self.0
        }
        fn details(&self) -> Option<&str> {
            None
        }
        fn hint(&self) -> Option<&str> {
            None
        }
        fn table_name(&self) -> Option<&str> {
            None
        }
        fn column_name(&self) -> Option<&str> {
            None
        }
        fn constraint_name(&self) -> Option<&str> {
            None
        }
        fn statement_position(&self) -> Option<i32> {
            None
        }
    }
    DieselError::DatabaseError(kind, Box::new(Info(message)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(kind: Kind, message: &'static str) -> DieselError {
        database_error(kind, message)
    }

    #[test]
    fn classifies_what_sqlite_and_postgres_report() {
        let cases = [
            ("database or disk is full", Some(Fault::Full)),
            (
                "could not extend file \"base/1/2\": No space left on device",
                Some(Fault::Full),
            ),
            (
                "attempt to write a readonly database",
                Some(Fault::ReadOnly),
            ),
            ("disk I/O error", Some(Fault::Io)),
            ("database is locked", Some(Fault::Busy)),
            ("canceling statement due to lock timeout", Some(Fault::Busy)),
            (
                "canceling statement due to statement timeout",
                Some(Fault::Timeout),
            ),
            (
                "terminating connection due to administrator command",
                Some(Fault::Unavailable),
            ),
            ("UNIQUE constraint failed: tags.name", None),
        ];
        for (message, want) in cases {
            assert_eq!(Fault::of(&db(Kind::Unknown, message)), want, "{message}");
        }
        assert_eq!(
            Fault::of(&db(Kind::SerializationFailure, "x")),
            Some(Fault::Busy)
        );
        assert_eq!(
            Fault::of(&db(Kind::ClosedConnection, "x")),
            Some(Fault::Unavailable)
        );
        assert_eq!(
            Fault::of(&db(Kind::UniqueViolation, "database is locked")),
            Some(Fault::Busy),
            "the message decides for kinds that do not"
        );
        assert_eq!(Fault::of(&DieselError::NotFound), None);
    }

    #[test]
    fn a_deadlock_or_serialization_failure_is_a_conflict_a_lock_timeout_is_not() {
        let conflict = |e: DieselError| Fault::is_conflict(&Domain::from(e));
        assert!(conflict(db(Kind::Unknown, "deadlock detected")));
        assert!(conflict(db(Kind::SerializationFailure, "x")));
        assert!(conflict(db(
            Kind::Unknown,
            "could not serialize access due to concurrent update"
        )));
        assert!(!conflict(db(
            Kind::Unknown,
            "canceling statement due to lock timeout"
        )));
        assert!(!conflict(db(Kind::UniqueViolation, "duplicate key value")));
        assert!(!conflict(DieselError::NotFound));
        let cause = |e: DieselError| Fault::conflict(&Domain::from(e));
        assert_eq!(
            cause(db(Kind::Unknown, "deadlock detected")),
            Some(Conflict::Deadlock)
        );
        assert_eq!(
            cause(db(Kind::SerializationFailure, "x")),
            Some(Conflict::Serialization)
        );
        assert_eq!(
            cause(db(Kind::Unknown, "canceling statement due to lock timeout")),
            None
        );
    }

    #[derive(Debug, thiserror::Error)]
    enum Domain {
        #[error("storage failure")]
        Storage(#[from] DieselError),
    }

    #[test]
    fn finds_the_fault_inside_a_domain_error() {
        let err = Domain::from(db(Kind::Unknown, "database or disk is full"));
        assert_eq!(Fault::find(&err), Some(Fault::Full));
        let err = Domain::from(DieselError::NotFound);
        assert_eq!(Fault::find(&err), None);
    }

    #[test]
    fn codes_round_trip() {
        for f in Fault::ALL {
            assert_eq!(Fault::from_code(f.code()), Some(f));
        }
        assert_eq!(Fault::from_code(0), None);
    }
}
