//! Who follows what: the streams' wake-ups (every commit's, and each topic's) and each client's
//! share of open streams.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::HttpRequest;
use problem_details::{Problem, Slug};
use prometheus::{IntCounter, IntCounterVec};
use tokio::sync::watch;

use super::Frame;
use super::handoff::Recent;
use crate::error::ApiError;
use crate::middleware::limits::count_down;

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

/// The app's streams: the wake-ups commits send, and who holds how many.
pub struct Streams {
    /// Every commit: the streams that follow everything (nothing is handed over to them).
    pub(super) wake: watch::Sender<Recent>,
    /// Commits that name a topic: the streams that follow it, and how many they are; each
    /// wake-up holds the topic's last events handed over.
    pub(super) topics: Mutex<HashMap<String, (watch::Sender<Recent>, usize)>>,
    open: Mutex<HashMap<Option<IpAddr>, usize>>,
    pub(super) limits: StreamLimits,
    pub(super) draining: Arc<AtomicBool>,
    /// Events sent, by where the stream found them: handed over, or read from the database.
    pub(super) sent_handed: IntCounter,
    pub(super) sent_read: IntCounter,
}

impl Streams {
    /// Streams under `limits` that end when `draining` is set (SIGTERM); `sent` counts the
    /// events they send by `source` (`handed` or `database`).
    pub fn new(
        limits: StreamLimits,
        draining: Arc<AtomicBool>,
        sent: &IntCounterVec,
    ) -> Arc<Streams> {
        Arc::new(Streams {
            sent_handed: sent.with_label_values(&["handed"]),
            sent_read: sent.with_label_values(&["database"]),
            wake: watch::channel(Recent::default()).0,
            topics: Mutex::new(HashMap::new()),
            open: Mutex::new(HashMap::new()),
            limits,
            draining,
        })
    }

    /// Something about `topics` was committed: the streams that follow everything and those
    /// that follow one of `topics` look now.
    pub fn notify(&self, topics: &[&str]) {
        self.wake.send_modify(|_| {});
        if let Ok(followed) = self.topics.lock() {
            for topic in topics {
                if let Some((wake, _)) = followed.get(*topic) {
                    wake.send_modify(|_| {});
                }
            }
        }
    }

    /// The event at `sequence` of `topic` was committed: as [`Streams::notify`], and the
    /// streams that follow `topic` are handed the event (`frame` builds it, only when some
    /// stream follows), so a caught-up one sends it without reading the database.
    pub fn committed(&self, topic: &str, sequence: i64, frame: impl FnOnce() -> Frame) {
        self.wake.send_modify(|_| {});
        if let Ok(followed) = self.topics.lock()
            && let Some((wake, _)) = followed.get(topic)
        {
            let frame = frame();
            wake.send_modify(|recent| recent.hand(sequence, frame));
        }
    }

    /// The wake-up of a stream that follows `topic` (every commit's when `None`).
    pub(super) fn follow(self: &Arc<Self>, topic: Option<String>) -> Following {
        let Some(topic) = topic else {
            return Following {
                wake: self.wake.subscribe(),
                topic: None,
            };
        };
        let mut followed = self.topics.lock().unwrap_or_else(|e| e.into_inner());
        let (wake, count) = followed
            .entry(topic.clone())
            .or_insert_with(|| (watch::channel(Recent::default()).0, 0));
        *count += 1;
        Following {
            wake: wake.subscribe(),
            topic: Some((Arc::clone(self), topic)),
        }
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

/// A stream's wake-up; the topic is forgotten with its last follower.
pub(super) struct Following {
    pub(super) wake: watch::Receiver<Recent>,
    topic: Option<(Arc<Streams>, String)>,
}

impl Drop for Following {
    fn drop(&mut self) {
        if let Some((streams, topic)) = &self.topic {
            let mut followed = streams.topics.lock().unwrap_or_else(|e| e.into_inner());
            count_down(&mut followed, topic, |(_, count)| count);
        }
    }
}

/// One stream's place in its client's share, given back when the stream ends or its reader
/// goes away.
pub struct Slot {
    pub(super) streams: Arc<Streams>,
    client: Option<IpAddr>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Ok(mut open) = self.streams.open.lock() {
            count_down(&mut open, &self.client, |held| held);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_wakes_the_streams_of_its_topics_and_of_everything() {
        let sent = IntCounterVec::new(prometheus::Opts::new("sent", "sent"), &["source"]).unwrap();
        let streams = Streams::new(
            StreamLimits::default(),
            Arc::new(AtomicBool::new(false)),
            &sent,
        );
        let (mut a, b, mut all) = (
            streams.follow(Some("a".into())),
            streams.follow(Some("b".into())),
            streams.follow(None),
        );
        let a_again = streams.follow(Some("a".into()));
        streams.notify(&["a", "c"]);
        assert!(a.wake.has_changed().unwrap());
        assert!(!b.wake.has_changed().unwrap());
        assert!(all.wake.has_changed().unwrap());
        // A topic is forgotten with its last follower only.
        drop(a_again);
        assert!(streams.topics.lock().unwrap().contains_key("a"));
        a.wake.borrow_and_update();
        drop(a);
        assert!(!streams.topics.lock().unwrap().contains_key("a"));
        streams.notify(&["b"]);
        assert!(b.wake.has_changed().unwrap());
        all.wake.borrow_and_update();
        assert!(!all.wake.has_changed().unwrap());
    }
}
