//! `server`: run the service, migrate, export the OpenAPI document, check the ledger, seed
//! demo rows, or copy a database.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use http_edge::middleware::access_log::{self, LogFormat};
use server::{Application, Settings};

#[derive(Parser)]
#[command(name = "server", version, about = "The notes service (HTTP + JSON)")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP service (the default)
    Serve,
    /// Apply pending database migrations and exit
    Migrate,
    /// Write the OpenAPI document of a service running with API_AUTH=tokens (every credential
    /// declared; a running server serves the document of its own mode at /openapi.json)
    Openapi {
        /// Output file, or - for standard output
        #[arg(long, default_value = "-")]
        out: String,
    },
    /// Replay every account and report any projection that differs (exit 1 if one does)
    LedgerCheck {
        /// Read from the first standby of DATABASE_REPLICA_URLS instead of the primary (no
        /// migrations; the check sees what that standby has replayed)
        #[arg(long)]
        standby: bool,
    },
    /// Insert demo rows in bulk (batched multi-row inserts, a commit every 50 statements); each
    /// run adds to what the tables hold
    Seed(SeedArgs),
    /// Take a consistent copy of the SQLite database (DATABASE_URL), running or not, into a new
    /// file: fsynced and verified (integrity_check, every table's rows and checksum, the kept
    /// counts, the ledger replay) before it gets its name. PostgreSQL: use pg_dump
    Backup {
        /// The backup file to create; never overwritten
        #[arg(long)]
        to: PathBuf,
    },
    /// Replace the SQLite database (DATABASE_URL) with a backup, verified first; refused while
    /// any process has the database open. The replaced file is kept beside it
    Restore {
        /// The backup file (made by `server backup`)
        #[arg(long)]
        from: PathBuf,
    },
    /// Copy every table from one database into an empty one (SQLite to PostgreSQL), then
    /// verify row counts, checksums and the ledger replay; all or nothing (exit 1 on failure)
    MigrateData {
        /// Source database URL (sqlite://path); only read
        #[arg(long)]
        from: String,
        /// Target database URL (postgres://...); migrated, and refused if it holds any row
        #[arg(long)]
        to: String,
    },
}

#[derive(clap::Args)]
struct SeedArgs {
    /// Notes ("Demo note N")
    #[arg(long, default_value_t = 0)]
    notes: u64,
    /// Tags ("demo-tag-N")
    #[arg(long, default_value_t = 0)]
    tags: u64,
    /// Comments, all on the oldest note (made first when there is none)
    #[arg(long, default_value_t = 0)]
    comments: u64,
    /// Accounts ("demo-N", opened with balance 0)
    #[arg(long, default_value_t = 0)]
    accounts: u64,
    /// Articles (the deterministic demo sequence 1..=N)
    #[arg(long, default_value_t = 0)]
    articles: u64,
    /// Versioned notes (listed by /v1/notes and /v2/notes)
    #[arg(long, default_value_t = 0)]
    versioned_notes: u64,
    /// Webhook events, as if delivered and verified
    #[arg(long, default_value_t = 0)]
    webhook_events: u64,
    /// Rows per INSERT statement
    #[arg(long, default_value_t = operator_commands::SEED_BATCH)]
    batch: usize,
}

impl SeedArgs {
    fn counts(&self) -> operator_commands::SeedCounts {
        operator_commands::SeedCounts {
            notes: self.notes,
            tags: self.tags,
            comments: self.comments,
            accounts: self.accounts,
            articles: self.articles,
            versioned_notes: self.versioned_notes,
            webhook_events: self.webhook_events,
        }
    }
}

fn main() {
    cap_malloc_arenas();
    if let Err(err) = run() {
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
}

/// The most malloc arenas the process keeps. glibc gives a thread that finds the allocator
/// busy an arena of its own, up to eight per core, and every arena keeps what was freed into
/// it: the server's dozen busy threads (two actix workers, the blocking threads of database
/// calls, the group-commit writers) each held their own, and its peak resident memory grew
/// with them. Four: docs/PERFORMANCE.md (two made point reads 15% slower, the threads queued
/// on the locks).
const MALLOC_ARENAS: i32 = 4;

/// Caps glibc's malloc arenas at [`MALLOC_ARENAS`], unless the operator chose a number
/// (`MALLOC_ARENA_MAX`, or `arena_max` in `GLIBC_TUNABLES`). Called first in `main`, before
/// any thread exists. True when the cap was set.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn cap_malloc_arenas() -> bool {
    let tunables = std::env::var("GLIBC_TUNABLES").ok();
    if operator_set_arenas(
        std::env::var_os("MALLOC_ARENA_MAX").is_some(),
        tunables.as_deref(),
    ) {
        return false;
    }
    // SAFETY: mallopt only sets a parameter of the allocator, which takes its own lock; no
    // memory is handed over.
    unsafe { libc::mallopt(libc::M_ARENA_MAX, MALLOC_ARENAS) == 1 }
}

/// Whether the environment already sets glibc's arena count: `MALLOC_ARENA_MAX`, or
/// `glibc.malloc.arena_max` among the colon-separated `GLIBC_TUNABLES`.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn operator_set_arenas(malloc_arena_max: bool, glibc_tunables: Option<&str>) -> bool {
    malloc_arena_max
        || glibc_tunables.is_some_and(|t| {
            t.split(':')
                .any(|setting| setting.starts_with("glibc.malloc.arena_max="))
        })
}

/// Other C libraries have no glibc arenas to cap.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn cap_malloc_arenas() -> bool {
    false
}

#[actix_web::main]
async fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => {
            let signals = server::app::StopSignals::install()?;
            let settings = init()?;
            http_edge::serve::raise_open_file_limit();
            log::info!("database: {}", settings.database()?.describe());
            let app = Application::build(settings.clone()).await?;
            log::info!("authentication: API_AUTH={}", settings.api_auth.describe());
            log::info!("listening on http://{}:{}", settings.bind.ip(), app.port());
            app.run_until_signalled(signals).await?;
        }
        Command::Migrate => {
            let settings = init()?;
            server::app::open_database(&settings).await?;
            log::info!("migrations applied");
        }
        Command::Openapi { out } => {
            eprintln!(
                "the OpenAPI document of API_AUTH=tokens (a server serves its own mode's at \
                 /openapi.json)"
            );
            let doc = server::openapi::generate().await;
            let text = serde_json::to_string_pretty(&doc)? + "\n";
            if out == "-" {
                std::io::stdout().write_all(text.as_bytes())?;
            } else {
                let path = PathBuf::from(&out);
                std::fs::write(&path, text).with_context(|| format!("cannot write {out}"))?;
            }
        }
        Command::LedgerCheck { standby } => {
            let store = match standby {
                true => standby_store()?,
                false => tool_store().await?,
            };
            if !actix_web::web::block(move || operator_commands::ledger_check(&store)).await?? {
                std::process::exit(1);
            }
        }
        Command::Seed(args) => {
            let store = tool_store().await?;
            actix_web::web::block(move || {
                operator_commands::seed(&store, args.counts(), args.batch)
            })
            .await??;
        }
        Command::Backup { to } => {
            let url = init_tool()?.database_url;
            actix_web::web::block(move || operator_commands::backup(&url, &to)).await??;
        }
        Command::Restore { from } => {
            let url = init_tool()?.database_url;
            actix_web::web::block(move || operator_commands::restore(&from, &url)).await??;
        }
        Command::MigrateData { from, to } => {
            // Takes no `Settings`: both databases are named on the command line.
            env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
                .init();
            actix_web::web::block(move || operator_commands::migrate_data(&from, &to)).await??;
        }
    }
    Ok(())
}

/// The first standby of `DATABASE_REPLICA_URLS`, for a read-only command.
fn standby_store() -> anyhow::Result<storage::Store> {
    let settings = init_tool()?;
    let standby = settings
        .replicas
        .first()
        .context("--standby reads the first of DATABASE_REPLICA_URLS, and none is set")?;
    Ok(storage::Store::lazy(
        standby.clone().with_timeouts(settings.db_timeouts),
        1,
    )?)
}

/// The migrated store of `DATABASE_URL`, for a one-shot command.
async fn tool_store() -> anyhow::Result<storage::Store> {
    let db = server::app::open_database(&init_tool()?).await?;
    Ok(db.store().clone())
}

fn init() -> anyhow::Result<Settings> {
    let settings = Settings::from_env()?;
    let mut logger =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"));
    if settings.log_format == LogFormat::Json {
        logger.format(|buf, record| {
            let timestamp = buf.timestamp_millis().to_string();
            writeln!(buf, "{}", access_log::json_line(&timestamp, record))
        });
    }
    logger.init();
    Ok(settings)
}

/// [`init`] for the one-shot commands: a ledger check or a seed over a large database may run
/// statements longer than the timeout that bounds a request.
fn init_tool() -> anyhow::Result<Settings> {
    let mut settings = init()?;
    settings.db_timeouts.statement = std::time::Duration::ZERO;
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn the_operators_arena_count_wins() {
        assert!(!operator_set_arenas(false, None));
        assert!(operator_set_arenas(true, None));
        assert!(operator_set_arenas(false, Some("glibc.malloc.arena_max=2")));
        assert!(operator_set_arenas(
            false,
            Some("glibc.malloc.trim_threshold=0:glibc.malloc.arena_max=8")
        ));
        assert!(!operator_set_arenas(
            false,
            Some("glibc.malloc.trim_threshold=0")
        ));
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn glibc_takes_the_cap() {
        let chosen = operator_set_arenas(
            std::env::var_os("MALLOC_ARENA_MAX").is_some(),
            std::env::var("GLIBC_TUNABLES").ok().as_deref(),
        );
        assert_eq!(cap_malloc_arenas(), !chosen);
    }
}
