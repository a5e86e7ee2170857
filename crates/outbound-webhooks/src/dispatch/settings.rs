//! The dispatcher's settings and how they are read from the environment's variables.

use std::time::Duration;

use crate::{Allow, SigningKey};

#[derive(Debug, Clone)]
pub struct Settings {
    /// `WEBHOOK_SIGNING_KEY`; without one nothing is registered or delivered.
    pub key: Option<SigningKey>,
    /// `WEBHOOK_ENDPOINT_ALLOW`.
    pub allow: Allow,
    /// `WEBHOOK_MAX_ATTEMPTS` (8).
    pub max_attempts: i64,
    /// `WEBHOOK_RETRY_BASE_MS` (1,000) and `WEBHOOK_RETRY_MAX_MS` (3,600,000).
    pub retry_base: Duration,
    pub retry_max: Duration,
    /// `WEBHOOK_DELIVERY_TIMEOUT_MS` (10,000): an attempt's whole exchange.
    pub timeout: Duration,
    /// How often due endpoints are looked for without a wake-up (another process's events).
    pub poll: Duration,
    /// How long a rotated-out secret still signs.
    pub rotation_grace: Duration,
    /// Endpoints delivered at once.
    pub concurrency: usize,
    /// How long an endpoint's lease lasts unless renewed.
    pub lease: Duration,
    /// `WEBHOOK_ENDPOINTS_PER_OWNER` (50): endpoints one owner (the operator is one) may have.
    /// Each is a round of deliveries for every event of its owner's accounts.
    pub max_per_owner: i64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            key: None,
            allow: Allow::default(),
            max_attempts: 8,
            retry_base: Duration::from_secs(1),
            retry_max: Duration::from_secs(3_600),
            timeout: Duration::from_secs(10),
            poll: Duration::from_millis(500),
            rotation_grace: Duration::from_secs(24 * 3_600),
            concurrency: 32,
            lease: Duration::from_secs(20),
            max_per_owner: 50,
        }
    }
}

impl Settings {
    /// `WEBHOOK_SIGNING_KEY`, `WEBHOOK_ENDPOINT_ALLOW`, `WEBHOOK_MAX_ATTEMPTS`,
    /// `WEBHOOK_ENDPOINTS_PER_OWNER`,
    /// `WEBHOOK_RETRY_BASE_MS`, `WEBHOOK_RETRY_MAX_MS`, `WEBHOOK_DELIVERY_TIMEOUT_MS`, read
    /// through `v` (one line naming the variable for a bad value).
    pub fn read<F: Fn(&str) -> Option<String>>(
        v: &config_vars::Vars<F>,
    ) -> Result<Settings, config_vars::ConfigError> {
        let d = Settings::default();
        let key = v.secret("WEBHOOK_SIGNING_KEY", crate::secret::MIN_KEY_BYTES)?;
        let allow = match v.get("WEBHOOK_ENDPOINT_ALLOW") {
            Some(text) => Allow::parse(&text)
                .map_err(|why| config_vars::refuse("WEBHOOK_ENDPOINT_ALLOW", &why))?,
            None => Allow::default(),
        };
        let timeout = v.millis("WEBHOOK_DELIVERY_TIMEOUT_MS", d.timeout)?;
        Ok(Settings {
            key: key.and_then(|k| SigningKey::new(k.expose().as_bytes().to_vec())),
            allow,
            max_attempts: v
                .number(
                    "WEBHOOK_MAX_ATTEMPTS",
                    1..=100,
                    "expected 1 to 100 attempts",
                )?
                .unwrap_or(d.max_attempts),
            max_per_owner: v
                .number(
                    "WEBHOOK_ENDPOINTS_PER_OWNER",
                    1..=10_000,
                    "expected 1 to 10000 endpoints",
                )?
                .unwrap_or(d.max_per_owner),
            retry_base: v.millis("WEBHOOK_RETRY_BASE_MS", d.retry_base)?,
            retry_max: v.millis("WEBHOOK_RETRY_MAX_MS", d.retry_max)?,
            timeout,
            // Renewed after each attempt: it must outlast the longest one.
            lease: d.lease.max(timeout.saturating_mul(2)),
            ..d
        })
    }
}
