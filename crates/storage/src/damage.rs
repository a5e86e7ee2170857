//! Damage to what is stored, once found, is remembered for the life of the process: the
//! instance turns not ready ([`crate::Store::check`]) and says why once, in an error line.
//! Damage found in the WAL before SQLite opened it also refuses every write, across restarts
//! (a marker file beside the database), until an operator restores a backup or accepts the
//! loss (`Database::accept_wal_loss`).

use std::path::Path;
use std::sync::{Arc, Weak};
use std::time::Duration;

use diesel::RunQueryDsl;
use parking_lot::Mutex;

use crate::wal;
use crate::{Database, StorageError};

/// What was found damaged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    pub detail: String,
    /// Writes are refused (a WAL that lost committed transactions): a new write would make
    /// SQLite rewrite the WAL and bury the evidence.
    pub refuses_writes: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Found(Mutex<Option<Damage>>);

impl Found {
    pub fn get(&self) -> Option<Damage> {
        self.0.lock().clone()
    }

    /// Records `damage` unless some is recorded already; the first one is logged.
    pub fn record(&self, damage: Damage) {
        let mut found = self.0.lock();
        if found.is_none() {
            log::error!("storage damaged: {}", damage.detail);
            *found = Some(damage);
        }
    }
}

/// Before SQLite opens the file: whether its WAL lost committed transactions now or at an
/// earlier start (the marker). A new loss has its WAL copied aside and the marker written
/// first. With `accept_wal_loss` the marker is removed and the start goes on, with a warning.
pub(crate) fn on_open(database: &Database) -> Result<Option<Damage>, StorageError> {
    let Some(db) = database.sqlite_path() else {
        return Ok(None);
    };
    let marker = wal::marker_path(db);
    let detail = match wal::inspect(db).map_err(StorageError::Io)? {
        Some(loss) => Some(record_loss(db, &loss)?),
        None => std::fs::read_to_string(&marker).ok(),
    };
    let Some(detail) = detail else {
        return Ok(None);
    };
    if database.accept_wal_loss {
        log::warn!("accepted by ACCEPT_WAL_LOSS: {detail}");
        std::fs::remove_file(&marker).map_err(StorageError::Io)?;
        return Ok(None);
    }
    Ok(Some(Damage {
        detail: format!(
            "{detail}; writes are refused until an operator restores a backup (server restore) \
             or accepts the loss (ACCEPT_WAL_LOSS=true)"
        ),
        refuses_writes: true,
    }))
}

/// Copies the damaged WAL aside and leaves the marker; the detail for the log.
fn record_loss(db: &Path, loss: &wal::Loss) -> Result<String, StorageError> {
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut copy = wal::wal_path(db).into_os_string();
    copy.push(format!(".damaged-{unix}"));
    std::fs::copy(wal::wal_path(db), &copy).map_err(StorageError::Io)?;
    let detail = format!(
        "the WAL of {} holds {loss}, which SQLite's recovery drops; the WAL was copied to {}",
        db.display(),
        Path::new(&copy).display()
    );
    let marker = wal::marker_path(db);
    std::fs::write(&marker, &detail)
        .and_then(|()| std::fs::File::open(&marker)?.sync_all())
        .map_err(StorageError::Io)?;
    Ok(detail)
}

/// Runs `PRAGMA quick_check` on its own connection every `every` (the first after one period);
/// anything but `ok`, or an error that is damage, is recorded in `found`. The thread stops
/// when the returned sender is dropped (with its store).
pub(crate) fn start_quick_check(
    database: Database,
    every: Duration,
    found: Weak<Found>,
) -> std::sync::mpsc::Sender<()> {
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let _ = std::thread::Builder::new()
        .name("sqlite-quick-check".into())
        .spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every)
            {
                let (Some(found), Some(detail)) = (found.upgrade(), quick_check(&database)) else {
                    continue;
                };
                found.record(Damage {
                    detail,
                    refuses_writes: false,
                });
            }
        });
    stop
}

#[derive(diesel::QueryableByName)]
struct Check {
    #[diesel(sql_type = diesel::sql_types::Text)]
    quick_check: String,
}

/// `PRAGMA quick_check(5)` on a fresh connection: `None` when it says `ok` (or cannot run for
/// a reason that is not damage, such as a locked or missing file, which other checks report).
pub(crate) fn quick_check(database: &Database) -> Option<String> {
    let mut conn = database.establish().ok()?;
    match diesel::sql_query("PRAGMA quick_check(5)").load::<Check>(&mut conn) {
        Ok(rows) if rows.iter().all(|r| r.quick_check == "ok") => None,
        Ok(rows) => Some(format!(
            "PRAGMA quick_check of {}: {}",
            database.describe(),
            rows.into_iter()
                .map(|r| r.quick_check)
                .collect::<Vec<_>>()
                .join("; ")
        )),
        Err(e) if crate::Fault::of(&e) == Some(crate::Fault::Damaged) => Some(format!(
            "PRAGMA quick_check of {}: {e}",
            database.describe()
        )),
        Err(_) => None,
    }
}

/// Shared by the store and its checker thread.
pub(crate) type SharedFound = Arc<Found>;
