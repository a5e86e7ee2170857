//! [`UsageRecorder`]: the V1 calls counted since the last write ([`crate::tally`]) and the
//! store they go to. A thread writes them every second; a read of the usage writes them first
//! ([`UsageRecorder::write`]), so this instance's calls are all in its answer; the last handle
//! to go writes what is left. Counting never fails a call: a write that fails is logged and its
//! counts wait for the next.

use std::sync::Arc;
use std::time::Duration;

use storage::Store;
use storage::timestamp::now_rfc3339;

use crate::tally::Tally;

#[derive(Clone)]
pub struct UsageRecorder {
    inner: Arc<Inner>,
}

struct Inner {
    tally: Tally,
    store: Store,
}

/// How often the thread writes the tally: the most a killed process loses.
const WRITE_EVERY: Duration = Duration::from_secs(1);

impl UsageRecorder {
    pub fn new(store: Store) -> Self {
        let inner = Arc::new(Inner {
            tally: Tally::default(),
            store,
        });
        let writer = Arc::downgrade(&inner);
        // Without the thread the tally is still written when full, when read, and at the end.
        let _ = std::thread::Builder::new()
            .name("v1-usage".into())
            .spawn(move || {
                while let Some(inner) = {
                    std::thread::sleep(WRITE_EVERY);
                    writer.upgrade()
                } {
                    inner.write();
                }
            });
        UsageRecorder { inner }
    }

    /// Counts one call of `caller` (see [`crate::caller`]); a full tally is written on a thread
    /// of its own, off the caller's.
    pub fn record(&self, caller: &str) {
        if self.inner.tally.record(caller, &now_rfc3339()) {
            let inner = Arc::clone(&self.inner);
            let _ = std::thread::Builder::new()
                .name("v1-usage-full".into())
                .spawn(move || inner.write());
        }
    }

    /// Writes what is counted, now (blocking: call it where blocking is allowed).
    pub fn write(&self) {
        self.inner.write();
    }
}

impl Inner {
    fn write(&self) {
        let counts = self.tally.take();
        if counts.is_empty() {
            return;
        }
        if let Err(err) = self
            .store
            .write(|c| crate::repo::usage::record_all(c, &counts))
        {
            log::warn!("cannot count {} V1 callers yet: {err:?}", counts.len());
            self.tally.restore(counts);
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.write();
    }
}
