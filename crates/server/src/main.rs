//! `server`: run the service, migrate, or export the OpenAPI document.

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
            let app = Application::build(settings.clone()).await?;
            log::info!(
                "listening on http://{}:{} (database: {})",
                settings.bind.ip(),
                app.port(),
                storage::Database::parse(&settings.database_url)
                    .backend()
                    .as_str()
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
    }
    Ok(())
}

fn init() -> anyhow::Result<Settings> {
    let settings = Settings::from_env()?;
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    Ok(settings)
}
