//! Server-Sent Events (`text/event-stream`): a live stream read from the database in batches,
//! for any route that can say "what comes after this position".
//!
//! - **Catch-up, then live.** A stream reads a batch after its position, sends it as one chunk
//!   of whole events, and reads again; with nothing new it waits for a wake-up: this process's
//!   commits ([`Streams::notify`]), or the poll interval for another process's (a second server
//!   on the same database), whichever comes first. The table is the truth; wake-ups only say
//!   when to look. A stream that follows one topic (an account) is woken only by commits that
//!   name it: with every stream woken by every commit, 100 open account streams each read the
//!   database after every commit, and appends ran at 0.41× their rate with none open.
//! - **Handed over, when caught up.** A topic's commits hand their events to its streams
//!   ([`Streams::committed`], `handoff`): a caught-up stream sends the events that follow its
//!   position straight from there, and reads the database only on a gap (an event committed by
//!   another process, or handed over late) and once per poll interval. Reading each event back
//!   once per stream that follows it held appends with 100 open streams to 0.7× their rate.
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

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use actix_web::http::header::{CACHE_CONTROL, HeaderName};
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse, Responder};
use storage::DbConnection;
use tokio::time::Instant;

use crate::db::Db;
use crate::error::ApiError;

mod handoff;
mod registry;

use handoff::{Recent, Taken};
use registry::Following;
pub use registry::{Slot, StreamLimits, Streams};

/// The header a reconnecting `EventSource` sends with the last `id` it received.
pub const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

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

/// Takes from a topic's handed-over events what follows a stream's position.
type Take<C> = fn(&C, &Recent) -> Taken<C>;

/// An event stream answer (see the module).
pub struct EventStream<C> {
    slot: Slot,
    db: Db,
    after: C,
    fetch: Fetch<C>,
    /// Woken only by commits that name this topic (every commit's when `None`).
    topic: Option<String>,
    /// How a stream that follows a topic takes its handed-over events.
    take: Option<Take<C>>,
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
            topic: None,
            take: None,
        }
    }
}

impl EventStream<i64> {
    /// Woken only by the commits [`Streams::notify`] is told name `topic`, and handed the
    /// events [`Streams::committed`] is given for it: the stream's positions are `topic`'s
    /// sequences (1, 2, 3… without gaps).
    #[must_use]
    pub fn following(self, topic: String) -> Self {
        EventStream {
            topic: Some(topic),
            take: Some(|after, recent| recent.after(*after)),
            ..self
        }
    }
}

/// Where a stream looks next for the events after its position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Look {
    /// In the database (the truth): at the start, after a batch read there, after a gap and
    /// once per poll interval.
    Database,
    /// In the events handed over (a stream that follows a topic, caught up).
    Handed,
}

struct State<C> {
    stream: EventStream<C>,
    wake: Following,
    limits: StreamLimits,
    started: Instant,
    last_sent: Instant,
    look: Look,
    /// When the stream last knew it had everything up to its position: its last database read,
    /// or its last events handed over without a gap (an event another process committed
    /// before them would have been a gap). The poll for other processes' commits counts from
    /// here, so a stream that is handed events steadily does not poll.
    last_read: Instant,
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

    async fn read(&mut self) -> Result<Vec<(C, Frame)>, ApiError> {
        // Seen before the read: a commit after it wakes the wait.
        self.wake.wake.borrow_and_update();
        self.last_read = Instant::now();
        let (fetch, after) = (Arc::clone(&self.stream.fetch), self.stream.after.clone());
        let batch = self
            .stream
            .db
            .read_primary(move |c| fetch(c, &after).map_err(Unwrapped))
            .await;
        match &batch {
            Ok(events) if events.is_empty() => self.look = Look::Handed,
            // More may follow (a full batch, another process's burst): read on until a read
            // finds nothing, whatever was handed over meanwhile.
            Ok(events) => {
                self.look = Look::Database;
                let streams = &self.stream.slot.streams;
                streams.sent_read.inc_by(events.len() as u64);
            }
            Err(_) => {}
        }
        batch
    }

    /// The events handed over that follow the stream's position, or `None`: read the
    /// database (a stream that follows no topic always does).
    fn handed(&mut self) -> Option<Vec<(C, Frame)>> {
        let take = self.stream.take.filter(|_| self.look == Look::Handed)?;
        match take(&self.stream.after, &self.wake.wake.borrow_and_update()) {
            Taken::Nothing => Some(Vec::new()),
            Taken::Next(batch) => {
                self.last_read = Instant::now();
                let streams = &self.stream.slot.streams;
                streams.sent_handed.inc_by(batch.len() as u64);
                Some(batch)
            }
            Taken::Gap => None,
        }
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
            let batch = match self.handed() {
                Some(batch) => Ok(batch),
                None => self.read().await,
            };
            match batch {
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
            let poll = later(self.last_read, self.limits.poll);
            let until = poll.min(beat).min(ends);
            tokio::select! {
                _ = self.wake.wake.changed() => {}
                () = tokio::time::sleep_until(until) => {}
            }
            if self.stream.take.is_none() || Instant::now() >= poll {
                self.look = Look::Database;
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

impl<C: Clone + Send + 'static> EventStream<C> {
    /// The stream's state as it begins: it follows its topic's wake-ups from now on.
    fn start(self, problem_base: String) -> State<C> {
        let streams = Arc::clone(&self.slot.streams);
        let now = Instant::now();
        State {
            wake: streams.follow(self.topic.clone()),
            limits: streams.limits,
            stream: self,
            started: now,
            last_sent: now,
            look: Look::Database,
            last_read: now,
            last_id: None,
            problem_base,
            opening: true,
            done: false,
        }
    }
}

impl<C: Clone + Send + 'static> Responder for EventStream<C> {
    type Body = actix_web::body::BoxBody;

    fn respond_to(self, req: &HttpRequest) -> HttpResponse {
        let problem_base = crate::Edge::of(req)
            .map(|e| e.problems.resolve(req))
            .unwrap_or_else(|_| "/problems".to_owned());
        let state = self.start(problem_base);
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::AtomicBool;

    use storage::testing::TestDatabase;
    use storage::{Backend, Database, Store};

    use super::*;

    /// Events a fetch finds per read.
    const BATCH: usize = 3;

    /// The event at `sequence`, as a commit hands it over.
    pub(super) fn frame(sequence: i64) -> Frame {
        Frame {
            id: sequence.to_string(),
            data: format!("{{\"sequence\":{sequence}}}"),
        }
    }

    /// The ids of the events in a chunk.
    fn ids(chunk: &[u8]) -> Vec<i64> {
        let text = std::str::from_utf8(chunk).unwrap();
        let ids = text.lines().filter_map(|l| l.strip_prefix("id: "));
        ids.map(|id| id.parse().unwrap()).collect()
    }

    /// A stream of topic `ann` whose database is `committed` (what every process committed),
    /// read `BATCH` events at a time; it never polls on its own within the test.
    fn stream(db: &TestDatabase, committed: &Arc<Mutex<Vec<i64>>>) -> (Arc<Streams>, State<i64>) {
        let sent =
            prometheus::IntCounterVec::new(prometheus::Opts::new("sent", "sent"), &["source"])
                .unwrap();
        let limits = StreamLimits {
            poll: Duration::from_secs(3_600),
            heartbeat: Duration::from_secs(3_600),
            ..StreamLimits::default()
        };
        let streams = Streams::new(limits, Arc::new(AtomicBool::new(false)), &sent);
        let req = actix_web::test::TestRequest::default().to_http_request();
        let slot = streams.slot(&req).unwrap();
        let store = Store::open(Database::parse(&db.url).unwrap(), 2).unwrap();
        let committed = Arc::clone(committed);
        let fetch = move |_: &mut DbConnection, after: &i64| {
            let all = committed.lock().unwrap();
            let next = all.iter().filter(|s| **s > *after).take(BATCH);
            Ok::<_, ApiError>(next.map(|s| (*s, frame(*s))).collect())
        };
        let state = EventStream::new(slot, Db::new(store), 0, fetch)
            .following("ann".to_owned())
            .start("/problems".to_owned());
        (streams, state)
    }

    /// The next chunk, which must come at once (the stream never polls here).
    async fn next(state: State<i64>) -> (Bytes, State<i64>) {
        let (chunk, state) = tokio::time::timeout(Duration::from_secs(10), state.next())
            .await
            .expect("the stream sends without waiting for its poll")
            .expect("the stream goes on");
        (chunk.unwrap(), state)
    }

    /// A hand-over that shows a gap is read from the database; when that read fills a batch,
    /// more may have been committed elsewhere (another process's burst), and the stream reads
    /// on until a read finds nothing, even though nothing handed over follows its position.
    #[tokio::test]
    async fn a_read_that_fills_a_batch_reads_on_whatever_was_handed_over() {
        let db = TestDatabase::create(Backend::Sqlite, None)
            .unwrap()
            .unwrap();
        let committed = Arc::new(Mutex::new(vec![1, 2]));
        let (streams, state) = stream(&db, &committed);
        let (_, state) = next(state).await; // the `retry` line
        let (chunk, mut state) = next(state).await;
        assert_eq!(ids(&chunk), [1, 2]);
        // Caught up: the next look finds nothing, and the stream waits for hand-overs.
        assert_eq!(state.read().await.unwrap(), []);

        // Another process commits 3, this one 4 (handed over here), the other 5..=12.
        committed.lock().unwrap().extend(3..=12);
        streams.committed("ann", 4, || frame(4));
        let mut sent = Vec::new();
        while sent.len() < 10 {
            let (chunk, more) = next(state).await;
            sent.extend(ids(&chunk));
            state = more;
        }
        assert_eq!(sent, (3..=12).collect::<Vec<_>>());
    }
}
