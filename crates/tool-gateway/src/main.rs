//! `tool-gateway`: the MCP gateway in front of the notes service's HTTP API.

use std::net::SocketAddr;

use anyhow::Context;
use clap::Parser;
use tool_catalog::{BaseUrl, Catalog, CatalogError};
use tool_gateway::{
    BearerToken, ClientTokens, Gateway, GatewayConfig, HttpLimits, Selection, TOKEN_ENV,
};

/// MCP server exposing the API operations described by a tool catalog as tools.
///
/// Write tools need SERVICE_MCP_BEARER_TOKEN (sent as `Authorization: Bearer ...`); read tools
/// never send it.
#[derive(Debug, Parser)]
#[command(name = "tool-gateway", version)]
struct Args {
    /// The tool catalog (JSON). An invalid catalog does not stop the gateway: every tools/list
    /// and tools/call then answers a JSON-RPC error naming the entry and field.
    #[arg(long, env = "TOOL_CATALOG", value_name = "FILE")]
    catalog: std::path::PathBuf,

    /// The API's base URL; tool paths are appended to it.
    #[arg(
        long,
        env = "SERVICE_BASE_URL",
        value_name = "URL",
        default_value = "http://127.0.0.1:8080"
    )]
    base_url: String,

    /// Serve streamable HTTP on this address (POST /mcp) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,

    /// HTTP: a browser origin allowed to call the gateway (`scheme://host:port`, `:*` for any
    /// port); repeat or comma-separate. Default: loopback origins only.
    #[arg(
        long = "allowed-origin",
        env = "MCP_ALLOWED_ORIGINS",
        value_name = "ORIGIN",
        value_delimiter = ','
    )]
    allowed_origins: Vec<String>,

    /// HTTP: live sessions at most; a new one beyond is refused with 503 and Retry-After.
    #[arg(
        long,
        env = "MCP_MAX_SESSIONS",
        value_name = "N",
        default_value_t = 256
    )]
    max_sessions: usize,

    /// HTTP: how the gateway's own clients authenticate. `tokens`: every request needs
    /// `Authorization: Bearer <token>` that the service's POST /tokens/verify finds valid.
    /// `none` (default) is allowed on loopback addresses only.
    #[arg(
        long,
        env = "MCP_CLIENT_AUTH",
        value_name = "MODE",
        default_value = "none"
    )]
    client_auth: ClientAuth,

    /// Serve only the catalog's read tools (safety `read`): write tools are neither listed nor
    /// callable.
    #[arg(long, env = "MCP_READ_ONLY")]
    read_only: bool,

    /// Serve only these tools (comma-separated or repeated); a name the catalog does not have
    /// stops the gateway. Combines with --read-only.
    #[arg(long, env = "MCP_TOOLS", value_name = "NAME", value_delimiter = ',')]
    tools: Vec<String>,

    /// The API's OpenAPI document (a file, or an http(s) URL), where the catalog's
    /// `responseSchemaRef`s point: it gives the tools their `outputSchema`. Default: the
    /// service's own, `<base-url>/openapi.json`, fetched at start. If it cannot be had, the
    /// gateway serves the tools without `outputSchema` (and says so in the log).
    #[arg(long, env = "OPENAPI_DOCUMENT", value_name = "FILE|URL")]
    openapi: Option<String>,

    /// HTTP: seconds after which an idle session is closed.
    #[arg(
        long,
        env = "MCP_SESSION_IDLE_SECS",
        value_name = "SECS",
        default_value_t = 60
    )]
    session_idle_secs: u64,
}

/// `--client-auth`: how the HTTP transport's clients authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ClientAuth {
    None,
    Tokens,
}

fn main() -> anyhow::Result<()> {
    // Logs go to stderr: stdout belongs to the JSON-RPC stream in stdio mode.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .target(env_logger::Target::Stderr)
        .init();
    let args = Args::parse();

    let base_url = BaseUrl::parse(&args.base_url)
        .map_err(|error| anyhow::anyhow!("--base-url / SERVICE_BASE_URL: {error}"))?;
    let catalog = load_catalog(&args.catalog);
    if let Err(error) = &catalog {
        log::error!("{error}; tools/list and tools/call will answer with this error");
    }
    let bearer = BearerToken::new(std::env::var(TOKEN_ENV).ok());
    if bearer.is_none() {
        log::info!("{TOKEN_ENV} is not set: write tools will refuse to run");
    }
    let selection = Selection {
        read_only: args.read_only,
        names: (!args.tools.is_empty()).then(|| args.tools.clone()),
    };

    // One thread. The gateway serves the MCP client next to it, and a call is mostly waiting on
    // sockets; on the multi-thread runtime each call bounced between the worker threads (futex
    // and eventfd wake-ups), which cost latency, at the tail most of all on a busy machine.
    // See "Latency" in docs/mcp.md.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let source = args
        .openapi
        .clone()
        .unwrap_or_else(|| format!("{}/openapi.json", args.base_url.trim_end_matches('/')));
    let openapi = runtime.block_on(load_openapi(&source));
    let gateway = Gateway::new(GatewayConfig {
        catalog,
        base_url,
        bearer,
        selection,
        openapi,
    })?;
    runtime.block_on(async move {
        match args.http {
            Some(addr) => {
                let client_tokens = match args.client_auth {
                    ClientAuth::Tokens => Some(ClientTokens::new(&args.base_url)?),
                    ClientAuth::None if !addr.ip().is_loopback() => anyhow::bail!(
                        "--http {addr}: a non-loopback address needs --client-auth tokens \
                         (anyone who reaches it could call the tools)"
                    ),
                    ClientAuth::None => None,
                };
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("--http: cannot listen on {addr}"))?;
                // One line on stdout so scripts can learn the port when ADDR ends in :0.
                println!(
                    "tool-gateway listening on http://{}/mcp",
                    listener.local_addr()?
                );
                let mut limits = HttpLimits {
                    max_sessions: args.max_sessions,
                    idle_session: std::time::Duration::from_secs(args.session_idle_secs),
                    client_tokens,
                    ..HttpLimits::default()
                };
                if !args.allowed_origins.is_empty() {
                    limits.allowed_origins = args.allowed_origins;
                }
                tool_gateway::serve_http(gateway, listener, &limits).await
            }
            None => tool_gateway::serve_stdio(gateway).await,
        }
    })
}

/// Reads and validates the catalog. A file that cannot be read is reported like invalid JSON
/// (the path stays in the log, never in a JSON-RPC answer).
fn load_catalog(path: &std::path::Path) -> Result<Catalog, CatalogError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Catalog::from_json_str(&text),
        Err(error) => {
            log::error!("cannot read the tool catalog {}: {error}", path.display());
            Err(CatalogError::InvalidJson)
        }
    }
}

/// The OpenAPI document from a file or an http(s) URL; `None` (with a warning) when it cannot
/// be read or is not JSON: the tools are then listed without `outputSchema`.
async fn load_openapi(source: &str) -> Option<serde_json::Value> {
    let text = if source.starts_with("http://") || source.starts_with("https://") {
        let fetched = async {
            let client = reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(3))
                .no_proxy()
                .build()?;
            client
                .get(source)
                .send()
                .await?
                .error_for_status()?
                .text()
                .await
        };
        fetched.await.map_err(|e| e.to_string())
    } else {
        std::fs::read_to_string(source).map_err(|e| e.to_string())
    };
    match text.and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string())) {
        Ok(doc) => Some(doc),
        Err(error) => {
            log::warn!("OpenAPI document {source}: {error}; tools are listed without outputSchema");
            None
        }
    }
}
