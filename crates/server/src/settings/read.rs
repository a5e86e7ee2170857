//! [`Settings::from_lookup`]: every variable read declaratively, one line each where it can
//! be, through [`Vars`]: a bad value stops start-up with one line naming the variable.

use std::time::Duration;

use config_vars::{Vars, refuse};

use http_edge::middleware::access_log::LogFormat;
use http_edge::middleware::client::TrustedProxies;
use http_edge::sse::StreamLimits;
use storage::replicas::ReadPolicy;
use trace_context::export::{Encoding, OtlpConfig};

use super::ApiAuth;
use super::{
    ConfigError, DEFAULT_MAX_CONNECTIONS_PER_CLIENT, DEFAULT_REQUEST_TIMEOUT, MIN_SECRET_BYTES,
    Secret, Settings, parse_database,
};

const POSITIVE: &str = "expected a positive whole number";

impl Settings {
    /// Reads settings through `lookup`, so tests can pass a map instead of the environment.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Settings, ConfigError> {
        let v = Vars::new(lookup);
        let d = Settings::default();
        let database_url = v.get("DATABASE_URL").unwrap_or(d.database_url);
        parse_database(&database_url)?;
        let t = d.db_timeouts;
        let service_name = v.get("SERVICE_NAME").unwrap_or(d.service_name);
        let standbys = v.parse("DATABASE_REPLICA_URLS", |s| {
            storage::replicas::standbys(s, &database_url)
        })?;
        let encoding = v.parse("OTEL_EXPORTER_OTLP_PROTOCOL", |s| {
            Encoding::parse(s).ok_or("expected http/protobuf or http/json")
        })?;
        Ok(Settings {
            database_url,
            db_timeouts: storage::Timeouts {
                checkout: v.millis("DB_CHECKOUT_TIMEOUT_MS", t.checkout)?,
                connect: v.millis("DB_CONNECT_TIMEOUT_MS", t.connect)?,
                statement: v.millis("DB_STATEMENT_TIMEOUT_MS", t.statement)?,
                lock: v.millis("DB_LOCK_TIMEOUT_MS", t.lock)?,
                queue: v.millis("DB_QUEUE_TIMEOUT_MS", t.queue)?,
                answer: v.millis("DB_ANSWER_TIMEOUT_MS", t.answer)?,
            },
            sqlite_synchronous: v
                .parse("SQLITE_SYNCHRONOUS", |s| {
                    storage::Synchronous::parse(s).ok_or("expected full or normal")
                })?
                .unwrap_or_default(),
            sqlite_max_pages: v.number(
                "SQLITE_MAX_PAGES",
                1..,
                "expected a positive number of pages",
            )?,
            sqlite_accept_wal_loss: v.flag("ACCEPT_WAL_LOSS")?.unwrap_or(false),
            sqlite_quick_check: v
                .number(
                    "QUICK_CHECK_SECS",
                    0..=7 * 86_400,
                    "expected whole seconds, 0 to 604800",
                )?
                .map_or(d.sqlite_quick_check, |secs| {
                    (secs > 0).then(|| Duration::from_secs(secs))
                }),
            bind: v
                .parse("BIND", |s| s.parse().map_err(|_| "expected host:port"))?
                .unwrap_or(d.bind),
            service_name: service_name.clone(),
            api_keys: v.parse("API_KEYS", api_keys)?.unwrap_or_default(),
            api_key_header: v
                .parse("API_KEY_HEADER", http_edge::credentials::header_name)?
                .unwrap_or(d.api_key_header),
            jwt_secret: v.secret("JWT_SECRET", MIN_SECRET_BYTES)?,
            problem_base_url: v
                .get("PROBLEM_BASE_URL")
                .map(|s| s.trim_end_matches('/').to_owned()),
            max_body_bytes: v
                .number("MAX_BODY_BYTES", 1.., "expected a positive number of bytes")?
                .unwrap_or(d.max_body_bytes),
            rate_limit_per_minute: v.number("RATE_LIMIT_PER_MINUTE", 1.., POSITIVE)?,
            trusted_proxies: trusted_proxies(&v)?,
            request_timeout: v
                .number(
                    "REQUEST_TIMEOUT",
                    1..=3600,
                    "expected whole seconds, 1 to 3600",
                )?
                .map_or(DEFAULT_REQUEST_TIMEOUT, Duration::from_secs),
            max_connections_per_client: v
                .number("MAX_CONNECTIONS_PER_CLIENT", 1.., POSITIVE)?
                .unwrap_or(DEFAULT_MAX_CONNECTIONS_PER_CLIENT),
            workers: v.number("WORKERS", 1.., POSITIVE)?,
            cors_origins: v
                .parse("CORS_ORIGINS", http_edge::middleware::headers::origins)?
                .unwrap_or_default(),
            deprecation_form: v
                .parse("DEPRECATION_HEADER_FORM", |s| {
                    versioned_notes::DeprecationForm::parse(s).ok_or("expected true or rfc9745")
                })?
                .unwrap_or_default(),
            webhook_secret: v.secret("WEBHOOK_SECRET", MIN_SECRET_BYTES)?,
            webhook_secret_previous: match v.secret("WEBHOOK_SECRET_PREVIOUS", MIN_SECRET_BYTES)? {
                Some(_) if !v.is_set("WEBHOOK_SECRET") => {
                    return Err(refuse(
                        "WEBHOOK_SECRET_PREVIOUS",
                        "set without WEBHOOK_SECRET",
                    ));
                }
                previous => previous,
            },
            webhook_clock: webhooks::Clock::System,
            api_auth: v
                .parse("API_AUTH", |s| {
                    ApiAuth::parse(s).ok_or("expected off or tokens")
                })?
                .unwrap_or_default(),
            token_lifetime: token_lifetime(&v)?,
            token_max_active: v
                .number(
                    "TOKEN_MAX_ACTIVE",
                    1..=100_000,
                    "expected a whole number, 1 to 100000",
                )?
                .unwrap_or(tokens::MAX_ACTIVE_DEFAULT),
            idempotency_ttl: v
                .number(
                    "IDEMPOTENCY_TTL_SECS",
                    1..=30 * 86_400,
                    "expected whole seconds, 1 to 2592000 (30 days)",
                )?
                .map_or(idempotency::DEFAULT_TTL, Duration::from_secs),
            key_clock: idempotency::Clock::system(),
            drain: v
                .number("DRAIN_SECS", 0..=600, "expected whole seconds, 0 to 600")?
                .map_or(Duration::ZERO, Duration::from_secs),
            log_format: v
                .parse("LOG_FORMAT", |s| {
                    LogFormat::parse(s).ok_or("expected text or json")
                })?
                .unwrap_or_default(),
            metrics: v.flag("METRICS")?.unwrap_or(true),
            otlp: v.parse("OTEL_EXPORTER_OTLP_ENDPOINT", |endpoint| {
                OtlpConfig::new(endpoint, encoding, service_name)
            })?,
            replicas: standbys.unwrap_or_default(),
            replica_wait: v.millis("REPLICA_WAIT_MS", d.replica_wait)?,
            replica_reads: v
                .parse("REPLICA_READS", |s| match s {
                    "token" => Ok(ReadPolicy::WithToken),
                    "eventual" => Ok(ReadPolicy::Eventual),
                    _ => Err("expected token or eventual"),
                })?
                .unwrap_or_default(),
            event_streams: event_streams(&v)?,
            outbound_webhooks: outbound_webhooks::dispatch::Settings::read(&v)?,
        })
    }
}

fn event_streams<F: Fn(&str) -> Option<String>>(v: &Vars<F>) -> Result<StreamLimits, ConfigError> {
    let d = StreamLimits::default();
    Ok(StreamLimits {
        heartbeat: v.millis("EVENT_STREAM_HEARTBEAT_MS", d.heartbeat)?,
        poll: v.millis("EVENT_STREAM_POLL_MS", d.poll)?,
        max_age: v.millis("EVENT_STREAM_MAX_AGE_MS", d.max_age)?,
        per_client: v
            .number("EVENT_STREAMS_PER_CLIENT", 1.., POSITIVE)?
            .unwrap_or(d.per_client),
        total: v
            .number("EVENT_STREAMS_MAX", 1.., POSITIVE)?
            .unwrap_or(d.total),
    })
}

/// `TRUSTED_PROXIES`, or `TRUST_FORWARDED_FOR=true` meaning 1; the count, when given, wins.
fn trusted_proxies<F: Fn(&str) -> Option<String>>(
    v: &Vars<F>,
) -> Result<TrustedProxies, ConfigError> {
    let trust = v.flag("TRUST_FORWARDED_FOR")?;
    let count = v.number(
        "TRUSTED_PROXIES",
        0..=16,
        "expected a whole number of proxies, 0 to 16",
    )?;
    Ok(TrustedProxies(
        count.unwrap_or(usize::from(trust == Some(true))),
    ))
}

/// `TOKEN_MAX_DAYS` and `TOKEN_DEFAULT_DAYS` (not more than the maximum).
fn token_lifetime<F: Fn(&str) -> Option<String>>(
    v: &Vars<F>,
) -> Result<tokens::Lifetime, ConfigError> {
    let days = "expected whole days, 1 to 3650";
    let defaults = tokens::Lifetime::default();
    let max_days = v
        .number("TOKEN_MAX_DAYS", 1..=3650, days)?
        .unwrap_or(defaults.max_days);
    let default_days = v
        .number("TOKEN_DEFAULT_DAYS", 1..=3650, days)?
        .unwrap_or(defaults.default_days.min(max_days));
    if default_days > max_days {
        return Err(refuse(
            "TOKEN_DEFAULT_DAYS",
            "must not be more than TOKEN_MAX_DAYS",
        ));
    }
    Ok(tokens::Lifetime {
        default_days,
        max_days,
    })
}

fn api_keys(v: &str) -> Result<Vec<Secret>, &'static str> {
    let keys: Vec<&str> = v
        .split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .collect();
    if keys.iter().all(|k| k.len() >= MIN_SECRET_BYTES) {
        Ok(keys.into_iter().map(Secret::new).collect())
    } else {
        Err("every key must be at least 32 bytes (generate one with: openssl rand -hex 32)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::{DEFAULT_BIND, DEFAULT_DATABASE_URL};
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
