//! Configuration, read from the environment once at start-up (a `.env` file is read first if
//! present). A bad value stops start-up with one line naming the variable.

use std::fmt;
use std::net::SocketAddr;

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
    pub bind: SocketAddr,
    pub service_name: String,
    /// `None`: derive `<scheme>://<host>/problems` from each request.
    pub problem_base_url: Option<String>,
    pub max_body_bytes: usize,
    pub rate_limit_per_minute: Option<u32>,
    pub trust_forwarded_for: bool,
    pub workers: Option<usize>,
    pub cors_origins: Vec<String>,
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
pub const DEFAULT_MAX_BODY_BYTES: usize = 1_048_576;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            database_url: DEFAULT_DATABASE_URL.to_owned(),
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            service_name: DEFAULT_SERVICE_NAME.to_owned(),
            problem_base_url: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            rate_limit_per_minute: None,
            trust_forwarded_for: false,
            workers: None,
            cors_origins: Vec::new(),
        }
    }
}

impl Settings {
    /// Reads the process environment (after loading `.env` if present).
    pub fn from_env() -> Result<Settings, ConfigError> {
        let _ = dotenvy::dotenv();
        Settings::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads settings through `lookup`, so tests can pass a map instead of the environment.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Settings, ConfigError> {
        let defaults = Settings::default();
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        Ok(Settings {
            database_url: get("DATABASE_URL").unwrap_or(defaults.database_url),
            bind: parse("BIND", get("BIND"), |v| {
                v.parse().map_err(|_| "expected host:port")
            })?
            .unwrap_or(defaults.bind),
            service_name: get("SERVICE_NAME").unwrap_or(defaults.service_name),
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
            trust_forwarded_for: parse("TRUST_FORWARDED_FOR", get("TRUST_FORWARDED_FOR"), |v| {
                match v.to_ascii_lowercase().as_str() {
                    "true" | "1" | "yes" => Ok(true),
                    "false" | "0" | "no" => Ok(false),
                    _ => Err("expected true or false"),
                }
            })?
            .unwrap_or(false),
            workers: parse("WORKERS", get("WORKERS"), |v| {
                v.parse::<usize>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or("expected a positive whole number")
            })?,
            cors_origins: get("CORS_ORIGINS")
                .map(|v| {
                    v.split(',')
                        .map(|s| s.trim().to_owned())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
        })
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
        assert!(!s.trust_forwarded_for);
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
    fn secret_is_hidden() {
        assert_eq!(format!("{:?}", Secret::new("hunter2")), "***");
    }
}
