//! Each accepted connection as the HTTP/1 dispatcher sees it: a [`Paced`] stream that keeps
//! what one client costs bounded whatever it sends.
//!
//! actix-http's dispatcher answers pipelined requests while earlier answers are still unsent,
//! buffering them in memory: 64 connections that pipelined `GET /health` and never read took
//! the server from 27 MiB to 1.6 GiB. [`Paced`] sits between the dispatcher and the socket:
//!
//! - **Backpressure.** Once a write finds the socket full (the peer is not reading), no more
//!   request bytes are handed to the dispatcher until the socket takes writes again, and
//!   [`wait_for_peer`] holds each request of that connection before its handler runs, so no new
//!   answer is made while the old ones wait. What a connection can hold is then its read buffer
//!   and the answers in flight, a few tens of KiB.
//! - **A deadline on a peer that reads nothing.** A connection whose answers have waited for
//!   the peer longer than [`STALL_LIMIT`] is closed.
//! - **Framing counts.** Every byte read is counted, so a request body's chunked framing
//!   (extensions, size padding, trailers, which the decoder discards without a limit) is
//!   measured by [`Budget`] against `MAX_BODY_BYTES` like the body itself
//!   (`middleware::limits`).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use actix_web::rt::net::TcpStream;
use actix_web::rt::time::{Sleep, sleep};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;

/// How long a connection's answers may wait for a peer that reads nothing before the
/// connection is closed.
pub const STALL_LIMIT: Duration = Duration::from_secs(10);

/// How long a connection whose request body went past its limit stays open after the 413 was
/// written, so that the client can read it before the connection ends.
pub const CUT_GRACE: Duration = Duration::from_secs(1);

/// What a connection's requests share with its stream, in the connection's data.
#[derive(Debug)]
pub struct ConnectionState {
    /// True while answers wait for the peer to read.
    blocked: watch::Sender<bool>,
    /// Bytes read from the socket so far.
    read: AtomicU64,
    /// The read limit of the body being received, if any.
    budget: Mutex<Option<Limit>>,
    /// A body went past its limit: nothing more is read from this connection (its reader
    /// answers 413 and the connection ends; the rest of the framing is never read).
    cut: AtomicBool,
}

#[derive(Debug)]
struct Limit {
    /// The connection may have read this many bytes in all.
    until: u64,
    /// The body's reader, woken when the limit is reached.
    waker: Option<Waker>,
}

impl ConnectionState {
    fn new() -> Arc<ConnectionState> {
        Arc::new(ConnectionState {
            blocked: watch::Sender::new(false),
            read: AtomicU64::new(0),
            budget: Mutex::new(None),
            cut: AtomicBool::new(false),
        })
    }

    fn budget(&self) -> std::sync::MutexGuard<'_, Option<Limit>> {
        self.budget.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the connection has read past `limit`; once it has, it is cut for good.
    fn passed(&self, limit: &Limit) -> bool {
        let passed =
            self.cut.load(Ordering::Relaxed) || self.read.load(Ordering::Relaxed) >= limit.until;
        if passed {
            self.cut.store(true, Ordering::Relaxed);
        }
        passed
    }

    /// Whether reading may go on under the current body's limit; wakes its reader when not.
    fn may_read(&self) -> bool {
        if self.cut.load(Ordering::Relaxed) {
            return false;
        }
        match self.budget().as_mut() {
            Some(limit) if self.passed(limit) => {
                if let Some(waker) = limit.waker.take() {
                    waker.wake();
                }
                false
            }
            _ => true,
        }
    }

    fn set_blocked(&self, blocked: bool) {
        self.blocked.send_if_modified(|b| {
            let changed = *b != blocked;
            *b = blocked;
            changed
        });
    }

    /// Waits while the connection's answers wait for the peer (at most [`STALL_LIMIT`]; the
    /// stream closes the connection after that anyway).
    pub async fn wait_for_peer(&self) {
        if !*self.blocked.borrow() {
            return;
        }
        let mut blocked = self.blocked.subscribe();
        let _ = tokio::time::timeout(STALL_LIMIT, blocked.wait_for(|b| !*b)).await;
    }

    /// Starts measuring a request body: the connection may read at most `bytes` more before
    /// the body is complete (its framing included).
    pub fn start_body(self: &Arc<Self>, bytes: u64) -> Budget {
        *self.budget() = Some(Limit {
            until: self.read.load(Ordering::Relaxed).saturating_add(bytes),
            waker: None,
        });
        Budget {
            shared: self.clone(),
        }
    }
}

/// A request body's read limit; released when dropped (the body is read or abandoned).
#[derive(Debug)]
pub struct Budget {
    shared: Arc<ConnectionState>,
}

impl Budget {
    /// `true` once the connection has read past the limit; otherwise remembers `cx` to be woken
    /// when it does (the framing bytes that pass it yield no body data to wake the reader).
    pub fn exceeded(&self, cx: &Context<'_>) -> bool {
        match self.shared.budget().as_mut() {
            Some(limit) if self.shared.passed(limit) => true,
            Some(limit) => {
                limit.waker = Some(cx.waker().clone());
                false
            }
            None => false,
        }
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        self.shared.budget().take();
    }
}

/// The socket of one connection, paced by its peer's reading (see the module).
pub struct Paced {
    io: TcpStream,
    shared: Arc<ConnectionState>,
    /// Set while writes wait for the peer: when the connection gives up on it.
    stall: Option<Pin<Box<Sleep>>>,
    /// After a body was cut: when the connection ends (its 413 has a moment to be read).
    ending: Option<Pin<Box<Sleep>>>,
}

impl Paced {
    pub fn new(io: TcpStream) -> Paced {
        Paced {
            io,
            shared: ConnectionState::new(),
            stall: None,
            ending: None,
        }
    }

    pub fn tcp(&self) -> &TcpStream {
        &self.io
    }

    /// What the connection's requests share with it (`on_connect` puts it in their data).
    pub fn shared(&self) -> Arc<ConnectionState> {
        self.shared.clone()
    }

    fn unblock(&mut self) {
        self.stall = None;
        self.shared.set_blocked(false);
    }

    /// The error that ends a connection whose answers waited too long for the peer, once the
    /// stall's deadline has passed (polled from reads and writes alike: a dispatcher with a
    /// full read buffer stops reading, but it keeps trying to write).
    fn stalled(&mut self, cx: &mut Context<'_>) -> Option<io::Error> {
        let stall = self.stall.as_mut()?;
        stall.as_mut().poll(cx).is_ready().then(|| {
            io::Error::new(
                io::ErrorKind::TimedOut,
                "the peer read none of its answers in time",
            )
        })
    }
}

impl AsyncRead for Paced {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.stall.is_some() {
            match this.io.poll_write_ready(cx) {
                Poll::Ready(_) => this.unblock(),
                Poll::Pending => {
                    return match this.stalled(cx) {
                        Some(err) => Poll::Ready(Err(err)),
                        None => Poll::Pending,
                    };
                }
            }
        }
        if !this.shared.may_read() {
            // A body's limit is reached: its reader answers 413, and the connection ends
            // [`CUT_GRACE`] after that answer was written; the rest is never read.
            let ended = this
                .ending
                .as_mut()
                .is_some_and(|ending| ending.as_mut().poll(cx).is_ready());
            if ended {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "a request body went past MAX_BODY_BYTES",
                )));
            }
            return Poll::Pending;
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.io).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        this.shared.read.fetch_add(n as u64, Ordering::Relaxed);
        polled
    }
}

impl AsyncWrite for Paced {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        match Pin::new(&mut this.io).poll_write(cx, buf) {
            Poll::Pending => {
                if this.stall.is_none() {
                    this.stall = Some(Box::pin(sleep(STALL_LIMIT)));
                    this.shared.set_blocked(true);
                }
                match this.stalled(cx) {
                    Some(err) => Poll::Ready(Err(err)),
                    None => Poll::Pending,
                }
            }
            ready => {
                if this.stall.is_some() {
                    this.unblock();
                }
                if this.ending.is_none() && this.shared.cut.load(Ordering::Relaxed) {
                    let mut ending = Box::pin(sleep(CUT_GRACE));
                    // Registers the dispatcher's waker: it reads again when the grace is over.
                    let _ = ending.as_mut().poll(cx);
                    this.ending = Some(ending);
                }
                ready
            }
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
