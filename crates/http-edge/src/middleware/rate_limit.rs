//! Optional per-client rate limit (`RATE_LIMIT_PER_MINUTE`): a fixed one-minute window per
//! client (see [`crate::middleware::client`]), answering 429 with `Retry-After` and the
//! `RateLimit-*` headers. The paths the app exempts (`exempt`, given at construction) are never
//! limited.
//!
//! The limiter must not become the weak point itself: a request costs one hash and one short
//! lock on one of [`SHARDS`] maps, whatever the number of clients. Each shard tracks at most
//! [`CLIENTS_PER_SHARD`] clients in a window; clients beyond that share the shard's overflow
//! count, so a flood of new addresses is limited as one client instead of growing memory. Old
//! windows are dropped by a background thread, not by the requests.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use problem_details::{Problem, Slug};

use crate::error::ApiError;
use crate::middleware::client::{address, client_key};

const WINDOW: Duration = Duration::from_secs(60);
pub const SHARDS: usize = 64;
pub const CLIENTS_PER_SHARD: usize = 4_096;

pub struct RateLimiter {
    inner: Arc<Inner>,
    /// The paths never limited: the app's choice, declared beside its routes.
    exempt: Box<dyn Fn(&str) -> bool + Send + Sync>,
}

impl std::fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter")
            .field("limit", &self.inner.limit)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct Inner {
    limit: u32,
    started: Instant,
    hasher: RandomState,
    shards: Vec<Mutex<Shard>>,
}

/// The counts of one window.
#[derive(Debug, Default)]
struct Shard {
    window: u64,
    counts: HashMap<IpAddr, u32>,
    /// Every client that arrived after the shard was full, counted together.
    overflow: u32,
}

/// What the limiter decided for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Seconds until the window resets.
    pub reset: u64,
}

impl RateLimiter {
    pub fn new(limit: u32, exempt: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        let inner = Arc::new(Inner {
            limit,
            started: Instant::now(),
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        });
        let sweeper = Arc::downgrade(&inner);
        // If the thread cannot start, requests reset stale shards themselves.
        let _ = std::thread::Builder::new()
            .name("rate-limit-sweep".into())
            .spawn(move || sweep(&sweeper));
        RateLimiter {
            inner,
            exempt: Box::new(exempt),
        }
    }

    pub fn check(&self, client: IpAddr, now: Instant) -> Decision {
        let inner = &self.inner;
        let elapsed = now.saturating_duration_since(inner.started);
        let window = inner.window(now);
        let reset = (WINDOW.as_secs() - elapsed.as_secs() % WINDOW.as_secs()).max(1);
        let key = client_key(client);
        let shard = &inner.shards[inner.hasher.hash_one(key) as usize % SHARDS];
        let mut shard = shard.lock().unwrap_or_else(|e| e.into_inner());
        let stale = (shard.window != window).then(|| shard.reset(window));
        let full = shard.counts.len() >= CLIENTS_PER_SHARD;
        let count = match shard.counts.get_mut(&key) {
            Some(count) => count,
            None if full => &mut shard.overflow,
            None => shard.counts.entry(key).or_insert(0),
        };
        let allowed = *count < inner.limit;
        if allowed {
            *count += 1;
        }
        let remaining = inner.limit - *count;
        drop(shard);
        drop(stale);
        Decision {
            allowed,
            limit: inner.limit,
            remaining: if allowed { remaining } else { 0 },
            reset,
        }
    }

    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.inner
            .shards
            .iter()
            .map(|s| s.lock().map(|s| s.counts.len()).unwrap_or(0))
            .sum()
    }
}

impl Inner {
    fn window(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.started).as_secs() / WINDOW.as_secs()
    }
}

impl Shard {
    /// Starts `window`; returns the old counts, to be dropped after the lock is released.
    fn reset(&mut self, window: u64) -> HashMap<IpAddr, u32> {
        self.window = window;
        self.overflow = 0;
        std::mem::take(&mut self.counts)
    }
}

/// Drops the counts of past windows every second, until the limiter is gone.
fn sweep(inner: &Weak<Inner>) {
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let window = inner.window(Instant::now());
        for shard in &inner.shards {
            let mut shard = shard.lock().unwrap_or_else(|e| e.into_inner());
            if shard.window != window && !shard.counts.is_empty() {
                let stale = shard.reset(window);
                drop(shard);
                drop(stale);
            }
        }
    }
}

fn set_headers(headers: &mut actix_web::http::header::HeaderMap, d: Decision) {
    for (name, value) in [
        ("ratelimit-limit", d.limit as u64),
        ("ratelimit-remaining", d.remaining as u64),
        ("ratelimit-reset", d.reset),
    ] {
        headers.insert(HeaderName::from_static(name), HeaderValue::from(value));
    }
}

pub async fn limit(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let edge = crate::Edge::of(req.request())?;
    let decision = match &edge.rate_limit {
        Some(l) if !(l.exempt)(req.path()) => address(&req).map(|ip| l.check(ip, Instant::now())),
        _ => None,
    };
    match decision {
        Some(d) if !d.allowed => {
            let err = ApiError::new(Problem::new(
                Slug::TooManyRequests,
                format!("Rate limit of {} requests per minute exceeded.", d.limit),
            ));
            let mut res = ServiceResponse::from_err(err, req.request().clone());
            let headers = res.headers_mut();
            set_headers(headers, d);
            headers.insert(
                actix_web::http::header::RETRY_AFTER,
                HeaderValue::from(d.reset),
            );
            Ok(res)
        }
        Some(d) => {
            let mut res = next.call(req).await?.map_into_boxed_body();
            set_headers(res.headers_mut(), d);
            Ok(res)
        }
        None => Ok(next.call(req).await?.map_into_boxed_body()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))
    }

    #[test]
    fn fixed_window() {
        let l = RateLimiter::new(2, |_| false);
        let (ip, other) = (ip("10.0.0.1"), ip("10.0.0.2"));
        let t0 = Instant::now();
        assert_eq!(l.check(ip, t0).remaining, 1);
        assert_eq!(l.check(ip, t0).remaining, 0);
        let third = l.check(ip, t0);
        assert!(!third.allowed);
        assert!((1..=60).contains(&third.reset));
        assert!(l.check(other, t0).allowed);
        assert!(l.check(ip, t0 + WINDOW).allowed);
    }

    #[test]
    fn one_ipv6_64_is_one_client() {
        let l = RateLimiter::new(1, |_| false);
        let t0 = Instant::now();
        assert!(l.check(ip("2001:db8:0:1::1"), t0).allowed);
        assert!(!l.check(ip("2001:db8:0:1::2"), t0).allowed);
        assert!(l.check(ip("2001:db8:0:2::1"), t0).allowed);
    }

    #[test]
    fn a_flood_of_new_clients_is_limited_as_one_and_bounded_in_memory() {
        let l = RateLimiter::new(3, |_| false);
        let t0 = Instant::now();
        let clients = SHARDS * CLIENTS_PER_SHARD * 2;
        let allowed = (0..clients as u32)
            .filter(|n| l.check(IpAddr::from(n.to_be_bytes()), t0).allowed)
            .count();
        assert!(l.tracked() <= SHARDS * CLIENTS_PER_SHARD);
        // Everyone tracked got their 1 request; the overflow of each shard let 3 more through.
        assert!(
            allowed <= SHARDS * CLIENTS_PER_SHARD + SHARDS * 3,
            "{allowed}"
        );
        // A new window forgets them all.
        assert!(l.check(ip("10.9.9.9"), t0 + WINDOW).allowed);
        assert!(l.tracked() < SHARDS * CLIENTS_PER_SHARD);
    }
}
