//! Configuration, read from the environment once at start-up (a `.env` file is read first if
//! present). A bad value stops start-up with one line naming the variable.

use std::net::SocketAddr;
use std::time::Duration;

mod read;

use http_edge::middleware::access_log::LogFormat;
use http_edge::middleware::client::TrustedProxies;
use trace_context::export::OtlpConfig;

pub use config_vars::{ConfigError, Secret};

/// The `API_AUTH` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApiAuth {
    #[default]
    Off,
    Tokens,
}

impl ApiAuth {
    /// The mode and what it means, for the start-up log.
    pub fn describe(self) -> &'static str {
        match self {
            ApiAuth::Off => {
                "off (no credential is checked but the example routes' and the webhook's)"
            }
            ApiAuth::Tokens => {
                "tokens (every route but the public ones needs a bearer token or the operator key)"
            }
        }
    }

    pub fn parse(value: &str) -> Option<ApiAuth> {
        match value.trim().to_ascii_lowercase().as_str() {
            "off" | "none" | "false" => Some(ApiAuth::Off),
            "tokens" => Some(ApiAuth::Tokens),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub database_url: String,
    /// `DB_CHECKOUT_TIMEOUT_MS`, `DB_CONNECT_TIMEOUT_MS`, `DB_STATEMENT_TIMEOUT_MS`,
    /// `DB_LOCK_TIMEOUT_MS`, `DB_QUEUE_TIMEOUT_MS`: every wait on the database is bounded.
    pub db_timeouts: storage::Timeouts,
    /// `SQLITE_SYNCHRONOUS`: `full` (default: an acknowledged write survives power loss) or
    /// `normal`.
    pub sqlite_synchronous: storage::Synchronous,
    /// `SQLITE_MAX_PAGES`: a cap on the SQLite file in pages (4 KiB each); writes past it are
    /// refused like writes on a full disk (507). Unset: no cap.
    pub sqlite_max_pages: Option<u32>,
    /// `ACCEPT_WAL_LOSS` (false): start normally although the SQLite WAL lost committed
    /// transactions (or an earlier start found so); otherwise writes are refused with 503
    /// `storage-damaged` until an operator restores a backup or sets this.
    pub sqlite_accept_wal_loss: bool,
    /// `QUICK_CHECK_SECS` (3,600; 0 turns it off): how often a background `PRAGMA
    /// quick_check` reads the SQLite file; damage turns the instance not ready.
    pub sqlite_quick_check: Option<Duration>,
    pub bind: SocketAddr,
    pub service_name: String,
    /// `API_KEYS`: keys accepted by `/machine/health` (none: it always answers 401).
    pub api_keys: Vec<Secret>,
    /// `API_KEY_HEADER`: the header carrying the API key.
    pub api_key_header: String,
    /// `JWT_SECRET`: HS256 secret of `/examples/protected` (under 32 bytes: always 401).
    pub jwt_secret: Option<Secret>,
    /// `None`: derive `<scheme>://<host>/problems` from each request.
    pub problem_base_url: Option<String>,
    pub max_body_bytes: usize,
    pub rate_limit_per_minute: Option<u32>,
    /// `TRUSTED_PROXIES`: how many reverse proxies in front of the service append to
    /// `X-Forwarded-For` (`TRUST_FORWARDED_FOR=true` means 1). 0 (default): the socket peer is
    /// the client, and forwarding headers are ignored everywhere.
    pub trusted_proxies: TrustedProxies,
    /// `REQUEST_TIMEOUT` (seconds, default 30): a request's body must have arrived this long
    /// after its head, or the answer is 408 and the connection is closed.
    pub request_timeout: Duration,
    /// `MAX_CONNECTIONS_PER_CLIENT` (default 64): open connections one client address may hold
    /// (the socket peer; with trusted proxies, the proxies are the peers and are not capped).
    pub max_connections_per_client: usize,
    pub workers: Option<usize>,
    pub cors_origins: Vec<String>,
    /// `DEPRECATION_HEADER_FORM`: `true` (default, `Deprecation: true`) or `rfc9745`
    /// (`Deprecation: @1767225600`, the V1 deprecation date) on every V1 response.
    pub deprecation_form: versioned_notes::DeprecationForm,
    /// `WEBHOOK_SECRET`. `None`: every webhook delivery is refused (401) and start-up warns.
    pub webhook_secret: Option<Secret>,
    /// `WEBHOOK_SECRET_PREVIOUS`: also accepted, for rotation without downtime.
    pub webhook_secret_previous: Option<Secret>,
    /// The clock of webhook freshness checks: the system's; never read from the environment
    /// (the tests of the shared vectors, which carry their own time, fix it).
    pub webhook_clock: webhooks::Clock,
    /// `API_AUTH`: `off` (default) or `tokens` (areas A, B, C and E require
    /// `Authorization: Bearer <token>` issued by area D).
    pub api_auth: ApiAuth,
    /// `TOKEN_DEFAULT_DAYS` (90) and `TOKEN_MAX_DAYS` (365): how long an issued token lives
    /// when its request names no expiry, and the longest it may name.
    pub token_lifetime: tokens::Lifetime,
    /// `TOKEN_MAX_ACTIVE` (100): active tokens one user may hold; one more is 409.
    pub token_max_active: u32,
    /// `IDEMPOTENCY_TTL_SECS` (86,400): how long a create's `Idempotency-Key` and first answer
    /// are kept for retries; pruned in the background after that.
    pub idempotency_ttl: Duration,
    /// The clocks key expiry reads: the system's; never read from the environment (the tests
    /// step its wall clock).
    pub key_clock: idempotency::Clock,
    /// `DRAIN_SECS` (0): on SIGTERM, how long `/health/ready` answers 503 while everything
    /// else is still served, before the graceful shutdown begins.
    pub drain: Duration,
    /// `LOG_FORMAT`: `text` (default) or `json`, one object per line with the access record's
    /// fields.
    pub log_format: LogFormat,
    /// `METRICS` (true): whether requests are counted and timed for `/metrics` (false leaves
    /// the pool, storage and process metrics; the bench measures what recording costs).
    pub metrics: bool,
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` (unset: no export): each request's span is sent to this
    /// OpenTelemetry collector (`http://collector:4318`; spans go to `/v1/traces`), encoded as
    /// `OTEL_EXPORTER_OTLP_PROTOCOL` says (`http/protobuf`, the default, or `http/json`).
    pub otlp: Option<OtlpConfig>,
    /// `DATABASE_REPLICA_URLS` (none): PostgreSQL standbys (comma-separated URLs) that serve
    /// reads a `Consistency-Token` allows, or every read with `REPLICA_READS=eventual`.
    pub replicas: Vec<storage::Database>,
    /// `REPLICA_WAIT_MS` (50): the most a read with a token waits for a standby to catch up
    /// before the primary serves it.
    pub replica_wait: Duration,
    /// `REPLICA_READS`: `token` (default: only reads with a `Consistency-Token`) or `eventual`.
    pub replica_reads: storage::replicas::ReadPolicy,
    /// `EVENT_STREAM_HEARTBEAT_MS` (15,000), `EVENT_STREAM_POLL_MS` (500),
    /// `EVENT_STREAM_MAX_AGE_MS` (900,000), `EVENT_STREAMS_PER_CLIENT` (16),
    /// `EVENT_STREAMS_MAX` (1,000): the live event streams.
    pub event_streams: http_edge::sse::StreamLimits,
    /// `WEBHOOK_SIGNING_KEY`, `WEBHOOK_ENDPOINT_ALLOW` and the delivery limits
    /// (`outbound_webhooks::dispatch::Settings::read`).
    pub outbound_webhooks: outbound_webhooks::dispatch::Settings,
}

pub const DEFAULT_DATABASE_URL: &str = "sqlite://data/service.db";
pub const DEFAULT_BIND: &str = "127.0.0.1:8080";
pub const DEFAULT_SERVICE_NAME: &str = "notes-service";
pub use http_edge::credentials::DEFAULT_API_KEY_HEADER;
pub use http_edge::middleware::limits::DEFAULT_MAX_BODY_BYTES;
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
pub const DEFAULT_MAX_CONNECTIONS_PER_CLIENT: usize = 64;
/// The shortest `WEBHOOK_SECRET`, API key or `JWT_SECRET` accepted: 32 bytes (256 bits, the
/// HMAC-SHA256 output size; RFC 7518 §3.2 requires at least that for HS256). A short webhook
/// secret was recovered online in 89 requests.
pub const MIN_SECRET_BYTES: usize = credentials::MIN_SECRET_BYTES;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            database_url: DEFAULT_DATABASE_URL.to_owned(),
            db_timeouts: storage::Timeouts::default(),
            sqlite_synchronous: storage::Synchronous::default(),
            sqlite_max_pages: None,
            sqlite_accept_wal_loss: false,
            sqlite_quick_check: Some(Duration::from_secs(3_600)),
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            service_name: DEFAULT_SERVICE_NAME.to_owned(),
            api_keys: Vec::new(),
            api_key_header: DEFAULT_API_KEY_HEADER.to_owned(),
            jwt_secret: None,
            problem_base_url: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            rate_limit_per_minute: None,
            trusted_proxies: TrustedProxies(0),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_connections_per_client: DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
            workers: None,
            cors_origins: Vec::new(),
            deprecation_form: versioned_notes::DeprecationForm::default(),
            webhook_secret: None,
            webhook_secret_previous: None,
            webhook_clock: webhooks::Clock::System,
            api_auth: ApiAuth::Off,
            token_lifetime: tokens::Lifetime::default(),
            token_max_active: tokens::MAX_ACTIVE_DEFAULT,
            idempotency_ttl: idempotency::DEFAULT_TTL,
            key_clock: idempotency::Clock::system(),
            drain: Duration::ZERO,
            log_format: LogFormat::Text,
            metrics: true,
            otlp: None,
            replicas: Vec::new(),
            replica_wait: Duration::from_millis(50),
            replica_reads: storage::replicas::ReadPolicy::WithToken,
            event_streams: http_edge::sse::StreamLimits::default(),
            outbound_webhooks: outbound_webhooks::dispatch::Settings::default(),
        }
    }
}

impl Settings {
    /// The database `DATABASE_URL` names, with the configured timeouts and durability.
    pub fn database(&self) -> Result<storage::Database, ConfigError> {
        Ok(parse_database(&self.database_url)?
            .with_timeouts(self.db_timeouts)
            .with_synchronous(self.sqlite_synchronous)
            .with_max_pages(self.sqlite_max_pages)
            .with_accept_wal_loss(self.sqlite_accept_wal_loss)
            .with_quick_check_every(self.sqlite_quick_check))
    }

    /// The standbys' pools (the primary's timeouts), when `DATABASE_REPLICA_URLS` names any.
    pub fn replica_pools(
        &self,
    ) -> Result<Option<storage::replicas::Replicas>, storage::StorageError> {
        if self.replicas.is_empty() {
            return Ok(None);
        }
        let standbys = self
            .replicas
            .iter()
            .map(|db| db.clone().with_timeouts(self.db_timeouts))
            .collect();
        let pool_size = storage::Backend::Postgres.pool_size();
        storage::replicas::Replicas::new(standbys, pool_size, self.replica_wait, self.replica_reads)
            .map(Some)
    }

    /// Reads the process environment (after loading `.env` if present).
    pub fn from_env() -> Result<Settings, ConfigError> {
        let _ = dotenvy::dotenv();
        Settings::from_lookup(|name| std::env::var(name).ok())
    }
}

fn parse_database(url: &str) -> Result<storage::Database, ConfigError> {
    storage::Database::parse(url).map_err(|e| ConfigError {
        variable: "DATABASE_URL",
        message: e.to_string(),
    })
}
