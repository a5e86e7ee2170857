//! Optional per-client rate limit (`RATE_LIMIT_PER_MINUTE`): a fixed one-minute window per
//! client IP, answering 429 with `Retry-After` and the `RateLimit-*` headers. The token routes
//! and `/health` are never limited.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::web;
use problem_details::{Problem, Slug};

use crate::error::ApiError;

const WINDOW: Duration = Duration::from_secs(60);

#[derive(Debug)]
pub struct RateLimiter {
    limit: u32,
    trust_forwarded_for: bool,
    windows: Mutex<HashMap<IpAddr, (Instant, u32)>>,
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
    pub fn new(limit: u32, trust_forwarded_for: bool) -> Self {
        RateLimiter {
            limit,
            trust_forwarded_for,
            windows: Mutex::new(HashMap::new()),
        }
    }

    pub fn check(&self, client: IpAddr, now: Instant) -> Decision {
        let mut windows = match self.windows.lock() {
            Ok(w) => w,
            Err(poisoned) => poisoned.into_inner(),
        };
        if windows.len() > 10_000 {
            windows.retain(|_, (start, _)| now.duration_since(*start) < WINDOW);
        }
        let entry = windows.entry(client).or_insert((now, 0));
        if now.duration_since(entry.0) >= WINDOW {
            *entry = (now, 0);
        }
        let reset = WINDOW
            .saturating_sub(now.duration_since(entry.0))
            .as_secs()
            .max(1);
        if entry.1 >= self.limit {
            return Decision {
                allowed: false,
                limit: self.limit,
                remaining: 0,
                reset,
            };
        }
        entry.1 += 1;
        Decision {
            allowed: true,
            limit: self.limit,
            remaining: self.limit - entry.1,
            reset,
        }
    }
}

/// The client's address: the socket peer, or the first `X-Forwarded-For` entry when
/// `trust_forwarded_for` (only behind a trusted proxy).
pub fn client_ip(req: &ServiceRequest, trust_forwarded_for: bool) -> Option<IpAddr> {
    if trust_forwarded_for {
        let forwarded = req
            .headers()
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .and_then(|v| v.trim().parse().ok());
        if forwarded.is_some() {
            return forwarded;
        }
    }
    req.peer_addr().map(|a| a.ip())
}

fn exempt(path: &str) -> bool {
    path == "/health" || path.starts_with("/users") || path.starts_with("/tokens")
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
    let limiter = req.app_data::<web::Data<RateLimiter>>().cloned();
    let decision = match (&limiter, exempt(req.path())) {
        (Some(l), false) => {
            client_ip(&req, l.trust_forwarded_for).map(|ip| l.check(ip, Instant::now()))
        }
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

/// Refuses a body whose declared length is over the cap before any handler runs (routes that
/// read bodies also enforce the cap while reading, which covers chunked bodies).
pub async fn body_cap(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let limit = req
        .app_data::<super::problems::BodyLimit>()
        .map(|l| l.0)
        .unwrap_or(usize::MAX);
    let declared = req
        .headers()
        .get(actix_web::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        let err = super::problems::too_large(limit);
        return Ok(ServiceResponse::from_err(err, req.request().clone()));
    }
    Ok(next.call(req).await?.map_into_boxed_body())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_window() {
        let l = RateLimiter::new(2, false);
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let other: IpAddr = "10.0.0.2".parse().unwrap();
        let t0 = Instant::now();
        assert_eq!(l.check(ip, t0).remaining, 1);
        assert_eq!(l.check(ip, t0).remaining, 0);
        let third = l.check(ip, t0);
        assert!(!third.allowed);
        assert!(third.reset >= 59);
        assert!(l.check(other, t0).allowed);
        assert!(l.check(ip, t0 + WINDOW).allowed);
    }

    #[test]
    fn exemptions() {
        assert!(exempt("/health"));
        assert!(exempt("/users/1/tokens"));
        assert!(exempt("/tokens/verify"));
        assert!(!exempt("/notes"));
    }
}
