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
    LedgerCheck,
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
    #[arg(long, default_value_t = articles::service::SEED_BATCH)]
    batch: usize,
}

/// One table's seed: connection, rows, rows per statement, progress (rows committed so far).
type SeedFn =
    fn(&mut storage::DbConnection, u64, usize, &mut dyn FnMut(u64)) -> anyhow::Result<u64>;

impl SeedArgs {
    fn plan(&self) -> [(&'static str, u64, SeedFn); 7] {
        [
            ("notes", self.notes, |c, n, b, p| {
                Ok(notes::seed::notes(c, n, b, p)?)
            }),
            ("tags", self.tags, |c, n, b, p| {
                Ok(notes::seed::tags(c, n, b, p)?)
            }),
            ("comments", self.comments, |c, n, b, p| {
                Ok(notes::seed::comments(c, n, b, p)?)
            }),
            ("accounts", self.accounts, |c, n, b, p| {
                Ok(ledger::seed::accounts(c, n, b, p)?)
            }),
            ("articles", self.articles, |c, n, b, p| {
                Ok(articles::service::seed(c, n, b, p)?)
            }),
            ("versioned notes", self.versioned_notes, |c, n, b, p| {
                Ok(versioned_notes::seed::notes(c, n, b, p)?)
            }),
            ("webhook events", self.webhook_events, |c, n, b, p| {
                Ok(webhooks::seed::events(c, n, b, p)?)
            }),
        ]
    }
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
        Command::LedgerCheck => {
            let settings = init_tool()?;
            let db = server::app::open_database(&settings).await?;
            let store = db.store().clone();
            let report = actix_web::web::block(move || -> anyhow::Result<_> {
                let mut conn = store.checkout()?;
                let accounts = storage::counts::Counted::table("accounts");
                let accounts = storage::counts::total(&mut conn, accounts)?;
                let bar = server::progress::bar("accounts checked", accounts.unsigned_abs());
                let report =
                    ledger::check::check_all_with_progress(&mut conn, |n| bar.set_position(n))?;
                bar.finish_and_clear();
                Ok(report)
            })
            .await??;
            print!("{report}");
            if !report.is_consistent() {
                std::process::exit(1);
            }
        }
        Command::Seed(args) => seed(args).await?,
        Command::Backup { to } => {
            let url = init_tool()?.database_url;
            let report =
                actix_web::web::block(move || data_migration::backup::backup(&url, &to)).await??;
            print!("{report}");
            println!("backup: verified and synced");
        }
        Command::Restore { from } => {
            let url = init_tool()?.database_url;
            let restored =
                actix_web::web::block(move || data_migration::backup::restore(&from, &url))
                    .await??;
            print!("{}", restored.report);
            match restored.previous {
                Some(kept) => println!(
                    "restore: done; the replaced database is kept as {}",
                    kept.display()
                ),
                None => println!("restore: done"),
            }
        }
        Command::MigrateData { from, to } => migrate_data(from, to).await?,
    }
    Ok(())
}

/// Seeds each table in turn, each with its progress bar and a line when it is done.
async fn seed(args: SeedArgs) -> anyhow::Result<()> {
    let settings = init_tool()?;
    let db = server::app::open_database(&settings).await?;
    let store = db.store().clone();
    actix_web::web::block(move || -> anyhow::Result<()> {
        let mut conn = store.checkout()?;
        for (what, count, seed) in args.plan() {
            if count == 0 {
                continue;
            }
            let started = std::time::Instant::now();
            let bar = server::progress::bar(what, count);
            let inserted = seed(&mut conn, count, args.batch, &mut |done| {
                bar.set_position(done)
            })
            .with_context(|| format!("seeding {what} failed"))?;
            bar.finish_and_clear();
            println!(
                "inserted {inserted} {what} in {:.2} s",
                started.elapsed().as_secs_f64()
            );
        }
        if !storage::seed::settle(&mut conn)? {
            log::warn!("the WAL could not be emptied: readers held it; the server will copy it");
        }
        Ok(())
    })
    .await?
}

/// Takes no `Settings`: both databases are named on the command line, not by `DATABASE_URL`.
async fn migrate_data(from: String, to: String) -> anyhow::Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let outcome = actix_web::web::block(move || {
        let (mut source, mut target) = data_migration::connect(&from, &to)?;
        let mut bar: Option<(&str, indicatif::ProgressBar)> = None;
        data_migration::migrate(&mut source, &mut target, |p| {
            if bar.as_ref().is_none_or(|(table, _)| *table != p.table) {
                bar = Some((p.table, server::progress::bar(p.table, p.total)));
            }
            if let Some((_, b)) = &bar {
                b.set_position(p.rows);
            }
            if p.done {
                if let Some((_, b)) = bar.take() {
                    b.finish_and_clear();
                }
                log::info!("{}: {} rows copied", p.table, p.rows);
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
