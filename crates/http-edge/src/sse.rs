//! Server-Sent Events (`text/event-stream`): a live stream read from the database in batches,
//! for any route that can say "what comes after this position".
//!
//! - **Catch-up, then live.** A stream reads a batch after its position, sends it as one chunk
//!   of whole events, and reads again; with nothing new it waits for a wake-up: this process's
//!   commits ([`Streams::notify`]), or the poll interval for another process's (a second server
//!   on the same database), whichever comes first. The table is the truth; wake-ups only say
//!   when to look.
//! - **Bounded.** A stream holds one batch at most, and the next is read only once the socket
//!   has taken the last (actix polls a body as the socket drains), so a slow reader costs one
//!   batch; a reader that takes nothing is closed by the connection's stall limit
//!   (`connection::STALL_LIMIT`). Each client address holds at most
//!   [`StreamLimits::per_client`] streams (429 past it), the server [`StreamLimits::total`]
//!   (503 past it).
//! - **A clear end.** A stream ends with a last `end` event naming the last event it sent
//!   (`last_event_id`): when it reaches [`StreamLimits::max_age`] (the reader reconnects and is
//!   authenticated again, so a revoked token stops reading), when the server drains, or after
//!   an `error` event (a database failure, as a problem document). Heartbeats (`:` comments)
//!   keep idle connections and proxies alive.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::http::header::{CACHE_CONTROL, HeaderName};
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse, Responder};
use problem_details::{Problem, Slug};
use storage::DbConnection;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::db::Db;
use crate::error::ApiError;

/// The header a reconnecting `EventSource` sends with the last `id` it received.
pub const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// An idle stream sends a heartbeat this often.
    pub heartbeat: Duration,
    /// A stream with nothing new looks again this often without a wake-up (another process's
    /// commits wake nobody here).
    pub poll: Duration,
    /// A stream ends (with its `end` event) this long after it began.
    pub max_age: Duration,
    /// Open streams one client address may hold.
    pub per_client: usize,
    /// Open streams in all (each reads the database when woken).
    pub total: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            heartbeat: Duration::from_secs(15),
            poll: Duration::from_millis(500),
            max_age: Duration::from_secs(15 * 60),
            per_client: 16,
            total: 1_000,
        }
    }
}

/// The app's streams: the wake-up every commit of an event sends, and who holds how many.
pub struct Streams {
    wake: watch::Sender<u64>,
    open: Mutex<HashMap<Option<IpAddr>, usize>>,
    limits: StreamLimits,
    draining: Arc<AtomicBool>,
}

impl Streams {
    /// Streams under `limits` that end when `draining` is set (SIGTERM).
    pub fn new(limits: StreamLimits, draining: Arc<AtomicBool>) -> Arc<Streams> {
        Arc::new(Streams {
            wake: watch::channel(0).0,
            open: Mutex::new(HashMap::new()),
            limits,
            draining,
        })
    }

    /// Something was committed: every waiting stream of this process looks now.
    pub fn notify(&self) {
        self.wake.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A place for one more stream of `req`'s client: 429 when it holds its share already.
    pub fn slot(self: &Arc<Self>, req: &HttpRequest) -> Result<Slot, ApiError> {
        let client =
            crate::middleware::client::of_request(req).map(crate::middleware::client::client_key);
        let mut open = self.open.lock().map_err(ApiError::internal)?;
        if open.values().sum::<usize>() >= self.limits.total {
            let detail = "this server holds as many open event streams as it serves; try again";
            let busy = ApiError::new(Problem::new(Slug::ServiceUnavailable, detail));
            return Err(busy.with_header(
                actix_web::http::header::RETRY_AFTER,
                actix_web::http::header::HeaderValue::from_static("5"),
            ));
        }
        let held = open.entry(client).or_insert(0);
        if *held >= self.limits.per_client {
            let detail = format!(
                "this client holds {held} open event streams, the most allowed; close one first"
            );
            return Err(ApiError::new(Problem::new(Slug::TooManyRequests, detail)));
        }
        *held += 1;
        Ok(Slot {
            streams: Arc::clone(self),
            client,
        })
    }
}

/// One stream's place in its client's share, given back when the stream ends or its reader
/// goes away.
pub struct Slot {
    streams: Arc<Streams>,
    client: Option<IpAddr>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Ok(mut open) = self.streams.open.lock()
            && let Some(held) = open.get_mut(&self.client)
        {
            *held -= 1;
            if *held == 0 {
                open.remove(&self.client);
            }
        }
    }
}

/// One event of a stream: its `id` (where a reconnect resumes) and its data (one line of
/// JSON), sent without an `event` name so that `EventSource.onmessage` receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub id: String,
    pub data: String,
}

impl Frame {
    fn write(&self, out: &mut String) {
        out.push_str("id: ");
        out.push_str(&self.id);
        out.push_str("\ndata: ");
        out.push_str(&self.data);
        out.push_str("\n\n");
    }
}

/// Where a stream resumes: the `Last-Event-ID` a reconnecting reader sends, else `query` (the
/// route's own query parameter).
pub fn resume_from<'a>(req: &'a HttpRequest, query: Option<&'a str>) -> Option<&'a str> {
    req.headers()
        .get(LAST_EVENT_ID)
        .and_then(|v| v.to_str().ok())
        .or(query)
}

/// A batch read: the events after a position, each with its own position.
type Fetch<C> =
    Arc<dyn Fn(&mut DbConnection, &C) -> Result<Vec<(C, Frame)>, ApiError> + Send + Sync>;

/// An event stream answer (see the module).
pub struct EventStream<C> {
    slot: Slot,
    db: Db,
    after: C,
    fetch: Fetch<C>,
}

impl<C: Clone + Send + 'static> EventStream<C> {
    /// A stream of what `fetch` reads after `after`, on the primary (a standby may lag).
    pub fn new<E>(
        slot: Slot,
        db: Db,
        after: C,
        fetch: impl Fn(&mut DbConnection, &C) -> Result<Vec<(C, Frame)>, E> + Send + Sync + 'static,
    ) -> Self
    where
        ApiError: From<E>,
    {
        let fetch: Fetch<C> = Arc::new(move |c, after| fetch(c, after).map_err(ApiError::from));
        EventStream {
            slot,
            db,
            after,
            fetch,
        }
    }
}

struct State<C> {
    stream: EventStream<C>,
    wake: watch::Receiver<u64>,
    limits: StreamLimits,
    started: Instant,
    last_sent: Instant,
    /// The `id` of the last event sent, for the `end` event.
    last_id: Option<String>,
    /// Where problem `type` URIs point (the request's base).
    problem_base: String,
    opening: bool,
    done: bool,
}

impl<C: Clone + Send + 'static> State<C> {
    fn end(&mut self, reason: &str) -> String {
        self.done = true;
        let data = serde_json::json!({"reason": reason, "last_event_id": self.last_id});
        format!("event: end\ndata: {data}\n\n")
    }

    async fn read(&self) -> Result<Vec<(C, Frame)>, ApiError> {
        let (fetch, after) = (Arc::clone(&self.stream.fetch), self.stream.after.clone());
        self.stream
            .db
            .read_primary(move |c| fetch(c, &after).map_err(Unwrapped))
            .await
    }

    /// The next chunk: a batch of events, a heartbeat or the end.
    async fn next(mut self) -> Option<(Result<Bytes, Infallible>, Self)> {
        if self.done {
            return None;
        }
        if self.opening {
            self.opening = false;
            // Sent at once, so the reader has the answer's head before the first event.
            let retry = format!("retry: {}\n\n", self.limits.poll.as_millis().max(1_000));
            return Some((Ok(Bytes::from(retry)), self));
        }
        loop {
            let ends = later(self.started, self.limits.max_age);
            if Instant::now() >= ends {
                return Some((Ok(Bytes::from(self.end("max-age"))), self));
            }
            if self.stream.slot.streams.draining.load(Ordering::Relaxed) {
                return Some((Ok(Bytes::from(self.end("draining"))), self));
            }
            // Seen before the read: a commit after it wakes the wait below.
            self.wake.borrow_and_update();
            match self.read().await {
                Err(err) => {
                    if err.problem.status >= 500 {
                        let cause = err.cause().unwrap_or("no cause recorded");
                        log::error!("an event stream ends on a failed read: {cause}");
                    }
                    let problem = err.problem.to_json(&self.problem_base);
                    let mut chunk = format!("event: error\ndata: {problem}\n\n");
                    chunk.push_str(&self.end("error"));
                    return Some((Ok(Bytes::from(chunk)), self));
                }
                Ok(batch) if !batch.is_empty() => {
                    let mut chunk = String::new();
                    for (_, frame) in &batch {
                        frame.write(&mut chunk);
                    }
                    if let Some((after, frame)) = batch.into_iter().last() {
                        self.stream.after = after;
                        self.last_id = Some(frame.id);
                    }
                    self.last_sent = Instant::now();
                    return Some((Ok(Bytes::from(chunk)), self));
                }
                Ok(_) => {}
            }
            let beat = later(self.last_sent, self.limits.heartbeat);
            let until = later(Instant::now(), self.limits.poll).min(beat).min(ends);
            tokio::select! {
                _ = self.wake.changed() => {}
                () = tokio::time::sleep_until(until) => {}
            }
            if Instant::now() >= beat {
                self.last_sent = Instant::now();
                return Some((Ok(Bytes::from_static(b": heartbeat\n\n")), self));
            }
        }
    }
}

/// `at + wait`, or a year on when that is past what an `Instant` holds (a huge setting).
fn later(at: Instant, wait: Duration) -> Instant {
    at.checked_add(wait)
        .or_else(|| at.checked_add(Duration::from_secs(365 * 86_400)))
        .unwrap_or(at)
}

/// `read_primary` wants a `std::error::Error`; the fetch already speaks `ApiError`.
#[derive(Debug)]
struct Unwrapped(ApiError);

impl std::fmt::Display for Unwrapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0.problem.detail)
    }
}

impl std::error::Error for Unwrapped {}

impl From<Unwrapped> for ApiError {
    fn from(e: Unwrapped) -> Self {
        e.0
    }
}

impl<C: Clone + Send + 'static> Responder for EventStream<C> {
    type Body = actix_web::body::BoxBody;

    fn respond_to(self, req: &HttpRequest) -> HttpResponse {
        let problem_base = crate::Edge::of(req)
            .map(|e| e.problems.resolve(req))
            .unwrap_or_else(|_| "/problems".to_owned());
        let streams = Arc::clone(&self.slot.streams);
        let now = Instant::now();
        let state = State {
            wake: streams.wake.subscribe(),
            limits: streams.limits,
            stream: self,
            started: now,
            last_sent: now,
            last_id: None,
            problem_base,
            opening: true,
            done: false,
        };
        HttpResponse::Ok()
            .content_type("text/event-stream")
            .insert_header((CACHE_CONTROL, "no-store"))
            .insert_header(("x-accel-buffering", "no"))
            .streaming(futures_util::stream::unfold(state, State::next))
    }
}

impl<C> apistos::ApiComponent for EventStream<C> {
    crate::no_schema!();
    fn responses(
        v: apistos::OpenApiVersion,
        _: Option<String>,
        _: Option<String>,
    ) -> Option<apistos::paths::Responses> {
        let description = "A stream of events (`text/event-stream`): each `data` line one event \
            as JSON and each `id` where a reconnect resumes (`Last-Event-ID`); a last `end` \
            event names the last event sent.";
        // No type: a tool that checks each parsed message (an object) and a generated client
        // that reads the body as text (a string) both find the schema true.
        let message = serde_json::json!({
            "description": "Server-Sent Events messages: `id`, and `data` (one line of JSON, the \
                event); the last has `event: end` (or `error`); heartbeats are comments."
        });
        Some(crate::answers::ok_with(
            "text/event-stream",
            description,
            &message,
            v,
        ))
    }
}
