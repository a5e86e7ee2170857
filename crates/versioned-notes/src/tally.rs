//! V1 calls counted in memory and written in batches (`repo::usage::record_all`): counting a
//! call costs a map update instead of a database write, so a V1 read costs what a V2 read costs.
//! The server writes the tally every second, before answering `GET /metrics/v1-usage`, when it
//! holds [`MAX_PENDING_CALLERS`] callers, and at shutdown; a killed process loses at most the
//! last second's counts.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

/// One caller's calls since the last write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub calls: i64,
    /// RFC 3339, UTC: the first and the last call counted here.
    pub first_seen: String,
    pub last_seen: String,
}

/// Callers held before a write is due whatever the clock says: bounds the memory a flood of
/// distinct callers can take between two writes.
pub const MAX_PENDING_CALLERS: usize = 10_000;

/// The calls counted since the last write, by caller (sorted, so that every instance writes its
/// callers in the same order and two writes cannot deadlock on PostgreSQL).
pub type Counts = BTreeMap<String, Pending>;

#[derive(Debug, Default)]
pub struct Tally {
    pending: Mutex<Counts>,
}

impl Tally {
    /// Counts one call by `caller` at `now`. True when the tally holds
    /// [`MAX_PENDING_CALLERS`] callers and should be written now.
    pub fn record(&self, caller: &str, now: &str) -> bool {
        let mut pending = self.lock();
        match pending.get_mut(caller) {
            Some(p) => {
                p.calls += 1;
                now.clone_into(&mut p.last_seen);
            }
            None => {
                pending.insert(
                    caller.to_owned(),
                    Pending {
                        calls: 1,
                        first_seen: now.to_owned(),
                        last_seen: now.to_owned(),
                    },
                );
            }
        }
        pending.len() >= MAX_PENDING_CALLERS
    }

    /// Everything counted so far, leaving the tally empty.
    pub fn take(&self) -> Counts {
        std::mem::take(&mut *self.lock())
    }

    /// Puts back counts a failed write could not store, merged with those counted since.
    pub fn restore(&self, counts: Counts) {
        let mut pending = self.lock();
        for (caller, older) in counts {
            match pending.get_mut(&caller) {
                Some(p) => {
                    p.calls += older.calls;
                    p.first_seen = older.first_seen;
                }
                None => {
                    pending.insert(caller, older);
                }
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        // A panic while holding the lock leaves whole entries only: the counts stay usable.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_calls_per_caller_with_first_and_last_seen() {
        let tally = Tally::default();
        assert!(!tally.record("user:1", "2026-01-01T00:00:00Z"));
        tally.record("user:1", "2026-01-01T00:00:05Z");
        tally.record("ip:10.0.0.1", "2026-01-01T00:00:03Z");
        let counts = tally.take();
        assert_eq!(
            counts["user:1"],
            Pending {
                calls: 2,
                first_seen: "2026-01-01T00:00:00Z".into(),
                last_seen: "2026-01-01T00:00:05Z".into(),
            }
        );
        assert_eq!(counts["ip:10.0.0.1"].calls, 1);
        assert!(tally.take().is_empty());
    }

    #[test]
    fn a_failed_write_puts_its_counts_back() {
        let tally = Tally::default();
        tally.record("user:1", "2026-01-01T00:00:00Z");
        let failed = tally.take();
        tally.record("user:1", "2026-01-01T00:00:09Z");
        tally.restore(failed);
        let counts = tally.take();
        assert_eq!(counts["user:1"].calls, 2);
        assert_eq!(counts["user:1"].first_seen, "2026-01-01T00:00:00Z");
        assert_eq!(counts["user:1"].last_seen, "2026-01-01T00:00:09Z");
    }

    #[test]
    fn asks_for_a_write_once_it_holds_the_most_callers() {
        let tally = Tally::default();
        let due = (0..MAX_PENDING_CALLERS)
            .map(|i| tally.record(&format!("ip:{i}"), "2026-01-01T00:00:00Z"))
            .collect::<Vec<_>>();
        assert!(!due[..MAX_PENDING_CALLERS - 1].iter().any(|d| *d));
        assert!(due[MAX_PENDING_CALLERS - 1]);
    }
}
