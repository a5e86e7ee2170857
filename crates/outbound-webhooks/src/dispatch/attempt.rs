//! One attempt: the signed request, what it found, and how it is logged.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Semaphore;

use ledger::Event;

use super::Inner;
use crate::model::Endpoint;
use crate::repo::NewDelivery;
use crate::{Allow, SigningKey};

/// An attempt to log.
pub(super) struct Logged {
    message_id: String,
    event_id: i64,
    attempt: i64,
    outcome: &'static str,
    found: Attempt,
    /// The pause before the next attempt (ms), when there is one.
    retry_in: Option<i64>,
}

impl Logged {
    pub(super) fn new(
        event: &Event,
        attempt: i64,
        outcome: &'static str,
        found: Attempt,
        next: Option<i64>,
    ) -> Self {
        Logged {
            message_id: message_id(event),
            event_id: event.id,
            attempt,
            outcome,
            found,
            retry_in: next,
        }
    }

    /// The log row, written at `now_ms` (the database's clock).
    pub(super) fn as_new(&self, endpoint_id: i64, now_ms: i64) -> NewDelivery<'_> {
        NewDelivery {
            endpoint_id,
            message_id: &self.message_id,
            event_id: self.event_id,
            attempt: self.attempt,
            outcome: self.outcome,
            response_status: self.found.status,
            latency_ms: self.found.latency_ms,
            error: self.found.error.as_deref(),
            next_attempt_at: self.retry_in.map(|pause| now_ms.saturating_add(pause)),
            manual: false,
        }
    }
}

/// What an attempt found.
pub(super) struct Attempt {
    pub(super) status: Option<i64>,
    pub(super) latency_ms: i64,
    pub(super) error: Option<String>,
}

impl Attempt {
    pub(super) fn delivered(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

/// The `webhook-id` of an event's deliveries: the same on every attempt and endpoint.
pub fn message_id(event: &Event) -> String {
    format!("evt_{}", event.id)
}

/// The JSON body of an event's delivery: Standard Webhooks' `type`, `timestamp` and `data`
/// (the event as `GET /accounts/{id}/events` lists it).
pub fn body(event: &Event) -> Vec<u8> {
    let data = serde_json::json!({
        "id": event.id,
        "aggregate_id": event.aggregate_id,
        "aggregate_type": ledger::AGGREGATE_TYPE,
        "event_type": event.event_type,
        "payload": event.payload,
        "sequence": event.sequence,
        "occurred_at": event.occurred_at,
    });
    let timestamp = format!("{}Z", event.occurred_at.replacen(' ', "T", 1));
    serde_json::json!({"type": event.event_type, "timestamp": timestamp, "data": data})
        .to_string()
        .into_bytes()
}

impl Inner {
    /// One attempt: the signed POST, within the timeout.
    pub(super) async fn send(
        &self,
        key: &SigningKey,
        endpoint: &Endpoint,
        versions: &[i64],
        event: &Event,
    ) -> Attempt {
        let started = Instant::now();
        let failed = |error: String| Attempt {
            status: None,
            latency_ms: i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX),
            error: Some(error),
        };
        let parsed = match url::Url::parse(&endpoint.url) {
            Ok(parsed) => parsed,
            Err(e) => return failed(format!("invalid URL: {e}")),
        };
        // Literal addresses never reach the resolver: checked here.
        if let Err(why) = self.settings.allow.check_url(&parsed) {
            return failed(format!("refused destination: {why}"));
        }
        let body = body(event);
        let (id, timestamp) = (message_id(event), storage::timestamp::local_ms() / 1_000);
        let signature = match key.signature(
            endpoint.id,
            &endpoint.secret_salt,
            versions,
            &id,
            timestamp,
            &body,
        ) {
            Ok(signature) => signature,
            Err(e) => return failed(e),
        };
        let sent = self
            .http
            .post(parsed)
            .header("content-type", "application/json")
            .header("webhook-id", &id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(body)
            .timeout(self.settings.timeout)
            .send()
            .await;
        match sent {
            Ok(res) => {
                let status = i64::from(res.status().as_u16());
                // The answer's body is not read: only its status counts.
                drop(res);
                Attempt {
                    status: Some(status),
                    latency_ms: i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX),
                    error: (!(200..300).contains(&status))
                        .then(|| format!("the endpoint answered {status}")),
                }
            }
            Err(e) => failed(describe(&e)),
        }
    }
}

/// A failed request in a few words (no URL: the log names the endpoint).
fn describe(e: &reqwest::Error) -> String {
    use std::error::Error as _;
    let mut cause = e.source();
    let mut deepest = None;
    while let Some(c) = cause {
        deepest = Some(c.to_string());
        cause = c.source();
    }
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "failed"
    };
    match deepest {
        Some(why) => format!("{kind}: {why}"),
        None => kind.to_owned(),
    }
}

/// Name lookups running at once. The system resolver blocks a thread until it answers, and an
/// attempt that times out cannot stop its lookup: with a resolver that hangs, every attempt
/// would leave one more thread waiting, until the database calls that share the dispatcher's
/// blocking threads found none. Past this many, a lookup waits (cancellably) for a free one.
pub(super) const LOOKUPS: usize = 8;

type Lookup = fn(&Allow, &str) -> std::io::Result<Vec<SocketAddr>>;

/// The HTTP client's name resolution: only addresses the allow-list lets it reach, at most
/// [`LOOKUPS`] at a time.
pub(super) struct Resolver {
    allow: Allow,
    lookup: Lookup,
    running: Arc<Semaphore>,
}

impl Resolver {
    pub(super) fn new(allow: Allow) -> Self {
        Self::with_lookup(allow, |allow, host| allow.resolve(host, 0))
    }

    fn with_lookup(allow: Allow, lookup: Lookup) -> Self {
        Resolver {
            allow,
            lookup,
            running: Arc::new(Semaphore::new(LOOKUPS)),
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let (allow, lookup) = (self.allow.clone(), self.lookup);
        let running = Arc::clone(&self.running);
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let permit = running
                .acquire_owned()
                .await
                .map_err(|e| Box::new(e) as BoxError)?;
            // The permit goes with the thread: it is free when the lookup ends, not when the
            // attempt that asked gives up.
            let found = tokio::task::spawn_blocking(move || {
                let found = lookup(&allow, &host);
                drop(permit);
                found
            })
            .await;
            match found {
                Ok(Ok(addrs)) => Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs),
                Ok(Err(e)) => Err(Box::new(e) as BoxError),
                Err(e) => Err(Box::new(e) as BoxError),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use reqwest::dns::Resolve;

    use super::*;

    static NOW: AtomicUsize = AtomicUsize::new(0);
    static MOST: AtomicUsize = AtomicUsize::new(0);

    /// A resolver that hangs for a while, counting how many lookups run at once.
    fn hanging(_: &Allow, _: &str) -> std::io::Result<Vec<SocketAddr>> {
        let now = NOW.fetch_add(1, Ordering::SeqCst) + 1;
        MOST.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(300));
        NOW.fetch_sub(1, Ordering::SeqCst);
        Ok(vec![SocketAddr::from(([192, 0, 2, 1], 0))])
    }

    /// Attempts that give up on their lookup (as one that times out does) do not free its
    /// thread, nor start more lookups than the bound while the first ones still hang.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lookups_that_hang_hold_at_most_the_bound_of_threads() {
        let resolver = Resolver::with_lookup(Allow::parse("").unwrap(), hanging);
        for _ in 0..(LOOKUPS * 4) {
            let name = "hangs.example".parse().unwrap();
            let asked = resolver.resolve(name);
            // The attempt gives up at once.
            let _ = tokio::time::timeout(Duration::from_millis(1), asked).await;
        }
        let name = "hangs.example".parse().unwrap();
        let answered = resolver.resolve(name).await.unwrap();
        assert_eq!(answered.count(), 1);
        assert!(MOST.load(Ordering::SeqCst) <= LOOKUPS, "{MOST:?}");
        assert!(MOST.load(Ordering::SeqCst) >= 1);
    }
}
