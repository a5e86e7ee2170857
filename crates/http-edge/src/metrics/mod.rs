//! What the service measures, in the Prometheus text format (the `prometheus` crate's
//! registry and encoder). Names and units follow Prometheus' conventions (`_total`,
//! `_seconds`); a route is labelled by its template (`/notes/{note_id}`), never its raw path,
//! so a client cannot grow the label set.
//!
//! - [`record`], the layer: requests by route, method and status class; their latency; the
//!   requests in flight; refusals by cause.
//! - The store's observer ([`storage`]): group-commit batch sizes and queue waits per writer,
//!   pool checkout waits and timeouts, faults by class; and idempotent replays.
//! - Read when scraped: the database pool (size, in use, idle), the SQLite WAL, damage, and
//!   the process (CPU, memory, open files, threads: the crate's process collector).
//! - The app's own counters ([`Metrics::counter`]).

mod storage;

use std::sync::Arc;
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::middleware::Next;
use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

use crate::db::Db;

/// The label of a request no route matched.
pub const UNMATCHED: &str = "unmatched";

/// Latency buckets, in seconds: 1 ms to 10 s (every database wait is bounded by 2 s).
pub(crate) const BUCKETS: [f64; 13] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The service's metrics and the registry they are gathered from.
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    duration: HistogramVec,
    in_flight: IntGauge,
    refusals: IntCounterVec,
    pool: IntGaugeVec,
    damaged: IntGauge,
    replays: IntCounterVec,
    storage: Arc<storage::StorageMetrics>,
}

impl Metrics {
    /// Every metric registered once; `service` is a constant label of all of them.
    pub fn new(service: &str) -> Result<Metrics, prometheus::Error> {
        let labels = std::collections::HashMap::from([("service".to_owned(), service.to_owned())]);
        let registry = Registry::new_custom(None, Some(labels))?;
        let requests = IntCounterVec::new(
            Opts::new(
                "http_requests_total",
                "HTTP requests answered, by route template, method and status class (2xx…5xx).",
            ),
            &["route", "method", "status"],
        )?;
        let duration = HistogramVec::new(
            HistogramOpts::new(
                "http_request_duration_seconds",
                "Time from a request's head to its answer, by route template and method.",
            )
            .buckets(BUCKETS.to_vec()),
            &["route", "method"],
        )?;
        let in_flight = IntGauge::new("http_requests_in_flight", "Requests being handled now.")?;
        let refusals = IntCounterVec::new(
            Opts::new(
                "http_refusals_total",
                "Requests refused before or instead of their work, by cause: rate_limit, \
                 body_too_large, unsupported_media_type, timeout, unauthorized, forbidden, \
                 database_unavailable, insufficient_storage.",
            ),
            &["cause"],
        )?;
        let pool = IntGaugeVec::new(
            Opts::new(
                "db_pool_connections",
                "Database connections of the pool, by state (in_use, idle); their sum is the \
                 pool's size now.",
            ),
            &["state"],
        )?;
        let damaged = IntGauge::new(
            "db_storage_damaged",
            "1 while this instance knows of damage in what is stored (a WAL that lost committed \
             transactions, a page failing quick_check or a request, a value that does not \
             decode); the log's `storage damaged` line says what.",
        )?;
        let replays = IntCounterVec::new(
            Opts::new(
                "idempotent_replays_total",
                "Creates answered with the first answer to their Idempotency-Key (nothing \
                 written), by route template.",
            ),
            &["route"],
        )?;
        for metric in [
            Box::new(replays.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(damaged.clone()),
            Box::new(requests.clone()),
            Box::new(duration.clone()),
            Box::new(in_flight.clone()),
            Box::new(refusals.clone()),
            Box::new(pool.clone()),
        ] {
            registry.register(metric)?;
        }
        #[cfg(target_os = "linux")]
        registry.register(Box::new(
            prometheus::process_collector::ProcessCollector::for_self(),
        ))?;
        Ok(Metrics {
            requests,
            duration,
            in_flight,
            refusals,
            pool,
            damaged,
            replays,
            storage: Arc::new(storage::StorageMetrics::new(&registry)?),
            registry,
        })
    }

    /// The text exposition of every metric now, the pool's read from `db`.
    pub fn render(&self, db: &Db) -> String {
        let state = db.store().pool().state();
        let idle = i64::from(state.idle_connections);
        let all = i64::from(state.connections);
        self.pool.with_label_values(&["in_use"]).set(all - idle);
        self.pool.with_label_values(&["idle"]).set(idle);
        self.damaged.set(i64::from(db.store().damage().is_some()));
        self.storage.scrape(db.store());
        let mut text = Vec::new();
        // Encoding into memory fails only on a metric the registry itself refused.
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut text);
        String::from_utf8(text).unwrap_or_default()
    }

    /// What the store tells about its work, as metrics: give it to [`storage::Store::observe`].
    pub fn storage_observer(&self) -> Arc<dyn ::storage::observe::Observer> {
        self.storage.clone()
    }

    /// A create on `route` answered with its key's first answer.
    pub fn replayed(&self, route: &str) {
        self.replays.with_label_values(&[route]).inc();
    }

    /// A counter of the app's own, registered with the rest: `name` and `help` as Prometheus
    /// wants them, one label per `labels`.
    pub fn counter(
        &self,
        name: &str,
        help: &str,
        labels: &[&str],
    ) -> Result<IntCounterVec, prometheus::Error> {
        let counter = IntCounterVec::new(Opts::new(name, help), labels)?;
        self.registry.register(Box::new(counter.clone()))?;
        Ok(counter)
    }

    /// A counter of the app's own whose value `read` gives when scraped (a count a domain
    /// crate keeps in an atomic).
    pub fn sampled_counter(
        &self,
        name: &str,
        help: &str,
        read: fn() -> u64,
    ) -> Result<(), prometheus::Error> {
        let counter = prometheus::IntCounter::new(name, help)?;
        self.registry.register(Box::new(Sampled { counter, read }))
    }

    fn observe(&self, route: &str, method: &str, status: StatusCode, started: Instant) {
        let class = match status.as_u16() {
            100..=199 => "1xx",
            200..=299 => "2xx",
            300..=399 => "3xx",
            400..=499 => "4xx",
            _ => "5xx",
        };
        self.requests
            .with_label_values(&[route, method, class])
            .inc();
        self.duration
            .with_label_values(&[route, method])
            .observe(started.elapsed().as_secs_f64());
        if let Some(cause) = refusal(status) {
            self.refusals.with_label_values(&[cause]).inc();
        }
    }
}

/// A counter set from `read` when collected.
struct Sampled {
    counter: prometheus::IntCounter,
    read: fn() -> u64,
}

impl prometheus::core::Collector for Sampled {
    fn desc(&self) -> Vec<&prometheus::core::Desc> {
        self.counter.desc()
    }

    fn collect(&self) -> Vec<prometheus::proto::MetricFamily> {
        let now = (self.read)();
        let was = self.counter.get();
        self.counter.inc_by(now.saturating_sub(was));
        self.counter.collect()
    }
}

/// The cause a status says a request was refused for, if it says one.
fn refusal(status: StatusCode) -> Option<&'static str> {
    Some(match status {
        StatusCode::TOO_MANY_REQUESTS => "rate_limit",
        StatusCode::PAYLOAD_TOO_LARGE => "body_too_large",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        StatusCode::REQUEST_TIMEOUT => "timeout",
        StatusCode::UNAUTHORIZED => "unauthorized",
        StatusCode::FORBIDDEN => "forbidden",
        StatusCode::SERVICE_UNAVAILABLE => "database_unavailable",
        StatusCode::INSUFFICIENT_STORAGE => "insufficient_storage",
        _ => return None,
    })
}

/// The layer: counts and times every request by the route that answered it (outside the
/// problem renderer and every refusal, so those are counted too).
pub async fn record(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    // One reference count, not a clone of every metric handle.
    let edge = crate::edge::registered::<crate::Edge>(req.request())?.clone();
    let metrics = &edge.metrics;
    let method = req.method().as_str().to_owned();
    metrics.in_flight.inc();
    let res = next.call(req).await;
    metrics.in_flight.dec();
    let (route, status, replayed) = match &res {
        Ok(res) => (
            res.request().match_pattern(),
            res.status(),
            res.headers().contains_key(crate::idempotent::REPLAYED),
        ),
        Err(err) => (None, err.as_response_error().status_code(), false),
    };
    let route = route.unwrap_or_else(|| UNMATCHED.to_owned());
    if replayed {
        metrics.replayed(&route);
    }
    metrics.observe(&route, &method, status, started);
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_named_by_status() {
        assert_eq!(refusal(StatusCode::TOO_MANY_REQUESTS), Some("rate_limit"));
        assert_eq!(refusal(StatusCode::UNAUTHORIZED), Some("unauthorized"));
        assert_eq!(refusal(StatusCode::NOT_FOUND), None);
        assert_eq!(refusal(StatusCode::OK), None);
    }

    #[test]
    fn observations_are_exposed_by_route_template() {
        let metrics = Metrics::new("test").unwrap();
        let started = Instant::now();
        metrics.observe("/notes/{note_id}", "GET", StatusCode::OK, started);
        metrics.observe("/notes/{note_id}", "GET", StatusCode::NOT_FOUND, started);
        metrics.observe(UNMATCHED, "GET", StatusCode::TOO_MANY_REQUESTS, started);
        let mut text = Vec::new();
        TextEncoder::new()
            .encode(&metrics.registry.gather(), &mut text)
            .unwrap();
        let text = String::from_utf8(text).unwrap();
        let route = ("route", "/notes/{note_id}");
        for (name, labels, expected) in [
            ("http_requests_total", vec![route, ("status", "2xx")], 1.0),
            ("http_requests_total", vec![route, ("status", "4xx")], 1.0),
            ("http_refusals_total", vec![("cause", "rate_limit")], 1.0),
            ("http_request_duration_seconds_count", vec![route], 2.0),
        ] {
            let labels: Vec<_> = labels.into_iter().chain([("service", "test")]).collect();
            assert_eq!(
                sample(&text, name, &labels),
                Some(expected),
                "{name} {labels:?}\n{text}"
            );
        }
    }

    /// The value of the series `name` whose labels include `labels`, in an exposition.
    pub fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        text.lines().find_map(|line| {
            let rest = line.strip_prefix(name)?;
            let (set, value) = match rest.strip_prefix('{') {
                Some(rest) => rest.split_once("} ")?,
                None => ("", rest.strip_prefix(' ')?),
            };
            labels
                .iter()
                .all(|(k, v)| set.split(',').any(|pair| pair == format!("{k}=\"{v}\"")))
                .then(|| value.trim().parse().ok())?
        })
    }
}
