//! The copy: source snapshot → target, all or nothing.

use diesel::prelude::*;
use storage::{Backend, Database, DbConnection};

use crate::tables::TABLES;
use crate::{Error, Report, verify};

/// How far the copy of one table has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub table: &'static str,
    /// Rows copied so far.
    pub rows: u64,
    /// Rows the source table holds (counted when its copy starts).
    pub total: u64,
    /// True once the table is complete.
    pub done: bool,
}

/// Opens the source and the target. Refuses the same database twice, and a SQLite source that
/// does not exist (opening it would create an empty file and copy nothing).
pub fn connect(from: &str, to: &str) -> Result<(DbConnection, DbConnection), Error> {
    // No statement timeout: copying and checking a large table is one long statement.
    let unbounded = |url, role| {
        Database::parse(url)
            .map(|db| {
                db.clone().with_timeouts(storage::Timeouts {
                    statement: std::time::Duration::ZERO,
                    ..db.timeouts
                })
            })
            .map_err(|source| Error::Connect { role, source })
    };
    let source = unbounded(from, "source")?;
    let target = unbounded(to, "target")?;
    if source == target {
        return Err(Error::SameDatabase);
    }
    if source.backend() == Backend::Sqlite {
        let path = source.sqlite_path().unwrap_or(std::path::Path::new(from));
        if !path.exists() {
            return Err(Error::SourceMissing {
                path: path.display().to_string(),
            });
        }
    }
    let open = |db: &Database, role| {
        db.establish()
            .map_err(|source| Error::Connect { role, source })
    };
    Ok((open(&source, "source")?, open(&target, "target")?))
}

/// Copies every table of `source` into `target` and verifies the copy, in one transaction on
/// the target: it migrates the target, refuses if any table already holds a row, copies the
/// tables parents first with their ids, moves PostgreSQL's id sequences past the copied ids
/// and verifies. Any error, a failed verification included ([`Error::Unverified`]), rolls all
/// of it back.
///
/// The source is read inside one transaction too (repeatable read on PostgreSQL), so the copy
/// and its verification see one snapshot even if something still writes to the source.
pub fn migrate(
    source: &mut DbConnection,
    target: &mut DbConnection,
    mut progress: impl FnMut(Progress),
) -> Result<Report, Error> {
    source.transaction(|source| {
        if source.backend() == Backend::Postgres {
            diesel::sql_query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                .execute(source)?;
        }
        let source_versions = schema_versions(source).map_err(Error::SourceNotMigrated)?;
        target.transaction(|target| {
            storage::run_migrations(target).map_err(Error::Migrations)?;
            same_schema(source_versions, schema_versions(target)?)?;
            for table in TABLES {
                let rows = table.count(target)?;
                if rows > 0 {
                    return Err(Error::TargetNotEmpty {
                        table: table.name(),
                        rows,
                    });
                }
            }
            for table in TABLES {
                let table_name = table.name();
                let total = u64::try_from(table.count(source)?).unwrap_or(0);
                let rows = table.copy(source, target, &mut |rows| {
                    progress(Progress {
                        table: table_name,
                        rows,
                        total,
                        done: false,
                    })
                })?;
                progress(Progress {
                    table: table_name,
                    rows,
                    total,
                    done: true,
                });
            }
            if target.backend() == Backend::Postgres {
                reset_sequences(target)?;
            }
            crate::tables::fill_derived(target)?;
            let report = verify(source, target)?;
            if report.is_ok() {
                Ok(report)
            } else {
                Err(Error::Unverified(Box::new(report)))
            }
        })
    })
}

/// Explicit ids do not advance an identity column's sequence: without this the first insert
/// after the copy would be given id 1 and collide. `setval` is not transactional, which is
/// harmless here: on a rollback the tables are empty and any id above is free.
fn reset_sequences(conn: &mut DbConnection) -> QueryResult<()> {
    for table in TABLES {
        if let Some(column) = table.serial() {
            let name = table.name();
            diesel::sql_query(format!(
                "SELECT setval(pg_get_serial_sequence('{name}', '{column}'), \
                 COALESCE(MAX({column}), 1), MAX({column}) IS NOT NULL) FROM {name}"
            ))
            .execute(conn)?;
        }
    }
    Ok(())
}

diesel::table! {
    __diesel_schema_migrations (version) {
        version -> Text,
    }
}

/// The migration versions applied to a database, read without creating the table (Diesel's
/// own `applied_migrations` would create it, writing to the source).
fn schema_versions(conn: &mut DbConnection) -> QueryResult<Vec<String>> {
    use __diesel_schema_migrations::dsl::{__diesel_schema_migrations as migrations, version};
    // Sorted here: PostgreSQL's collation need not order text as SQLite does.
    let mut versions: Vec<String> = migrations.select(version).load(conn)?;
    versions.sort();
    Ok(versions)
}

fn same_schema(source: Vec<String>, target: Vec<String>) -> Result<(), Error> {
    if source == target {
        return Ok(());
    }
    Err(Error::SchemaMismatch {
        missing_in_source: target
            .iter()
            .filter(|v| !source.contains(v))
            .cloned()
            .collect(),
        missing_in_target: source
            .iter()
            .filter(|v| !target.contains(v))
            .cloned()
            .collect(),
    })
}
