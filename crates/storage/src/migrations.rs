use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

use crate::DbConnection;

const SQLITE: EmbeddedMigrations = embed_migrations!("migrations/sqlite");
const POSTGRES: EmbeddedMigrations = embed_migrations!("migrations/postgres");

pub type MigrationError = Box<dyn std::error::Error + Send + Sync>;

/// Applies every pending migration of the connection's backend; returns how many ran.
pub fn run_migrations(conn: &mut DbConnection) -> Result<usize, MigrationError> {
    Ok(crate::with_backend!(conn, |c| c
        .run_pending_migrations(migrations_for_backend(c))?
        .len()))
}

/// [`run_migrations`], outlasting a lock that another session holds on what a migration
/// changes, for at most `patience`: a server killed during a migration leaves its session's
/// transaction (and locks) behind until PostgreSQL notices the client is gone, and the next
/// start should wait that out rather than stop. Each wait is reported to `waiting` (how long
/// so far, and why); any other failure, or a lock held past `patience`, is returned.
pub fn run_migrations_patiently(
    conn: &mut DbConnection,
    patience: std::time::Duration,
    mut waiting: impl FnMut(std::time::Duration, &MigrationError),
) -> Result<usize, MigrationError> {
    let started = std::time::Instant::now();
    loop {
        match run_migrations(conn) {
            Err(e) if is_lock_wait(&e) && started.elapsed() < patience => {
                waiting(started.elapsed(), &e);
                std::thread::sleep(std::time::Duration::from_secs(1));
            }
            other => return other,
        }
    }
}

/// What [`migrate`] did: how many migrations it applied, and the schema's version after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migrated {
    pub applied: usize,
    pub version: String,
}

/// Applies pending migrations on a connection of its own, without the statement timeout that
/// bounds requests (a migration that backfills a large table may run for minutes), outlasting
/// a lock another session holds for up to `patience` ([`run_migrations_patiently`]).
pub fn migrate(
    database: &crate::Database,
    patience: std::time::Duration,
    waiting: impl FnMut(std::time::Duration, &MigrationError),
) -> Result<Migrated, MigrationError> {
    let unbounded = database.clone().with_timeouts(crate::Timeouts {
        statement: std::time::Duration::ZERO,
        ..database.timeouts
    });
    let mut conn = unbounded.establish()?;
    let applied = run_migrations_patiently(&mut conn, patience, waiting)?;
    let version = applied_migrations(&mut conn)?
        .into_iter()
        .max()
        .unwrap_or_default();
    Ok(Migrated { applied, version })
}

/// A migration stopped because a lock it needs is held elsewhere (PostgreSQL's
/// `lock_timeout`, SQLite's `busy_timeout`).
fn is_lock_wait(e: &MigrationError) -> bool {
    let text = e.to_string();
    crate::Fault::find(e.as_ref()) == Some(crate::Fault::Busy)
        || text.contains("lock timeout")
        || text.contains("database is locked")
}

/// Reverts every applied migration (for the up/down/up round-trip test and `migrate --down`).
pub fn revert_all_migrations(conn: &mut DbConnection) -> Result<usize, MigrationError> {
    Ok(crate::with_backend!(conn, |c| c
        .revert_all_migrations(migrations_for_backend(c))?
        .len()))
}

/// Versions currently applied.
pub fn applied_migrations(conn: &mut DbConnection) -> Result<Vec<String>, MigrationError> {
    Ok(crate::with_backend!(conn, |c| c
        .applied_migrations()?
        .into_iter()
        .map(|v| v.to_string())
        .collect()))
}

/// The embedded migration names of both trees, (sqlite, postgres).
pub fn migration_names() -> Result<(Vec<String>, Vec<String>), MigrationError> {
    use diesel::migration::MigrationSource;
    let names = |src: EmbeddedMigrations| -> Result<Vec<String>, MigrationError> {
        Ok(MigrationSource::<diesel::sqlite::Sqlite>::migrations(&src)?
            .iter()
            .map(|m| m.name().to_string())
            .collect())
    };
    Ok((names(SQLITE)?, names(POSTGRES)?))
}

trait ForBackend {
    const MIGRATIONS: EmbeddedMigrations;
}
impl ForBackend for diesel::pg::PgConnection {
    const MIGRATIONS: EmbeddedMigrations = POSTGRES;
}
impl ForBackend for diesel::sqlite::SqliteConnection {
    const MIGRATIONS: EmbeddedMigrations = SQLITE;
}
fn migrations_for_backend<C: ForBackend>(_: &C) -> EmbeddedMigrations {
    C::MIGRATIONS
}
