//! When a key's record expires, robust to steps of the wall clock.
//!
//! Records are stamped with the wall clock, because they outlive the process and are shared by
//! every instance on one database. But a wall clock can jump: an NTP step, a VM resumed after
//! a pause, an operator's `date -s`. Measured by the wall clock alone, a forward step as long
//! as the TTL expires every key at once, and a client's retry of a deposit then applies twice.
//! So "now", for expiry, is the earlier of the wall clock and the wall clock as this process
//! first read it plus the time its monotonic clock has measured since: a record expires only
//! when both say the TTL has passed. A backward step only keeps keys longer.
//!
//! A step made while no process was running cannot be told from a long outage. For the
//! ledger, where a repeat moves money, the same request is therefore recognised for
//! [`Expiry::SAME_REQUEST_TTLS`] TTLs ([`Expiry::same_request_since`]), and its records are
//! kept that long.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use chrono::{DateTime, SecondsFormat, Utc};

/// Where expiry reads the time: the system's clocks, or (in tests) a wall clock that can be
/// stepped as NTP or an operator would step it while the monotonic clock runs on.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    /// Seconds added to the system's wall clock; `None` for the system clock as it is.
    wall_step: Option<Arc<AtomicI64>>,
}

impl Clock {
    /// The system's wall and monotonic clocks.
    pub fn system() -> Clock {
        Clock::default()
    }

    /// The system's clocks, whose wall clock [`Clock::step_wall`] can step.
    pub fn steppable() -> Clock {
        Clock {
            wall_step: Some(Arc::new(AtomicI64::new(0))),
        }
    }

    /// Steps the wall clock by `seconds` (negative: back), as seen by every copy of this
    /// clock. Returns false, and does nothing, on the system clock.
    pub fn step_wall(&self, seconds: i64) -> bool {
        match &self.wall_step {
            Some(step) => {
                step.fetch_add(seconds, Ordering::SeqCst);
                true
            }
            None => false,
        }
    }

    pub fn wall(&self) -> SystemTime {
        let now = SystemTime::now();
        let Some(step) = &self.wall_step else {
            return now;
        };
        let step = step.load(Ordering::SeqCst);
        let by = Duration::from_secs(step.unsigned_abs());
        if step >= 0 {
            now.checked_add(by)
        } else {
            now.checked_sub(by)
        }
        .unwrap_or(now)
    }

    pub fn monotonic(&self) -> Instant {
        Instant::now()
    }
}

/// The expiry of keys kept for a TTL, read from one [`Clock`]. Clones share the first reading,
/// so a process should make one and hand it around.
#[derive(Debug, Clone)]
pub struct Expiry {
    ttl: Duration,
    clock: Clock,
    /// The wall and monotonic clocks, read together when this expiry was made.
    anchor: (SystemTime, Instant),
}

impl Expiry {
    /// How many TTLs the ledger recognises the same request for (see the module's docs).
    pub const SAME_REQUEST_TTLS: u32 = 7;

    /// Keys kept for `ttl`, by the system's clocks.
    pub fn new(ttl: Duration) -> Expiry {
        Expiry::with_clock(ttl, Clock::system())
    }

    pub fn with_clock(ttl: Duration, clock: Clock) -> Expiry {
        let anchor = (clock.wall(), clock.monotonic());
        Expiry { ttl, clock, anchor }
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Now, for expiry: the earlier of the wall clock and the first wall reading plus the
    /// monotonic time since.
    pub fn now(&self) -> SystemTime {
        let measured = self.anchor.0.checked_add(
            self.clock
                .monotonic()
                .saturating_duration_since(self.anchor.1),
        );
        let wall = self.clock.wall();
        measured.map_or(wall, |measured| measured.min(wall))
    }

    /// The stamp of a record made now (RFC 3339, UTC, seconds), by the wall clock: a record
    /// made after a forward step is kept longer, never shorter.
    pub fn stamp(&self) -> String {
        rfc3339(self.clock.wall())
    }

    /// Records stamped before this have expired (RFC 3339, as [`Expiry::stamp`]).
    pub fn not_before(&self) -> String {
        self.ago(self.ttl)
    }

    /// The ledger still recognises the same request in records stamped since this.
    pub fn same_request_since(&self) -> String {
        self.ago(self.ttl.saturating_mul(Expiry::SAME_REQUEST_TTLS))
    }

    fn ago(&self, by: Duration) -> String {
        rfc3339(self.now().checked_sub(by).unwrap_or(SystemTime::UNIX_EPOCH))
    }
}

fn rfc3339(at: SystemTime) -> String {
    DateTime::<Utc>::from(at).to_rfc3339_opts(SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(86_400);

    #[test]
    fn a_forward_step_of_the_wall_clock_expires_nothing() {
        let clock = Clock::steppable();
        let expiry = Expiry::with_clock(DAY, clock.clone());
        let made = expiry.stamp();
        assert!(made >= expiry.not_before());
        assert!(clock.step_wall(25 * 3600));
        // By the wall clock alone, the record would be a day and an hour old now.
        assert!(made < rfc3339(clock.wall() - DAY));
        assert!(
            made >= expiry.not_before(),
            "the monotonic clock says seconds"
        );
        // A record made after the step is stamped by the wall clock: kept longer.
        assert!(expiry.stamp() > made);
    }

    #[test]
    fn a_backward_step_keeps_keys_longer() {
        let clock = Clock::steppable();
        let expiry = Expiry::with_clock(Duration::from_secs(60), clock.clone());
        let before = expiry.not_before();
        clock.step_wall(-3600);
        assert!(expiry.not_before() < before);
    }

    #[test]
    fn without_a_step_the_cut_offs_follow_the_wall_clock() {
        let expiry = Expiry::new(DAY);
        let wall = SystemTime::now();
        let cut = expiry.not_before();
        assert!(cut <= rfc3339(wall - DAY + Duration::from_secs(1)));
        assert!(cut >= rfc3339(wall - DAY - Duration::from_secs(1)));
        assert!(expiry.same_request_since() < cut);
        assert!(!Clock::system().step_wall(1));
    }

    #[test]
    fn clones_share_the_step() {
        let clock = Clock::steppable();
        let copy = clock.clone();
        clock.step_wall(100);
        let drift = copy.wall().duration_since(SystemTime::now()).unwrap();
        assert!(drift > Duration::from_secs(98));
    }
}
