//! Lower CPU priorities for a thread of background work (the SQLite checkpointer, the webhook
//! dispatcher's sender and readers), so that it never takes a core from a request. Linux keeps
//! both the nice value and the scheduling class per thread; a thread inherits both from the
//! thread that created it, and without privilege it cannot raise either again.

/// The nice value of background threads: the lowest nice priority. A nice-19 thread still runs
/// when both cores are busy (about 1.5% of a core against a nice-0 one), so the checkpointer
/// keeps copying the WAL back and it cannot grow without bound; `wal_autocheckpoint` stays the
/// backstop.
pub const CHECKPOINTER_NICE: i32 = 19;

/// Gives the calling thread the nice value `nice`, for background work that must never take
/// the CPU from requests. `setpriority(PRIO_PROCESS, 0, …)` changes only the calling thread's
/// on Linux; elsewhere it would change the whole process, so it is not made. A thread that may
/// hold the SQLite write lock must not call it: descheduled under load, it would keep every
/// writer waiting.
pub fn lower_own_priority(nice: i32) {
    #[cfg(target_os = "linux")]
    let _ = rustix::process::setpriority_process(None, nice);
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

/// Puts the calling thread in Linux's idle scheduling class (`SCHED_IDLE`), after
/// [`lower_own_priority`]`(`[`CHECKPOINTER_NICE`]`)`: for background work that may take any
/// spare core but must give it up the moment a request's thread wakes, which a nice-19 thread
/// under the kernel's EEVDF scheduler does only at the end of part of its slice (the webhook
/// dispatcher's sender: docs/PERFORMANCE.md). Where the class is refused or absent, the nice
/// value stays.
///
/// Threads the caller creates afterwards are in the idle class too, for good: start any
/// thread that must not be (one that holds a pooled connection or a read snapshot others wait
/// for) before calling this. Never on a thread that may hold the SQLite write lock, nor one
/// holding a lock that request threads take.
pub fn idle_own_priority() {
    lower_own_priority(CHECKPOINTER_NICE);
    #[cfg(target_os = "linux")]
    #[allow(unsafe_code)]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: pid 0 names the calling thread (the kernel's scheduler calls act on thread
        // ids); `param` is a valid `sched_param` that lives through the call, which only reads
        // it.
        let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &raw const param) };
    }
}
