//! Throwaway databases for tests (feature `testing`): a SQLite file in a temporary directory, or
//! a fresh PostgreSQL database created through `TEST_POSTGRES_URL` and dropped afterwards.

use diesel::pg::PgConnection;
use diesel::{Connection, RunQueryDsl};

use crate::{Backend, Database, DbConnection, StorageError};

/// A database made for one test and removed when dropped.
pub struct TestDatabase {
    pub url: String,
    backend: Backend,
    dir: Option<std::path::PathBuf>,
    pg: Option<(String, String)>,
}

impl TestDatabase {
    /// `None` for PostgreSQL when `admin_url` is `None` (the caller passes
    /// the `TEST_POSTGRES_URL` environment variable).
    pub fn create(
        backend: Backend,
        admin_url: Option<&str>,
    ) -> Result<Option<TestDatabase>, StorageError> {
        let unique = unique_name();
        match backend {
            Backend::Sqlite => {
                let dir = std::env::temp_dir().join(format!("storage-test-{unique}"));
                std::fs::create_dir_all(&dir).map_err(StorageError::CreateDir)?;
                Ok(Some(TestDatabase {
                    url: format!("sqlite://{}/test.db", dir.display()),
                    backend,
                    dir: Some(dir),
                    pg: None,
                }))
            }
            Backend::Postgres => {
                let Some(admin) = admin_url else {
                    return Ok(None);
                };
                let mut conn = storage_connect(admin)?;
                diesel::sql_query(format!("CREATE DATABASE {unique}"))
                    .execute(&mut conn)
                    .map_err(StorageError::Configure)?;
                let base = admin.rsplit_once('/').map_or(admin, |(base, _)| base);
                Ok(Some(TestDatabase {
                    url: format!("{base}/{unique}"),
                    backend,
                    dir: None,
                    pg: Some((admin.to_owned(), unique)),
                }))
            }
        }
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// A connection to the migrated database.
    pub fn migrated_connection(
        &self,
    ) -> Result<DbConnection, Box<dyn std::error::Error + Send + Sync>> {
        let mut conn = Database::parse(&self.url)?.establish()?;
        crate::run_migrations(&mut conn)?;
        Ok(conn)
    }
}

/// Runs `test` on a freshly migrated database of each backend: SQLite always, PostgreSQL when
/// `TEST_POSTGRES_URL` names an admin connection. The one way the domain crates' repository
/// tests reach both backends.
///
/// # Panics
/// When a database cannot be made or migrated: the test cannot run.
#[allow(clippy::expect_used)]
pub fn on_each_backend(test: impl Fn(&TestDatabase, &mut DbConnection)) {
    let admin = std::env::var("TEST_POSTGRES_URL").ok();
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let Some(db) =
            TestDatabase::create(backend, admin.as_deref()).expect("a test database can be made")
        else {
            continue;
        };
        let mut conn = db
            .migrated_connection()
            .expect("the test database can be migrated");
        test(&db, &mut conn);
    }
}

fn unique_name() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "t_{}_{}_{}",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        if let Some((admin, name)) = &self.pg
            && let Ok(mut conn) = storage_connect(admin)
        {
            let _ = diesel::sql_query(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(&mut conn);
        }
    }
}

/// An admin connection, opened the way every PostgreSQL connection of the process is
/// ([`crate::cutoff::connect`]), so that it never hides which socket a pooled one opened.
fn storage_connect(admin: &str) -> diesel::ConnectionResult<PgConnection> {
    crate::cutoff::connect(&[], || PgConnection::establish(admin)).map(|(conn, _)| conn)
}

/// The ids of this process's threads named `comm` (Linux cuts a thread's name to 15 bytes).
#[cfg(target_os = "linux")]
pub fn threads_named(comm: &str) -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    tasks
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|tid| {
            std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
                .is_ok_and(|c| c.trim_end() == comm)
        })
        .collect()
}

/// The nice values of the threads named `comm`, once they all have `expected` (a thread lowers
/// its own priority as it starts), or as they are after 10 s.
#[cfg(target_os = "linux")]
pub fn nice_values_once(comm: &str, expected: i32) -> Vec<i32> {
    values_once(comm, nice_of, expected)
}

/// The scheduling policies ([`policy_of`]) of the threads named `comm`, once they all have
/// `expected` (a thread changes its own class as it starts), or as they are after 10 s.
#[cfg(target_os = "linux")]
pub fn policies_once(comm: &str, expected: i32) -> Vec<i32> {
    values_once(comm, policy_of, expected)
}

#[cfg(target_os = "linux")]
fn values_once(comm: &str, read: fn(&str) -> Option<i32>, expected: i32) -> Vec<i32> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let values: Vec<i32> = threads_named(comm).iter().filter_map(|t| read(t)).collect();
        let settled = !values.is_empty() && values.iter().all(|&n| n == expected);
        if settled || std::time::Instant::now() > deadline {
            return values;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// A thread's nice value (`"self"`: the calling thread's): field 19 of its `stat`, the 17th
/// after the parenthesised name; `None` when it cannot be read (the thread ended).
#[cfg(target_os = "linux")]
pub fn nice_of(tid: &str) -> Option<i32> {
    stat_field(tid, 19)
}

/// A thread's scheduling policy (`"self"`: the calling thread's), as `sched_setscheduler`
/// numbers them (0 normal, 5 idle): field 41 of its `stat`.
#[cfg(target_os = "linux")]
pub fn policy_of(tid: &str) -> Option<i32> {
    stat_field(tid, 41)
}

/// Field `n` (numbered from 1, as proc(5) does) of a thread's `stat`, counted after the
/// parenthesised name (field 2, which may hold spaces).
#[cfg(target_os = "linux")]
fn stat_field(tid: &str, n: usize) -> Option<i32> {
    let path = if tid == "self" {
        "/proc/thread-self/stat".to_owned()
    } else {
        format!("/proc/self/task/{tid}/stat")
    };
    let stat = std::fs::read_to_string(path).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(n - 3)?.parse().ok()
}
