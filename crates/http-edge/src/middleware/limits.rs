//! What one request may cost, checked before any other layer reads it: the body's media type,
//! encoding and declared size, the time it may take to arrive, and how many connections its
//! client may hold open. Everything here answers from the request head alone, so a refused
//! request costs neither a body read nor a database round trip.
//!
//! - A non-empty body must say `Content-Type: application/json` (or `+json`): browsers send
//!   form and `text/plain` bodies cross-site without a CORS preflight, so a body without a JSON
//!   type is 415 before it is read.
//! - A `Content-Encoding` other than `identity` is 415: inflating a body before its size is
//!   known let 33 KB of zstd take a gigabyte.
//! - A declared `Content-Length` over `MAX_BODY_BYTES` is 413 (chunked bodies are capped while
//!   they are read, `extract::read_body`).
//! - The body must arrive within `REQUEST_TIMEOUT` of the head (which actix itself bounds);
//!   a body still arriving then fails its read with 408 and the connection is closed.
//! - A client address holds at most `MAX_CONNECTIONS_PER_CLIENT` connections: one beyond is
//!   shut as it is accepted ([`on_connect`]); should one slip through, its requests get 429 and
//!   the connection is closed.
//! - A request waits while its connection's earlier answers wait for the peer to read them
//!   (`connection::Paced`), so a client that pipelines and never reads makes no new answers.
//! - A body's bytes on the wire count against `MAX_BODY_BYTES` framing included: the
//!   connection may read the cap (and a little for the final chunk) past the head before the
//!   body is done, else 413 (chunk extensions, size padding and trailers carry no body bytes
//!   but cost reading all the same).

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::HttpMessage;
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::Extensions;
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::error::PayloadError;
use actix_web::http::header::{
    CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, HeaderValue, RETRY_AFTER, TRANSFER_ENCODING,
};
use actix_web::http::{ConnectionType, StatusCode};
use actix_web::middleware::Next;
use actix_web::rt::time::{Sleep, sleep};
use actix_web::web::Bytes;
use futures_util::Stream;
use problem_details::{Problem, Slug};

use crate::connection;
use crate::error::ApiError;
use crate::middleware::client::client_key;
use crate::middleware::problems::too_large;

/// The body size limit when none is configured: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1_048_576;

/// The limits, from the settings.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_body_bytes: usize,
    pub request_timeout: Duration,
}

pub async fn enforce(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let limits = crate::Edge::of(req.request())?.limits;
    if req
        .conn_data::<ConnectionSlot>()
        .is_some_and(ConnectionSlot::over)
    {
        return Ok(closing(refuse(req, too_many_connections())));
    }
    let connection = req.conn_data::<Arc<connection::ConnectionState>>().cloned();
    if let Some(connection) = &connection {
        connection.wait_for_peer().await;
    }
    if let Some(err) = refusal(&req, limits.max_body_bytes) {
        return Ok(refuse(req, err));
    }
    if has_body(&req) {
        let payload = req.take_payload();
        let budget = connection.map(|c| c.start_body(limits.max_body_bytes as u64 + FINAL_CHUNK));
        let timed: Pin<Box<dyn Stream<Item = Result<Bytes, PayloadError>>>> = Box::pin(Deadline {
            inner: payload,
            timer: Box::pin(sleep(limits.request_timeout)),
            budget,
        });
        req.set_payload(Payload::from(timed));
    }
    let mut res = next.call(req).await?.map_into_boxed_body();
    // The rest of a late or oversized body is not worth reading: the connection ends.
    if matches!(
        res.status(),
        StatusCode::REQUEST_TIMEOUT | StatusCode::PAYLOAD_TOO_LARGE
    ) {
        res = closing(res);
    }
    Ok(res)
}

/// What the head alone says is refused.
fn refusal(req: &ServiceRequest, max_body_bytes: usize) -> Option<ApiError> {
    let headers = req.headers();
    let encoded = headers.get_all(CONTENT_ENCODING).any(|v| {
        v.to_str().map_or(true, |v| {
            v.split(',')
                .any(|coding| !coding.trim().eq_ignore_ascii_case("identity"))
        })
    });
    if encoded {
        return Some(unsupported(
            "Request bodies must not be compressed: send them without a Content-Encoding.",
        ));
    }
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|len| len > max_body_bytes as u64) {
        return Some(too_large(max_body_bytes));
    }
    (has_body(req) && !is_json(headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok())))
        .then(|| unsupported("The request body must be sent with Content-Type: application/json."))
}

/// A body follows the head: a non-zero `Content-Length`, or a `Transfer-Encoding` (chunked),
/// whose length is unknown until it has been read.
fn has_body(req: &ServiceRequest) -> bool {
    let headers = req.headers();
    headers.contains_key(TRANSFER_ENCODING)
        || headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() != "0")
}

/// `application/json` or `application/<anything>+json`, parameters ignored.
pub fn is_json(content_type: Option<&str>) -> bool {
    let Some(value) = content_type else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

fn unsupported(detail: &str) -> ApiError {
    ApiError::new(Problem::new(Slug::UnsupportedMediaType, detail))
}

fn too_many_connections() -> ApiError {
    ApiError::new(Problem::new(
        Slug::TooManyRequests,
        "This client address holds too many open connections; close some and retry.",
    ))
    .with_header(RETRY_AFTER, HeaderValue::from_static("1"))
}

fn refuse(req: ServiceRequest, err: ApiError) -> ServiceResponse<BoxBody> {
    ServiceResponse::from_err(err, req.request().clone())
}

/// The connection ends after this response (a slow or refused client gets no second request
/// on it).
fn closing(mut res: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
    res.response_mut()
        .head_mut()
        .set_connection_type(ConnectionType::Close);
    res
}

/// The error a body read gets when the deadline passes; [`is_deadline`] recognises it.
fn deadline_passed() -> PayloadError {
    PayloadError::Io(io::Error::new(
        io::ErrorKind::TimedOut,
        "the request body did not arrive within REQUEST_TIMEOUT",
    ))
}

/// True when a body read failed because the request's deadline passed.
pub fn is_deadline(err: &PayloadError) -> bool {
    matches!(err, PayloadError::Io(e) if e.kind() == io::ErrorKind::TimedOut)
}

/// Room for the last chunk's `0\r\n\r\n` and a body's final CRLFs beyond `MAX_BODY_BYTES`.
const FINAL_CHUNK: u64 = 64;

/// The request body, failing once the deadline passes or the connection has read more for it
/// than the body may take.
struct Deadline {
    inner: Payload,
    timer: Pin<Box<Sleep>>,
    budget: Option<connection::Budget>,
}

impl Stream for Deadline {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Poll::Ready(item) = Pin::new(&mut self.inner).poll_next(cx) {
            if item.is_none() {
                self.budget = None;
            }
            return Poll::Ready(item);
        }
        if self.budget.as_ref().is_some_and(|b| b.exceeded(cx)) {
            return Poll::Ready(Some(Err(PayloadError::Overflow)));
        }
        match self.timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(deadline_passed()))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The server's `on_connect` hook: counts the connection under its client address and, when
/// the client already holds the maximum, shuts the socket at once, so that a burst of
/// connections costs no file descriptor past the first poll (waiting for their requests would
/// hold them for up to the head timeout). The slot stays in the connection's data until the
/// connection ends.
pub fn on_connect(
    counter: &ConnectionCounter,
    stream: &actix_web::rt::net::TcpStream,
    data: &mut Extensions,
) {
    let Ok(peer) = stream.peer_addr() else {
        return;
    };
    let slot = counter.open(peer.ip());
    if slot.over()
        && let Err(err) = rustix::net::shutdown(stream, rustix::net::Shutdown::Both)
    {
        log::debug!("cannot shut a connection over the per-client cap: {err}");
    }
    data.insert(slot);
}

/// Open connections per client address (`MAX_CONNECTIONS_PER_CLIENT`), counted when a
/// connection opens and when it closes ([`ConnectionSlot`]'s drop), never per request.
#[derive(Debug, Clone)]
pub struct ConnectionCounter {
    max: usize,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl ConnectionCounter {
    pub fn new(max: usize) -> Self {
        ConnectionCounter {
            max,
            open: Arc::default(),
        }
    }

    /// Counts a new connection from `peer`; the slot lives as long as the connection.
    pub fn open(&self, peer: IpAddr) -> ConnectionSlot {
        let key = client_key(peer);
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(key).or_insert(0);
        *count += 1;
        ConnectionSlot {
            counter: self.clone(),
            key,
            over: *count > self.max,
        }
    }

    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.open.lock().map(|o| o.len()).unwrap_or(0)
    }
}

/// One open connection, in the connection's data. Dropped with the connection.
#[derive(Debug)]
pub struct ConnectionSlot {
    counter: ConnectionCounter,
    key: IpAddr,
    over: bool,
}

impl ConnectionSlot {
    /// This connection was opened while its client already held the maximum.
    pub fn over(&self) -> bool {
        self.over
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut open = self.counter.open.lock().unwrap_or_else(|e| e.into_inner());
        count_down(&mut open, &self.key, |count| count);
    }
}

/// One holder of `key` fewer in a map of holders (the count as `count` finds it in the value):
/// the entry goes with the last one, so the map holds only keys still held.
pub(crate) fn count_down<K: std::hash::Hash + Eq, V>(
    map: &mut HashMap<K, V>,
    key: &K,
    count: impl Fn(&mut V) -> &mut usize,
) {
    if let Some(value) = map.get_mut(key) {
        let held = count(value);
        *held -= 1;
        if *held == 0 {
            map.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_media_types() {
        for ok in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/problem+json",
            "application/vnd.api+json",
        ] {
            assert!(is_json(Some(ok)), "{ok}");
        }
        for bad in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "json",
            "",
        ] {
            assert!(!is_json(Some(bad)), "{bad}");
        }
        assert!(!is_json(None));
    }

    #[test]
    fn connections_are_counted_per_client_until_they_close() {
        let counter = ConnectionCounter::new(2);
        let a: IpAddr = "10.0.0.1".parse().unwrap_or(IpAddr::from([0, 0, 0, 0]));
        let b: IpAddr = "10.0.0.2".parse().unwrap_or(IpAddr::from([0, 0, 0, 0]));
        let first = counter.open(a);
        let second = counter.open(a);
        let third = counter.open(a);
        assert!(!first.over() && !second.over());
        assert!(
            third.over(),
            "the third connection of a client is over the cap of 2"
        );
        assert!(!counter.open(b).over(), "other clients are not affected");
        drop(third);
        drop(second);
        assert!(
            !counter.open(a).over(),
            "closed connections free their slots"
        );
        drop(first);
        assert_eq!(
            counter.tracked(),
            0,
            "nothing is kept for clients with no connection"
        );
    }
}
