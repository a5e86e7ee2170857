//! Configuration, read from the environment once at start-up (a `.env` file is read first if
//! present). A bad value stops start-up with one line naming the variable.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use http_edge::middleware::client::TrustedProxies;

/// A secret value: printed as `***` by Debug and Display so it never reaches a log line.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
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
    /// A fixed "now" (unix seconds) for webhook freshness checks instead of the system clock.
    /// For tests only (the shared test vectors carry their own time); never read from the
    /// environment.
    pub webhook_fixed_now: Option<i64>,
    /// `API_AUTH`: `off` (default) or `tokens` (areas A, B, C and E require
    /// `Authorization: Bearer <token>` issued by area D).
    pub api_auth: crate::middleware::token_auth::ApiAuth,
    /// `TOKEN_DEFAULT_DAYS` (90) and `TOKEN_MAX_DAYS` (365): how long an issued token lives
    /// when its request names no expiry, and the longest it may name.
    pub token_lifetime: tokens::Lifetime,
    /// `TOKEN_MAX_ACTIVE` (100): active tokens one user may hold; one more is 409.
    pub token_max_active: u32,
    /// `IDEMPOTENCY_TTL_SECS` (86,400): how long a create's `Idempotency-Key` and first answer
    /// are kept for retries; pruned in the background after that.
    pub idempotency_ttl: Duration,
}

#[derive(Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub variable: &'static str,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid configuration: {}: {}",
            self.variable, self.message
        )
    }
}

impl std::error::Error for ConfigError {}

pub const DEFAULT_DATABASE_URL: &str = "sqlite://data/service.db";
pub const DEFAULT_BIND: &str = "127.0.0.1:8080";
pub const DEFAULT_SERVICE_NAME: &str = "notes-service";
pub const DEFAULT_API_KEY_HEADER: &str = "X-API-Key";
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
            webhook_fixed_now: None,
            api_auth: crate::middleware::token_auth::ApiAuth::Off,
            token_lifetime: tokens::Lifetime::default(),
            token_max_active: tokens::MAX_ACTIVE_DEFAULT,
            idempotency_ttl: idempotency::DEFAULT_TTL,
        }
    }
}

impl Settings {
    /// The database `DATABASE_URL` names, with the configured timeouts and durability.
    pub fn database(&self) -> Result<storage::Database, ConfigError> {
        Ok(parse_database(&self.database_url)?
            .with_timeouts(self.db_timeouts)
            .with_synchronous(self.sqlite_synchronous)
            .with_max_pages(self.sqlite_max_pages))
    }

    /// Reads the process environment (after loading `.env` if present).
    pub fn from_env() -> Result<Settings, ConfigError> {
        let _ = dotenvy::dotenv();
        Settings::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads settings through `lookup`, so tests can pass a map instead of the environment.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Settings, ConfigError> {
        let defaults = Settings::default();
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let database_url = get("DATABASE_URL").unwrap_or(defaults.database_url);
        parse_database(&database_url)?;
        let t = defaults.db_timeouts;
        let millis = |variable: &'static str, default: Duration| {
            parse(variable, get(variable), |v| {
                v.parse::<u64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .map(Duration::from_millis)
                    .ok_or("expected a positive number of milliseconds")
            })
            .map(|v| v.unwrap_or(default))
        };
        Ok(Settings {
            database_url,
            db_timeouts: storage::Timeouts {
                checkout: millis("DB_CHECKOUT_TIMEOUT_MS", t.checkout)?,
                connect: millis("DB_CONNECT_TIMEOUT_MS", t.connect)?,
                statement: millis("DB_STATEMENT_TIMEOUT_MS", t.statement)?,
                lock: millis("DB_LOCK_TIMEOUT_MS", t.lock)?,
                queue: millis("DB_QUEUE_TIMEOUT_MS", t.queue)?,
                answer: millis("DB_ANSWER_TIMEOUT_MS", t.answer)?,
            },
            sqlite_synchronous: parse("SQLITE_SYNCHRONOUS", get("SQLITE_SYNCHRONOUS"), |v| {
                storage::Synchronous::parse(v).ok_or("expected full or normal")
            })?
            .unwrap_or_default(),
            sqlite_max_pages: parse("SQLITE_MAX_PAGES", get("SQLITE_MAX_PAGES"), |v| {
                v.parse::<u32>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or("expected a positive number of pages")
            })?,
            bind: parse("BIND", get("BIND"), |v| {
                v.parse().map_err(|_| "expected host:port")
            })?
            .unwrap_or(defaults.bind),
            service_name: get("SERVICE_NAME").unwrap_or(defaults.service_name),
            api_keys: parse("API_KEYS", get("API_KEYS"), |v| {
                let keys: Vec<&str> = v.split(',').map(str::trim).filter(|k| !k.is_empty()).collect();
                if keys.iter().all(|k| k.len() >= MIN_SECRET_BYTES) {
                    Ok(keys.into_iter().map(Secret::new).collect())
                } else {
                    Err("every key must be at least 32 bytes (generate one with: openssl rand -hex 32)")
                }
            })?
            .unwrap_or_default(),
            api_key_header: parse("API_KEY_HEADER", get("API_KEY_HEADER"), |v| {
                let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
                if v.chars().all(token) {
                    Ok(v.to_owned())
                } else {
                    Err("expected an HTTP header name such as X-API-Key")
                }
            })?
            .unwrap_or(defaults.api_key_header),
            jwt_secret: secret("JWT_SECRET", lookup("JWT_SECRET"))?,
            problem_base_url: get("PROBLEM_BASE_URL").map(|v| v.trim_end_matches('/').to_owned()),
            max_body_bytes: parse("MAX_BODY_BYTES", get("MAX_BODY_BYTES"), |v| {
                v.parse::<usize>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or("expected a positive number of bytes")
            })?
            .unwrap_or(defaults.max_body_bytes),
            rate_limit_per_minute: parse(
                "RATE_LIMIT_PER_MINUTE",
                get("RATE_LIMIT_PER_MINUTE"),
                |v| {
                    v.parse::<u32>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or("expected a positive whole number")
                },
            )?,
            trusted_proxies: {
                let trust = parse("TRUST_FORWARDED_FOR", get("TRUST_FORWARDED_FOR"), |v| {
                    match v.to_ascii_lowercase().as_str() {
                        "true" | "1" | "yes" => Ok(true),
                        "false" | "0" | "no" => Ok(false),
                        _ => Err("expected true or false"),
                    }
                })?;
                let count = parse("TRUSTED_PROXIES", get("TRUSTED_PROXIES"), |v| {
                    v.parse::<usize>()
                        .ok()
                        .filter(|n| *n <= 16)
                        .ok_or("expected a whole number of proxies, 0 to 16")
                })?;
                TrustedProxies(count.unwrap_or(usize::from(trust == Some(true))))
            },
            request_timeout: parse("REQUEST_TIMEOUT", get("REQUEST_TIMEOUT"), |v| {
                v.parse::<u64>()
                    .ok()
                    .filter(|n| (1..=3600).contains(n))
                    .map(Duration::from_secs)
                    .ok_or("expected whole seconds, 1 to 3600")
            })?
            .unwrap_or(DEFAULT_REQUEST_TIMEOUT),
            max_connections_per_client: parse(
                "MAX_CONNECTIONS_PER_CLIENT",
                get("MAX_CONNECTIONS_PER_CLIENT"),
                |v| {
                    v.parse::<usize>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or("expected a positive whole number")
                },
            )?
            .unwrap_or(DEFAULT_MAX_CONNECTIONS_PER_CLIENT),
            workers: parse("WORKERS", get("WORKERS"), |v| {
                v.parse::<usize>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or("expected a positive whole number")
            })?,
            cors_origins: parse("CORS_ORIGINS", get("CORS_ORIGINS"), parse_origins)?
                .unwrap_or_default(),
            deprecation_form: parse(
                "DEPRECATION_HEADER_FORM",
                get("DEPRECATION_HEADER_FORM"),
                |v| versioned_notes::DeprecationForm::parse(v).ok_or("expected true or rfc9745"),
            )?
            .unwrap_or_default(),
            webhook_secret: secret("WEBHOOK_SECRET", lookup("WEBHOOK_SECRET"))?,
            webhook_secret_previous: match (
                lookup("WEBHOOK_SECRET").is_some(),
                secret("WEBHOOK_SECRET_PREVIOUS", lookup("WEBHOOK_SECRET_PREVIOUS"))?,
            ) {
                (false, Some(_)) => {
                    return Err(ConfigError {
                        variable: "WEBHOOK_SECRET_PREVIOUS",
                        message: "set without WEBHOOK_SECRET".to_owned(),
                    });
                }
                (_, previous) => previous,
            },
            webhook_fixed_now: None,
            api_auth: parse("API_AUTH", get("API_AUTH"), |v| {
                crate::middleware::token_auth::ApiAuth::parse(v).ok_or("expected off or tokens")
            })?
            .unwrap_or_default(),
            token_lifetime: {
                let days = |variable, default| {
                    parse(variable, get(variable), |v| {
                        v.parse::<u32>()
                            .ok()
                            .filter(|n| (1..=3650).contains(n))
                            .ok_or("expected whole days, 1 to 3650")
                    })
                    .map(|d| d.unwrap_or(default))
                };
                let defaults = tokens::Lifetime::default();
                let max_days = days("TOKEN_MAX_DAYS", defaults.max_days)?;
                let default_days = days("TOKEN_DEFAULT_DAYS", defaults.default_days.min(max_days))?;
                if default_days > max_days {
                    return Err(ConfigError {
                        variable: "TOKEN_DEFAULT_DAYS",
                        message: "must not be more than TOKEN_MAX_DAYS".to_owned(),
                    });
                }
                tokens::Lifetime {
                    default_days,
                    max_days,
                }
            },
            token_max_active: parse("TOKEN_MAX_ACTIVE", get("TOKEN_MAX_ACTIVE"), |v| {
                v.parse::<u32>()
                    .ok()
                    .filter(|n| (1..=100_000).contains(n))
                    .ok_or("expected a whole number, 1 to 100000")
            })?
            .unwrap_or(tokens::MAX_ACTIVE_DEFAULT),
            idempotency_ttl: parse("IDEMPOTENCY_TTL_SECS", get("IDEMPOTENCY_TTL_SECS"), |v| {
                v.parse::<u64>()
                    .ok()
                    .filter(|n| (1..=30 * 86_400).contains(n))
                    .map(Duration::from_secs)
                    .ok_or("expected whole seconds, 1 to 2592000 (30 days)")
            })?
            .unwrap_or(idempotency::DEFAULT_TTL),
        })
    }
}

/// A secret variable: unset is `None`; set but empty, whitespace only or shorter than
/// [`MIN_SECRET_BYTES`] is an error (an empty HMAC key makes every signature forgeable, a short
/// one can be guessed online). The value is used as is, never trimmed.
fn secret(variable: &'static str, raw: Option<String>) -> Result<Option<Secret>, ConfigError> {
    let refuse = |message: &str| ConfigError {
        variable,
        message: message.to_owned(),
    };
    match raw {
        None => Ok(None),
        Some(v) if v.trim().is_empty() => Err(refuse(
            "must not be empty or whitespace only (unset it to switch the feature off)",
        )),
        Some(v) if v.len() < MIN_SECRET_BYTES => Err(refuse(
            "must be at least 32 bytes (generate one with: openssl rand -hex 32)",
        )),
        Some(v) => Ok(Some(Secret::new(v))),
    }
}

fn parse_database(url: &str) -> Result<storage::Database, ConfigError> {
    storage::Database::parse(url).map_err(|e| ConfigError {
        variable: "DATABASE_URL",
        message: e.to_string(),
    })
}

/// Comma-separated origins, each `http(s)://host[:port]` with no path.
fn parse_origins(v: &str) -> Result<Vec<String>, &'static str> {
    let origins: Vec<String> = v
        .split(',')
        .map(|s| s.trim().trim_end_matches('/').to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    let valid = |o: &str| {
        let rest = o
            .strip_prefix("https://")
            .or_else(|| o.strip_prefix("http://"));
        rest.is_some_and(|host| {
            !host.is_empty()
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
        })
    };
    if origins.iter().all(|o| valid(o)) {
        Ok(origins)
    } else {
        Err("expected comma-separated origins like https://app.example.com")
    }
}

fn parse<T>(
    variable: &'static str,
    raw: Option<String>,
    f: impl FnOnce(&str) -> Result<T, &'static str>,
) -> Result<Option<T>, ConfigError> {
    raw.map(|v| {
        f(v.trim()).map_err(|message| ConfigError {
            variable,
            message: message.to_owned(),
        })
    })
    .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(pairs: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults() {
        let s = settings(&[]).unwrap();
        assert_eq!(s.database_url, DEFAULT_DATABASE_URL);
        assert_eq!(s.bind.to_string(), DEFAULT_BIND);
        assert_eq!(s.max_body_bytes, 1_048_576);
        assert_eq!(s.rate_limit_per_minute, None);
        assert_eq!(s.trusted_proxies, TrustedProxies(0));
        assert_eq!(s.request_timeout, Duration::from_secs(30));
        assert_eq!(s.max_connections_per_client, 64);
    }

    #[test]
    fn proxies_and_request_limits() {
        let proxies = |pairs: &[(&str, &str)]| settings(pairs).map(|s| s.trusted_proxies);
        assert_eq!(
            proxies(&[("TRUST_FORWARDED_FOR", "true")]),
            Ok(TrustedProxies(1))
        );
        assert_eq!(
            proxies(&[("TRUST_FORWARDED_FOR", "false")]),
            Ok(TrustedProxies(0))
        );
        assert_eq!(proxies(&[("TRUSTED_PROXIES", "2")]), Ok(TrustedProxies(2)));
        assert_eq!(
            proxies(&[("TRUSTED_PROXIES", "0"), ("TRUST_FORWARDED_FOR", "true")]),
            Ok(TrustedProxies(0)),
            "the count, when given, wins"
        );
        for (variable, bad) in [
            ("TRUSTED_PROXIES", "-1"),
            ("TRUSTED_PROXIES", "many"),
            ("REQUEST_TIMEOUT", "0"),
            ("REQUEST_TIMEOUT", "30s"),
            ("MAX_CONNECTIONS_PER_CLIENT", "0"),
        ] {
            assert_eq!(
                settings(&[(variable, bad)]).unwrap_err().variable,
                variable,
                "{bad}"
            );
        }
        let s = settings(&[
            ("REQUEST_TIMEOUT", "5"),
            ("MAX_CONNECTIONS_PER_CLIENT", "8"),
        ])
        .unwrap();
        assert_eq!(s.request_timeout, Duration::from_secs(5));
        assert_eq!(s.max_connections_per_client, 8);
    }

    #[test]
    fn database_url_scheme_and_timeouts() {
        for bad in ["mysql://host/db", "postgress://u@h/db"] {
            let err = settings(&[("DATABASE_URL", bad)]).unwrap_err();
            assert_eq!(err.variable, "DATABASE_URL", "{bad}");
        }
        assert_eq!(
            settings(&[("DATABASE_URL", "data/x.db")])
                .unwrap()
                .database()
                .unwrap()
                .backend(),
            storage::Backend::Sqlite
        );
        let s = settings(&[
            ("DB_STATEMENT_TIMEOUT_MS", "700"),
            ("SQLITE_SYNCHRONOUS", "normal"),
        ])
        .unwrap();
        assert_eq!(s.db_timeouts.statement, Duration::from_millis(700));
        assert_eq!(s.sqlite_synchronous, storage::Synchronous::Normal);
        assert_eq!(
            settings(&[]).unwrap().sqlite_synchronous,
            storage::Synchronous::Full
        );
        for var in [
            "DB_CHECKOUT_TIMEOUT_MS",
            "DB_LOCK_TIMEOUT_MS",
            "DB_QUEUE_TIMEOUT_MS",
        ] {
            assert_eq!(settings(&[(var, "0")]).unwrap_err().variable, var);
        }
        assert_eq!(
            settings(&[("SQLITE_SYNCHRONOUS", "off")])
                .unwrap_err()
                .variable,
            "SQLITE_SYNCHRONOUS"
        );
    }

    #[test]
    fn deprecation_header_form() {
        use versioned_notes::DeprecationForm;
        assert_eq!(
            settings(&[]).unwrap().deprecation_form,
            DeprecationForm::Boolean
        );
        let s = settings(&[("DEPRECATION_HEADER_FORM", "rfc9745")]).unwrap();
        assert_eq!(s.deprecation_form, DeprecationForm::Rfc9745);
        assert_eq!(
            settings(&[("DEPRECATION_HEADER_FORM", "date")])
                .unwrap_err()
                .variable,
            "DEPRECATION_HEADER_FORM"
        );
    }

    #[test]
    fn bad_values_name_the_variable() {
        assert_eq!(settings(&[("BIND", "nope")]).unwrap_err().variable, "BIND");
        assert_eq!(
            settings(&[("MAX_BODY_BYTES", "-1")]).unwrap_err().variable,
            "MAX_BODY_BYTES"
        );
        assert_eq!(
            settings(&[("RATE_LIMIT_PER_MINUTE", "0")])
                .unwrap_err()
                .variable,
            "RATE_LIMIT_PER_MINUTE"
        );
        assert_eq!(
            settings(&[("TRUST_FORWARDED_FOR", "maybe")])
                .unwrap_err()
                .variable,
            "TRUST_FORWARDED_FOR"
        );
    }

    #[test]
    fn cors_origins_are_validated() {
        let s = settings(&[("CORS_ORIGINS", "https://a.example, http://localhost:3000/")]).unwrap();
        assert_eq!(
            s.cors_origins,
            vec!["https://a.example", "http://localhost:3000"]
        );
        for bad in ["*", "a.example", "https://a.example/path", "ftp://x"] {
            assert_eq!(
                settings(&[("CORS_ORIGINS", bad)]).unwrap_err().variable,
                "CORS_ORIGINS"
            );
        }
    }

    #[test]
    fn example_credentials() {
        let (k1, k2) = ("k".repeat(32), "key-".repeat(10));
        let jwt = "  spaces count, and so do the other 32 bytes  ";
        let s = settings(&[
            ("API_KEYS", &format!(" {k1}, ,{k2} ")),
            ("API_KEY_HEADER", "X-Machine-Key"),
            ("JWT_SECRET", jwt),
        ])
        .unwrap();
        assert_eq!(s.api_keys, vec![Secret::new(&k1), Secret::new(&k2)]);
        assert_eq!(s.api_key_header, "X-Machine-Key");
        assert_eq!(s.jwt_secret, Some(Secret::new(jwt)));
        // Weak credentials stop start-up, naming the variable.
        for (variable, weak) in [
            ("API_KEYS", format!("{k1},a")),
            ("JWT_SECRET", " ".repeat(32)),
            ("JWT_SECRET", "short".to_owned()),
        ] {
            assert_eq!(
                settings(&[(variable, &weak)]).unwrap_err().variable,
                variable,
                "{weak:?}"
            );
        }
        let d = settings(&[]).unwrap();
        assert!(d.api_keys.is_empty() && d.jwt_secret.is_none());
        assert_eq!(d.api_key_header, "X-API-Key");
        assert_eq!(
            settings(&[("API_KEY_HEADER", "bad header")])
                .unwrap_err()
                .variable,
            "API_KEY_HEADER"
        );
    }

    #[test]
    fn webhook_secrets() {
        let s = settings(&[]).unwrap();
        assert_eq!(s.webhook_secret, None);
        assert_eq!(s.webhook_secret_previous, None);
        let (new, old) = (
            " whsec new, padded to 32 bytes and more ",
            "whsec_old_".repeat(4),
        );
        let s = settings(&[("WEBHOOK_SECRET", new), ("WEBHOOK_SECRET_PREVIOUS", &old)]).unwrap();
        assert_eq!(s.webhook_secret, Some(Secret::new(new)));
        assert_eq!(s.webhook_secret_previous, Some(Secret::new(&old)));
        for weak in [
            "",
            " ",
            "\t\n",
            &" ".repeat(40),
            "x",
            "whsec_31_bytes_are_one_too_few_",
        ] {
            let err = settings(&[("WEBHOOK_SECRET", weak)]).unwrap_err();
            assert_eq!(err.variable, "WEBHOOK_SECRET", "{weak:?}");
            let err = settings(&[("WEBHOOK_SECRET", new), ("WEBHOOK_SECRET_PREVIOUS", weak)])
                .unwrap_err();
            assert_eq!(err.variable, "WEBHOOK_SECRET_PREVIOUS");
        }
        let err = settings(&[("WEBHOOK_SECRET_PREVIOUS", &old)]).unwrap_err();
        assert_eq!(err.variable, "WEBHOOK_SECRET_PREVIOUS");
        let hidden = "hunter2-hunter2-hunter2-hunter2-hunter2";
        let shown = format!("{:?}", settings(&[("WEBHOOK_SECRET", hidden)]).unwrap());
        assert!(!shown.contains(hidden));
    }

    #[test]
    fn secret_is_hidden() {
        assert_eq!(format!("{:?}", Secret::new("hunter2")), "***");
    }
}
