use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

use crate::DbConnection;

const SQLITE: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");
const POSTGRES: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");

pub type MigrationError = Box<dyn std::error::Error + Send + Sync>;

/// Applies every pending migration of the connection's backend; returns how many ran.
pub fn run_migrations(conn: &mut DbConnection) -> Result<usize, MigrationError> {
    Ok(crate::with_backend!(conn, |c| c
        .run_pending_migrations(migrations_for_backend(c))?
        .len()))
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
