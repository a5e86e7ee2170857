use crate::Report;

/// Why a migration did not happen. Whatever the variant, the target was left as it was: every
/// write happens in one transaction that is rolled back on any error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the source and the target are the same database")]
    SameDatabase,
    #[error("the source database {path} does not exist")]
    SourceMissing { path: String },
    #[error("cannot open the {role} database")]
    Connect {
        role: &'static str,
        #[source]
        source: storage::StorageError,
    },
    #[error("the source is not a database of this service (it has no migration table)")]
    SourceNotMigrated(#[source] diesel::result::Error),
    #[error(
        "the source and the target schemas differ (source lacks migrations {missing_in_source:?}, \
         target lacks {missing_in_target:?}): run `server migrate` against the source first"
    )]
    SchemaMismatch {
        missing_in_source: Vec<String>,
        missing_in_target: Vec<String>,
    },
    #[error("cannot migrate the target")]
    Migrations(#[source] storage::MigrationError),
    #[error("the target already holds data ({rows} rows in {table}); nothing was written")]
    TargetNotEmpty { table: &'static str, rows: i64 },
    #[error("the copy does not match its source; nothing was written")]
    Unverified(Box<Report>),
    #[error("replaying the ledger failed")]
    Ledger(#[source] ledger::Error),
    #[error("database error")]
    Storage(#[from] diesel::result::Error),
    #[error("{0} exists; a backup never overwrites a file")]
    DestinationExists(std::path::PathBuf),
    #[error(
        "backup and restore work on SQLite files; for PostgreSQL use pg_dump and pg_restore (docs/RELIABILITY.md)"
    )]
    NotSqlite,
    #[error("cannot open {path}: {reason}")]
    Open {
        path: std::path::PathBuf,
        reason: String,
    },
    #[error(
        "{0} is in use (a server or another tool has it open): stop every process that uses it, \
         then restore"
    )]
    InUse(std::path::PathBuf),
    #[error("the copy failed verification; nothing was kept\n{0}")]
    Damaged(Box<crate::backup::FileReport>),
    #[error("file system")]
    Io(#[source] std::io::Error),
}
