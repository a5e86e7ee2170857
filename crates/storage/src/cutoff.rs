//! Cutting off a PostgreSQL call that outlived its deadline.
//!
//! A request waits for the database at most its answer deadline (`Timeouts::answer`), but the
//! blocking call it made goes on: libpq has no client-side timeout, and a primary that is frozen
//! (stopped process, hung virtual machine) answers nothing while its host's kernel still
//! acknowledges every packet and keepalive, so neither `tcp_user_timeout` nor the keepalives end
//! the wait. Such a call kept its thread, its pool slot and (in a group-commit writer) every write
//! queued behind it until the frozen process resumed, long after a standby had been promoted
//! (docs/SCALING.md: appends and webhooks stalled for a whole 30 s freeze).
//!
//! So a call made under a deadline ([`within`]) arms each connection it takes; a watcher thread
//! shuts down the socket of a connection still armed 100 ms past its deadline. The blocked
//! libpq call returns at once with a lost connection, the connection is discarded
//! ([`Watch::was_cut`]), and the thread and the pool slot are free to reach the new primary.
//! Nobody waits for the cut call's result any more: its caller has been answered 503.
//!
//! Only PostgreSQL connections over TCP on Linux can be cut. Diesel does not expose libpq's
//! socket, so [`connect`] finds it: the one TCP socket to a port of the connection string that
//! appeared among the process's descriptors (`/proc/self/fd`) while the connection was made.
//! Connections are made one at a time in a process for that (r2d2 makes them on its own
//! threads, not on a request's), and a socket is only ever reached through a duplicate
//! (`pidfd_getfd`) checked to have the same two ends. This works through a TCP proxy too,
//! where the server never sees the service's own address. Anywhere else nothing is armed and
//! calls behave as before. SQLite has no peer that can freeze.

use std::cell::RefCell;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use diesel::pg::PgConnection;

/// How long past its deadline a call may still finish before it is cut off.
pub const GRACE: Duration = Duration::from_millis(100);

/// How often the watcher looks for calls past their deadline.
const PERIOD: Duration = Duration::from_millis(50);

thread_local! {
    /// The deadline of the call this thread is making, and the connections it armed.
    static CALL: RefCell<Option<Call>> = const { RefCell::new(None) };
}

struct Call {
    deadline: Instant,
    armed: Vec<Arc<Watch>>,
}

/// Runs `f` (database work on this thread) under `deadline`: a PostgreSQL connection `f` uses
/// is cut off when `f` is still using it [`GRACE`] after `deadline`. Within an outer `within`,
/// the outer deadline holds.
pub fn within<T>(deadline: Instant, f: impl FnOnce() -> T) -> T {
    let outermost = CALL.with(|call| {
        let mut call = call.borrow_mut();
        if call.is_some() {
            return false;
        }
        *call = Some(Call {
            deadline,
            armed: Vec::new(),
        });
        true
    });
    if !outermost {
        return f();
    }
    // Disarms on the way out, a panic included.
    struct Done;
    impl Drop for Done {
        fn drop(&mut self) {
            if let Some(call) = CALL.with(|call| call.borrow_mut().take()) {
                for watch in call.armed {
                    watch.disarm_if(call.deadline);
                }
            }
        }
    }
    let _done = Done;
    f()
}

/// A connection's socket as the watcher knows it.
#[derive(Debug)]
pub struct Watch {
    fd: i32,
    local: SocketAddr,
    peer: SocketAddr,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Cut off at this instant unless disarmed first.
    until: Option<Instant>,
    cut: bool,
}

impl Watch {
    /// Arms this connection with the deadline of the call this thread is making, if any.
    pub fn arm(self: &Arc<Self>) {
        CALL.with(|call| {
            if let Some(call) = call.borrow_mut().as_mut() {
                if let Ok(mut state) = self.state.lock() {
                    state.until = Some(call.deadline + GRACE);
                }
                if !call.armed.iter().any(|w| Arc::ptr_eq(w, self)) {
                    call.armed.push(Arc::clone(self));
                }
            }
        });
    }

    /// Disarms this connection: its call is over (it went back to the pool).
    pub fn disarm(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.until = None;
        }
    }

    /// Disarms this connection if the call with `deadline` armed it last: a connection this
    /// thread handed back may already serve another thread's call, armed with its own.
    fn disarm_if(&self, deadline: Instant) {
        if let Ok(mut state) = self.state.lock()
            && state.until == Some(deadline + GRACE)
        {
            state.until = None;
        }
    }

    /// Whether the watcher cut this connection off (it must not be used again).
    pub fn was_cut(&self) -> bool {
        self.state.lock().map_or(true, |state| state.cut)
    }

    /// Cuts the connection off if it is armed past `now`. Holding the state's lock while doing
    /// so keeps a call that just finished (and disarmed) from being cut.
    fn cut_if_late(&self, now: Instant) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let Some(until) = state.until.filter(|until| *until <= now) else {
            return;
        };
        state.until = None;
        if sockets::shut_down(self.fd, self.local, self.peer) {
            state.cut = true;
            log::warn!(
                "cut off a PostgreSQL connection to {} whose call was still waiting {:?} after \
                 its deadline (the server does not answer)",
                self.peer,
                now.saturating_duration_since(until) + GRACE,
            );
        }
    }
}

/// Opens a PostgreSQL connection with `open` and finds its socket (see the module's
/// documentation): the watch is `None` where it cannot be found (a Unix socket, another
/// operating system, `pidfd_getfd` not permitted). Every PostgreSQL connection of the process
/// should be opened through here (with no `ports` when it needs no watch), so that no other
/// one appears while a watched one is being opened.
pub fn connect<E>(
    ports: &[u16],
    open: impl FnOnce() -> Result<PgConnection, E>,
) -> Result<(PgConnection, Option<Arc<Watch>>), E> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _one = ONE_AT_A_TIME.lock();
    // A connection nobody watches needs no look at the descriptors.
    let before = if ports.is_empty() {
        HashSet::new()
    } else {
        sockets::inodes()
    };
    let mut conn = open()?;
    let mut found = sockets::new_ones(&before, ports);
    if found.len() > 1 {
        // Another part of the process opened a socket to the same port meanwhile (a test's
        // relay, say). Connected directly, the server knows which one is this session's.
        let ends = server_seen_ports(&mut conn);
        found.retain(|(_, local, peer)| ends == Some((local.port(), peer.port())));
    }
    let found = (found.len() == 1).then(|| found.remove(0));
    let watch = found.map(|(fd, local, peer)| {
        let watch = Arc::new(Watch {
            fd,
            local,
            peer,
            state: Mutex::default(),
        });
        watcher().add(&watch);
        watch
    });
    Ok((conn, watch))
}

/// This session's client and server ports as the server sees them (`None` over a Unix socket).
fn server_seen_ports(conn: &mut PgConnection) -> Option<(u16, u16)> {
    use diesel::RunQueryDsl;
    use diesel::dsl::sql;
    use diesel::sql_types::{Integer, Nullable};
    let (client, server): (Option<i32>, Option<i32>) = diesel::select((
        sql::<Nullable<Integer>>("inet_client_port()"),
        sql::<Nullable<Integer>>("inet_server_port()"),
    ))
    .get_result(conn)
    .ok()?;
    Some((u16::try_from(client?).ok()?, u16::try_from(server?).ok()?))
}

/// The watched connections, and the thread that looks at them.
struct Watcher {
    watches: Mutex<Vec<Weak<Watch>>>,
}

fn watcher() -> &'static Watcher {
    static WATCHER: OnceLock<&'static Watcher> = OnceLock::new();
    WATCHER.get_or_init(|| {
        let watcher: &'static Watcher = Box::leak(Box::new(Watcher {
            watches: Mutex::new(Vec::new()),
        }));
        // Without the thread nothing is cut off: calls wait as they did before.
        let _ = std::thread::Builder::new()
            .name("db-cutoff".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(PERIOD);
                    watcher.look();
                }
            });
        watcher
    })
}

impl Watcher {
    fn add(&self, watch: &Arc<Watch>) {
        if let Ok(mut watches) = self.watches.lock() {
            watches.push(Arc::downgrade(watch));
        }
    }

    fn look(&self) {
        let live: Vec<Arc<Watch>> = match self.watches.lock() {
            Ok(mut watches) => {
                watches.retain(|w| w.strong_count() > 0);
                watches.iter().filter_map(Weak::upgrade).collect()
            }
            Err(_) => return,
        };
        let now = Instant::now();
        for watch in live {
            watch.cut_if_late(now);
        }
    }
}

#[cfg(target_os = "linux")]
mod sockets {
    //! The process's own sockets, reached through its pidfd: `pidfd_getfd` hands out a
    //! duplicate that this code owns (no unsafe borrowing of a descriptor libpq owns), and a
    //! duplicate found to have other ends (the descriptor was closed and its number reused) is
    //! left alone.

    use std::collections::HashSet;
    use std::net::{Shutdown, SocketAddr};
    use std::os::fd::OwnedFd;
    use std::sync::OnceLock;

    use rustix::process::{PidfdFlags, PidfdGetfdFlags, getpid, pidfd_getfd, pidfd_open};

    fn own_pidfd() -> Option<&'static OwnedFd> {
        static PIDFD: OnceLock<Option<OwnedFd>> = OnceLock::new();
        PIDFD
            .get_or_init(|| match pidfd_open(getpid(), PidfdFlags::empty()) {
                Ok(fd) => Some(fd),
                Err(e) => {
                    log::info!("stuck PostgreSQL calls cannot be cut off here: pidfd_open: {e}");
                    None
                }
            })
            .as_ref()
    }

    /// A duplicate of descriptor `fd` of this process, as a socket.
    fn socket(fd: i32) -> Option<socket2::Socket> {
        pidfd_getfd(own_pidfd()?, fd, PidfdGetfdFlags::empty())
            .ok()
            .map(socket2::Socket::from)
    }

    /// An internet address of a socket (`None` for a Unix socket, or unconnected).
    fn ends(addr: std::io::Result<socket2::SockAddr>) -> Option<SocketAddr> {
        addr.ok()?.as_socket()
    }

    fn has_ends(socket: &socket2::Socket, local: SocketAddr, peer: SocketAddr) -> bool {
        ends(socket.local_addr()) == Some(local) && ends(socket.peer_addr()) == Some(peer)
    }

    /// This process's sockets, each as its descriptor and inode.
    fn sockets() -> Vec<(i32, String)> {
        let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let target = std::fs::read_link(entry.path()).ok()?;
                let inode = target.to_str()?.strip_prefix("socket:")?.to_owned();
                Some((entry.file_name().to_str()?.parse().ok()?, inode))
            })
            .collect()
    }

    /// The inodes of this process's sockets now.
    pub(super) fn inodes() -> HashSet<String> {
        sockets().into_iter().map(|(_, inode)| inode).collect()
    }

    /// The sockets opened since `before` (inodes) that are connected to one of `ports`: each
    /// as its descriptor and two ends.
    pub(super) fn new_ones(
        before: &HashSet<String>,
        ports: &[u16],
    ) -> Vec<(i32, SocketAddr, SocketAddr)> {
        if ports.is_empty() {
            return Vec::new();
        }
        sockets()
            .into_iter()
            .filter(|(_, inode)| !before.contains(inode))
            .filter_map(|(fd, _)| {
                let socket = socket(fd)?;
                let (local, peer) = (ends(socket.local_addr())?, ends(socket.peer_addr())?);
                ports.contains(&peer.port()).then_some((fd, local, peer))
            })
            .collect()
    }

    /// Shuts down both directions of socket `fd` if it still has these ends; whether it did.
    pub(super) fn shut_down(fd: i32, local: SocketAddr, peer: SocketAddr) -> bool {
        socket(fd)
            .filter(|s| has_ends(s, local, peer))
            .is_some_and(|s| s.shutdown(Shutdown::Both).is_ok())
    }
}

#[cfg(not(target_os = "linux"))]
mod sockets {
    use std::collections::HashSet;
    use std::net::SocketAddr;

    pub(super) fn inodes() -> HashSet<String> {
        HashSet::new()
    }

    pub(super) fn new_ones(_: &HashSet<String>, _: &[u16]) -> Vec<(i32, SocketAddr, SocketAddr)> {
        Vec::new()
    }

    pub(super) fn shut_down(_: i32, _: SocketAddr, _: SocketAddr) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A watch whose descriptor is no socket of this process: cutting it does nothing.
    fn unconnected() -> Arc<Watch> {
        Arc::new(Watch {
            fd: 1_000_000,
            local: "127.0.0.1:1".parse().unwrap(),
            peer: "127.0.0.1:2".parse().unwrap(),
            state: Mutex::default(),
        })
    }

    #[test]
    fn only_the_outermost_call_sets_the_deadline_and_leaving_it_disarms() {
        let watch = unconnected();
        let outer = Instant::now() + Duration::from_secs(5);
        within(outer, || {
            within(Instant::now(), || watch.arm());
            assert_eq!(watch.state.lock().unwrap().until, Some(outer + GRACE));
        });
        assert_eq!(
            watch.state.lock().unwrap().until,
            None,
            "disarmed on leaving"
        );
        watch.arm();
        assert_eq!(
            watch.state.lock().unwrap().until,
            None,
            "no call, nothing armed"
        );
    }

    #[test]
    fn leaving_a_call_keeps_the_arming_of_the_next_call_on_the_same_connection() {
        let watch = unconnected();
        let first = Instant::now() + Duration::from_secs(5);
        let second = first + Duration::from_secs(1);
        let (armed, go) = std::sync::mpsc::channel();
        let (rearmed, done) = std::sync::mpsc::channel();
        let (left, first_left) = std::sync::mpsc::channel();
        let watch = &watch;
        std::thread::scope(|s| {
            s.spawn(move || {
                within(first, || {
                    watch.arm();
                    // The connection goes back to the pool and serves another thread's call.
                    watch.disarm();
                    armed.send(()).unwrap();
                    done.recv().unwrap();
                });
                left.send(()).unwrap();
            });
            go.recv().unwrap();
            within(second, || {
                watch.arm();
                rearmed.send(()).unwrap();
                first_left.recv().unwrap();
                assert_eq!(watch.state.lock().unwrap().until, Some(second + GRACE));
            });
        });
    }

    #[test]
    fn a_late_watch_whose_socket_is_gone_is_disarmed_and_not_marked_cut() {
        let watch = unconnected();
        within(Instant::now(), || {
            watch.arm();
            watch.cut_if_late(Instant::now() + GRACE);
        });
        assert!(!watch.was_cut());
    }
}
