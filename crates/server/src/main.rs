//! `server`: run the service, migrate, export the OpenAPI document, or seed demo articles.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
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
    /// Write the OpenAPI document
    Openapi {
        /// Output file, or - for standard output
        #[arg(long, default_value = "-")]
        out: String,
    },
    /// Replay every account and report any projection that differs (exit 1 if one does)
    LedgerCheck,
    /// Insert N deterministic demo articles (batched multi-row inserts)
    SeedArticles {
        /// How many articles to insert
        count: u64,
        /// Rows per INSERT statement
        #[arg(long, default_value_t = articles::service::SEED_BATCH)]
        batch: usize,
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

fn main() {
    if let Err(err) = run() {
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
}

#[actix_web::main]
async fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => {
            let settings = init()?;
            raise_open_file_limit();
            let app = Application::build(settings.clone()).await?;
            log::info!(
                "listening on http://{}:{} (database: {})",
                settings.bind.ip(),
                app.port(),
                settings.database()?.backend().as_str()
            );
            app.run_until_stopped().await?;
        }
        Command::Migrate => {
            let settings = init()?;
            server::app::open_database(&settings).await?;
            log::info!("migrations applied");
        }
        Command::Openapi { out } => {
            let doc = server::openapi::generate().await;
            let text = serde_json::to_string_pretty(&doc)? + "\n";
            if out == "-" {
                std::io::stdout().write_all(text.as_bytes())?;
            } else {
                let path = PathBuf::from(&out);
                std::fs::write(&path, text).with_context(|| format!("cannot write {out}"))?;
            }
        }
        Command::LedgerCheck => {
            let settings = init_tool()?;
            let db = server::app::open_database(&settings).await?;
            let store = db.store().clone();
            let report = actix_web::web::block(move || -> anyhow::Result<_> {
                let mut conn = store.checkout()?;
                Ok(ledger::check::check_all(&mut conn)?)
            })
            .await??;
            for m in &report.mismatches {
                println!("mismatch: account {:?}: {}", m.account_id, m.reason);
            }
            println!(
                "ledger-check: {} accounts, {} events replayed, {} mismatches",
                report.accounts,
                report.events,
                report.mismatches.len()
            );
            if !report.is_consistent() {
                std::process::exit(1);
            }
        }
        Command::SeedArticles { count, batch } => {
            let settings = init_tool()?;
            let db = server::app::open_database(&settings).await?;
            let started = std::time::Instant::now();
            // The seed commits its own transactions, many batches each.
            let inserted = db
                .read(move |c| {
                    articles::service::seed(c, count, batch, |done| {
                        log::info!("{done} of {count} articles inserted");
                    })
                })
                .await
                .map_err(|e| anyhow::anyhow!("seeding failed: {e}"))?;
            println!(
                "inserted {inserted} articles in {:.2} s",
                started.elapsed().as_secs_f64()
            );
        }
        Command::MigrateData { from, to } => migrate_data(from, to).await?,
    }
    Ok(())
}

/// Takes no `Settings`: both databases are named on the command line, not by `DATABASE_URL`.
async fn migrate_data(from: String, to: String) -> anyhow::Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let outcome = actix_web::web::block(move || {
        let (mut source, mut target) = data_migration::connect(&from, &to)?;
        let mut next_log = 100_000;
        data_migration::migrate(&mut source, &mut target, |p| {
            if p.done {
                log::info!("{}: {} rows copied", p.table, p.rows);
                next_log = 100_000;
            } else if p.rows >= next_log {
                log::info!("{}: {} rows so far", p.table, p.rows);
                next_log = p.rows + 100_000;
            }
        })
    })
    .await?;
    match outcome {
        Ok(report) => {
            print!("{report}");
            println!("migrate-data: copied and verified; committed");
            Ok(())
        }
        Err(data_migration::Error::Unverified(report)) => {
            print!("{report}");
            anyhow::bail!("migrate-data: the copy does not match its source; nothing was written")
        }
        Err(err) => Err(anyhow::Error::new(err).context("migrate-data")),
    }
}

fn init() -> anyhow::Result<Settings> {
    let settings = Settings::from_env()?;
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    Ok(settings)
}

/// Raises the soft limit on open files to the hard one. The common soft default of 1,024 let
/// 1,100 idle connections stop the server from accepting any more (`/health` included); the
/// per-client connection cap and the request deadline bound what one client holds, and this
/// leaves room for many clients.
fn raise_open_file_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        if let Err(err) = setrlimit(Resource::Nofile, limit) {
            log::warn!("cannot raise the open-file limit: {err}");
        }
    }
}

/// [`init`] for the one-shot commands: a ledger check or a seed over a large database may run
/// statements longer than the timeout that bounds a request.
fn init_tool() -> anyhow::Result<Settings> {
    let mut settings = init()?;
    settings.db_timeouts.statement = std::time::Duration::ZERO;
    Ok(settings)
}
