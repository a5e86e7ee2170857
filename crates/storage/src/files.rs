//! The SQLite files under the configured path, watched so that writes are never acknowledged
//! into a file nobody will read again. A careless restore (`mv backup.db service.db`) or a
//! deleted WAL leaves this process writing to unlinked inodes while a new process (or the next
//! start) sees other files: every write then looks fine and is lost. [`Files::intact`] compares
//! what is at the path with what this process opened, in two `stat` calls.

use std::path::{Path, PathBuf};

use crate::fault::{Fault, StoreError};

/// Below this many free bytes on the database's file system, SQLite cannot be trusted to finish
/// a write (a commit needs its WAL frames and, at checkpoint, room in the database file).
pub const MIN_FREE_BYTES: u64 = 256 * 1024;

/// Identity of a file: device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
}

fn identity(path: &Path) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| Identity {
        dev: m.dev(),
        ino: m.ino(),
    })
}

#[derive(Debug)]
pub struct Files {
    db: PathBuf,
    wal: PathBuf,
    opened: Identity,
    /// The WAL this process's connections use. A sentinel connection stays open for the life of
    /// the store, so SQLite never deletes and recreates it on its own (it removes the WAL only
    /// when the last connection closes).
    wal_opened: Option<Identity>,
}

impl Files {
    /// Records the files now at `db` (call once a connection has opened them in WAL mode).
    pub fn record(db: &Path) -> Option<Files> {
        let wal = wal_path(db);
        Some(Files {
            opened: identity(db)?,
            wal_opened: identity(&wal),
            db: db.to_owned(),
            wal,
        })
    }

    /// The files at the path are still the ones this process has open.
    pub fn intact(&self) -> Result<(), StoreError> {
        match identity(&self.db) {
            Some(id) if id == self.opened => {}
            Some(_) => return Err(replaced(&self.db, "replaced")),
            None => return Err(replaced(&self.db, "deleted")),
        }
        if let Some(opened) = self.wal_opened {
            match identity(&self.wal) {
                Some(id) if id == opened => {}
                Some(_) => return Err(replaced(&self.wal, "replaced")),
                None => return Err(replaced(&self.wal, "deleted")),
            }
        }
        Ok(())
    }

    /// Whether a write could succeed now, without writing: the files and their directory are
    /// writable (not read-only, not immutable) and the file system has room.
    pub fn writable(&self) -> Result<(), StoreError> {
        let dir = self
            .db
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        for path in [self.db.as_path(), self.wal.as_path(), dir] {
            if path.exists() && !can_write(path) {
                return Err(StoreError::new(
                    Fault::ReadOnly,
                    format!("{} is not writable", path.display()),
                ));
            }
        }
        match free_bytes(dir) {
            Some(free) if free < MIN_FREE_BYTES => Err(StoreError::new(
                Fault::Full,
                format!("{free} bytes free on the file system of {}", dir.display()),
            )),
            _ => Ok(()),
        }
    }
}

fn replaced(path: &Path, what: &str) -> StoreError {
    StoreError::new(
        Fault::Replaced,
        format!(
            "{} was {what} under the running server: writes are refused until it is restarted",
            path.display()
        ),
    )
}

pub fn wal_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

#[cfg(target_os = "linux")]
fn can_write(path: &Path) -> bool {
    // `access` also refuses a file marked immutable (`chattr +i`), which the mode bits do not show.
    rustix::fs::access(path, rustix::fs::Access::WRITE_OK).is_ok()
}

#[cfg(not(target_os = "linux"))]
fn can_write(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.permissions().readonly())
}

#[cfg(target_os = "linux")]
fn free_bytes(dir: &Path) -> Option<u64> {
    let s = rustix::fs::statvfs(dir).ok()?;
    Some(s.f_bavail.saturating_mul(s.f_frsize))
}

#[cfg(not(target_os = "linux"))]
fn free_bytes(_: &Path) -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_or_deleted_file_is_noticed() {
        let dir = std::env::temp_dir().join(format!("files-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("x.db");
        std::fs::write(&db, b"one").unwrap();
        std::fs::write(wal_path(&db), b"wal").unwrap();
        let files = Files::record(&db).unwrap();
        assert!(files.intact().is_ok());
        assert!(files.writable().is_ok());

        let other = dir.join("y.db");
        std::fs::write(&other, b"two").unwrap();
        std::fs::rename(&other, &db).unwrap();
        assert_eq!(files.intact().unwrap_err().fault, Fault::Replaced);

        let files = Files::record(&db).unwrap();
        std::fs::remove_file(wal_path(&db)).unwrap();
        assert_eq!(files.intact().unwrap_err().fault, Fault::Replaced);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
