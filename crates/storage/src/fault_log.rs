//! [`FaultLog`]: the last write fault a store met, remembered for a while (for `/health`).

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::Duration;

use crate::Fault;

/// The last write fault and when it happened (time since the store started), lock-free: every
/// successful write clears it.
#[derive(Default)]
pub(crate) struct FaultLog {
    code: AtomicU8,
    at_ms: AtomicU64,
}

impl FaultLog {
    pub(crate) fn record(&self, fault: Fault, at: Duration) {
        self.at_ms.store(
            at.as_millis().try_into().unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        self.code.store(fault.code(), Ordering::Release);
    }

    pub(crate) fn clear(&self) {
        // Most writes succeed: skip the store when there is nothing to clear.
        if self.code.load(Ordering::Relaxed) != 0 {
            self.code.store(0, Ordering::Release);
        }
    }

    pub(crate) fn recent(&self, now: Duration, memory: Duration) -> Option<Fault> {
        let fault = Fault::from_code(self.code.load(Ordering::Acquire))?;
        let at = Duration::from_millis(self.at_ms.load(Ordering::Relaxed));
        (now.saturating_sub(at) < memory).then_some(fault)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FAULT_MEMORY;

    #[test]
    fn fault_log_forgets_after_a_success_or_a_while() {
        let log = FaultLog::default();
        assert_eq!(log.recent(Duration::ZERO, FAULT_MEMORY), None);
        log.record(Fault::Full, Duration::from_secs(1));
        assert_eq!(
            log.recent(Duration::from_secs(2), FAULT_MEMORY),
            Some(Fault::Full)
        );
        assert_eq!(log.recent(Duration::from_secs(12), FAULT_MEMORY), None);
        log.clear();
        assert_eq!(log.recent(Duration::from_secs(2), FAULT_MEMORY), None);
    }
}
