//! Online backups of a SQLite database, and their restore.
//!
//! A running server's file cannot be copied by hand: the newest writes may sit in the WAL, and
//! a copy taken while a checkpoint runs mixes two states. [`backup`] uses `VACUUM INTO`, which
//! reads one snapshot (a read transaction: writers carry on) into a new file. The copy is
//! written beside the destination, made one self-contained file (rollback journal mode),
//! fsynced, verified ([`inspect`]: `PRAGMA integrity_check`, every table's rows and checksum,
//! the kept counts against the rows, every account's projection against its replay), and only
//! then renamed to the destination; a copy that fails verification is removed.
//!
//! [`restore`] verifies the backup the same way, refuses while any process has the database
//! open (SQLite's own locks tell: a WAL connection holds a shared lock for as long as it is
//! open, so an exclusive one cannot be had), and swaps the files under that exclusive lock. The
//! database it replaces is kept beside it (`<name>.before-restore-<unix time>`), never deleted.
//!
//! PostgreSQL has its own tools (`pg_dump`, pgBackRest); docs/RELIABILITY.md says how.

use std::fmt;
use std::path::{Path, PathBuf};

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::Text;
use storage::DbConnection;

use crate::Error;
use crate::tables::TABLES;
use crate::verify::Side;

/// What a database file holds, and whether it is whole.
#[derive(Debug, Clone)]
pub struct FileReport {
    pub path: PathBuf,
    pub bytes: u64,
    /// `PRAGMA integrity_check`'s answer: `ok`, or its first complaints.
    pub integrity: Vec<String>,
    pub tables: Vec<(&'static str, Side)>,
    pub ledger: ledger::check::Report,
    pub count_drift: Vec<storage::counts::Drift>,
}

impl FileReport {
    pub fn is_ok(&self) -> bool {
        self.integrity == ["ok"]
            && self.ledger.is_consistent()
            && self.count_drift.is_empty()
            && self
                .tables
                .iter()
                .all(|(_, side)| u64::try_from(side.rows).ok() == Some(side.checksum.rows))
    }
}

impl fmt::Display for FileReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} ({} bytes)", self.path.display(), self.bytes)?;
        writeln!(f, "integrity_check: {}", self.integrity.join("; "))?;
        writeln!(f, "{:<26} {:>10}  sha-256", "table", "rows")?;
        for (table, side) in &self.tables {
            let shown = &side.checksum.sha256[..16.min(side.checksum.sha256.len())];
            writeln!(f, "{table:<26} {:>10}  {shown}", side.rows)?;
        }
        crate::verify::findings(f, &self.count_drift, &self.ledger)?;
        let verdict = if self.ledger.is_consistent() {
            "consistent"
        } else {
            "INCONSISTENT"
        };
        writeln!(
            f,
            "ledger: {} accounts and {} events replayed: {verdict}",
            self.ledger.accounts, self.ledger.events
        )
    }
}

/// Takes a consistent copy of the SQLite database at `source` (a `sqlite://` URL) into `to`,
/// which must not exist; verified before it is given that name.
pub fn backup(source: &str, to: &Path) -> Result<FileReport, Error> {
    let path = sqlite_path(source)?;
    if !path.exists() {
        return Err(Error::SourceMissing {
            path: path.display().to_string(),
        });
    }
    if to.exists() {
        return Err(Error::DestinationExists(to.to_path_buf()));
    }
    let partial = sibling(to, ".partial");
    let _ = std::fs::remove_file(&partial);
    let outcome = (|| {
        let mut conn = open(&path, false)?;
        diesel::sql_query("VACUUM INTO ?")
            .bind::<Text, _>(partial.display().to_string())
            .execute(&mut conn)?;
        drop(conn);
        // One self-contained file, whatever the source's journal mode.
        open(&partial, false)?.batch_execute("PRAGMA journal_mode=DELETE")?;
        sync_file(&partial)?;
        let report = inspect(&partial)?;
        if !report.is_ok() {
            return Err(Error::Damaged(Box::new(report)));
        }
        std::fs::rename(&partial, to).map_err(Error::Io)?;
        sync_dir(to)?;
        Ok(FileReport {
            path: to.to_path_buf(),
            ..report
        })
    })();
    if outcome.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    outcome
}

/// What [`restore`] did.
#[derive(Debug, Clone)]
pub struct Restored {
    pub report: FileReport,
    /// Where the database it replaced was kept (`None`: there was none).
    pub previous: Option<PathBuf>,
}

/// Replaces the SQLite database at `target` (a `sqlite://` URL) with the backup `from`, after
/// verifying the backup; refused while any process has the database open.
pub fn restore(from: &Path, target: &str) -> Result<Restored, Error> {
    let path = sqlite_path(target)?;
    if !from.exists() {
        return Err(Error::SourceMissing {
            path: from.display().to_string(),
        });
    }
    let incoming = sibling(&path, ".restoring");
    let _ = std::fs::remove_file(&incoming);
    let outcome = (|| {
        std::fs::copy(from, &incoming).map_err(Error::Io)?;
        sync_file(&incoming)?;
        let report = inspect(&incoming)?;
        if !report.is_ok() {
            return Err(Error::Damaged(Box::new(report)));
        }
        let unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let kept = sibling(&path, &format!(".before-restore-{unix}"));
        // The WAL as it is, before SQLite's recovery (which may drop a damaged tail) runs.
        let wal = storage::wal::wal_path(&path);
        if wal.exists() {
            std::fs::copy(&wal, sibling(&kept, "-wal")).map_err(Error::Io)?;
        }
        // Held until the new file has the name: nobody opens the old one meanwhile.
        let held = if path.exists() {
            let held = hold_exclusively(&path);
            if held.is_err() {
                let _ = std::fs::remove_file(sibling(&kept, "-wal"));
            }
            Some(held?)
        } else {
            None
        };
        let previous = match held {
            Some(_) => {
                std::fs::rename(&path, &kept).map_err(Error::Io)?;
                Some(kept)
            }
            None => None,
        };
        // A shared-memory index left by earlier connections describes the old file, and a
        // damage marker the old data (storage::wal).
        let _ = std::fs::remove_file(sibling(&path, "-shm"));
        let _ = std::fs::remove_file(storage::wal::marker_path(&path));
        std::fs::rename(&incoming, &path).map_err(Error::Io)?;
        sync_dir(&path)?;
        drop(held);
        Ok(Restored {
            report: FileReport {
                path: path.clone(),
                ..report
            },
            previous,
        })
    })();
    if outcome.is_err() {
        let _ = std::fs::remove_file(&incoming);
    }
    outcome
}

/// Verifies the database file at `path` without changing it (read only).
pub fn inspect(path: &Path) -> Result<FileReport, Error> {
    let mut conn = open(path, true)?;
    let integrity: Vec<String> = diesel::sql_query("PRAGMA integrity_check(10)")
        .load::<Integrity>(&mut conn)?
        .into_iter()
        .map(|row| row.integrity_check)
        .collect();
    let mut tables = Vec::with_capacity(TABLES.len());
    if integrity == ["ok"] {
        for table in TABLES {
            tables.push((
                table.name(),
                Side {
                    rows: table.count(&mut conn)?,
                    checksum: table.checksum(&mut conn)?,
                },
            ));
        }
    }
    let ledger = ledger::check::check_all(&mut conn).map_err(Error::Ledger)?;
    let count_drift = storage::counts::audit(&mut conn)?;
    let bytes = std::fs::metadata(path).map_err(Error::Io)?.len();
    Ok(FileReport {
        path: path.to_path_buf(),
        bytes,
        integrity,
        tables,
        ledger,
        count_drift,
    })
}

#[derive(QueryableByName)]
struct Integrity {
    #[diesel(sql_type = Text)]
    integrity_check: String,
}

fn sqlite_path(url: &str) -> Result<PathBuf, Error> {
    let database = storage::Database::parse(url).map_err(|source| Error::Connect {
        role: "backup",
        source,
    })?;
    match database.sqlite_path() {
        Some(path) => Ok(path.to_path_buf()),
        None => Err(Error::NotSqlite),
    }
}

/// A plain connection to a database file: none of the server's settings, which would put a
/// copy into WAL mode; `read_only` opens it so.
fn open(path: &Path, read_only: bool) -> Result<DbConnection, Error> {
    let mode = if read_only { "?mode=ro" } else { "" };
    // A URI filename, so that `mode` applies: the characters URIs give a meaning escaped.
    let escaped = path
        .display()
        .to_string()
        .replace('%', "%25")
        .replace('?', "%3f")
        .replace('#', "%23");
    let uri = format!("file:{escaped}{mode}");
    let mut conn = diesel::SqliteConnection::establish(&uri).map_err(|e| Error::Open {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    conn.batch_execute("PRAGMA busy_timeout = 5000")?;
    Ok(DbConnection::Sqlite(conn))
}

/// An exclusive lock on the database at `path`, or [`Error::InUse`] when another connection
/// (a running server, a tool) has it open. The WAL is folded into the file first and the file
/// left in rollback journal mode, so closing this connection later removes nothing by name.
fn hold_exclusively(path: &Path) -> Result<DbConnection, Error> {
    let mut conn = open(path, false)?;
    conn.batch_execute("PRAGMA busy_timeout = 0; PRAGMA locking_mode = EXCLUSIVE")?;
    let begun = conn.batch_execute("BEGIN EXCLUSIVE; COMMIT");
    if begun.is_err() {
        return Err(Error::InUse(path.to_path_buf()));
    }
    conn.batch_execute("PRAGMA journal_mode = DELETE")?;
    Ok(conn)
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn sync_file(path: &Path) -> Result<(), Error> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(Error::Io)
}

/// Makes a rename in `path`'s directory durable.
fn sync_dir(path: &Path) -> Result<(), Error> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    sync_file(dir)
}
