//! A PostgreSQL call stuck on a server that stopped answering is cut off after its deadline
//! (`storage::cutoff`), and the pool and a group-commit writer go on with fresh connections
//! while that server process is still frozen: the frozen-primary case of a failover.
//!
//! The backend process of this test's own idle session is frozen with SIGSTOP (which needs
//! root or the `postgres` user: skipped otherwise) and resumed when the test ends, failed or
//! not. Frozen while idle, it holds no lock anyone else waits for; the shared server's other
//! sessions are not touched. Needs `TEST_POSTGRES_URL`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use diesel::RunQueryDsl;
use diesel::dsl::sql;
use diesel::sql_types::Integer;
use storage::{Database, DbConnection, GroupCommit, Store, StoreError, Timeouts};

/// A frozen server process, resumed on drop.
struct Frozen(i32);

impl Frozen {
    fn freeze(pid: i32) -> Option<Frozen> {
        signal("-STOP", pid).then_some(Frozen(pid))
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        signal("-CONT", self.0);
    }
}

fn signal(which: &str, pid: i32) -> bool {
    std::process::Command::new("kill")
        .args([which, &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn backend_pid(conn: &mut DbConnection) -> Result<i32, diesel::result::Error> {
    diesel::select(sql::<Integer>("pg_backend_pid()")).get_result(conn)
}

/// A one-connection store with a short answer deadline; `None` without PostgreSQL.
fn store() -> Option<Store> {
    let Ok(url) = std::env::var("TEST_POSTGRES_URL") else {
        eprintln!("TEST_POSTGRES_URL not set: skipped");
        return None;
    };
    let timeouts = Timeouts {
        answer: Duration::from_millis(300),
        ..Timeouts::default()
    };
    let database = Database::parse(&url).unwrap().with_timeouts(timeouts);
    Some(Store::open(database, 1).unwrap())
}

/// The pooled session's backend, frozen; `None` when it cannot be signalled.
fn freeze_the_session(store: &Store) -> Option<(i32, Frozen)> {
    let pid = store.read(backend_pid).unwrap();
    match Frozen::freeze(pid) {
        Some(frozen) => Some((pid, frozen)),
        None => {
            eprintln!("cannot signal PostgreSQL's processes (not root or postgres): skipped");
            None
        }
    }
}

/// `f` on its own thread; its result, or a failure if it has not returned within 20 s (a call
/// that was not cut off waits as long as the process stays frozen).
fn returns<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{what}: still waiting on the frozen server after 20 s"))
}

#[test]
fn a_read_past_its_deadline_is_cut_off_and_the_pool_reaches_a_live_session() {
    let Some(store) = store() else { return };
    let Some((frozen_pid, _frozen)) = freeze_the_session(&store) else {
        return;
    };
    let reader = store.clone();
    // The only pooled connection is the frozen one: without the cut-off this waits until the
    // process resumes. With it, the call fails at its deadline and the read's second try runs
    // on a fresh session.
    let started = Instant::now();
    let pid = returns("the read", move || {
        let deadline = Instant::now() + Duration::from_millis(300);
        storage::cutoff::within(deadline, || reader.read(backend_pid))
    })
    .unwrap();
    assert_ne!(pid, frozen_pid, "served by another session");
    eprintln!("the read returned after {:?}", started.elapsed());
    // Outside any deadline nothing is armed: plain calls work as before.
    assert_eq!(store.read(backend_pid).unwrap(), pid);
}

#[test]
fn a_group_commit_batch_stuck_on_a_frozen_server_does_not_stall_the_writes_behind_it() {
    let Some(store) = store() else { return };
    let gc: GroupCommit<(), Result<i32, StoreError>> = GroupCommit::new(
        "test",
        store.clone(),
        |conn, jobs| {
            jobs.iter()
                .map(|()| backend_pid(conn).map_err(|e| StoreError::from_diesel(&e)))
                .collect()
        },
        Err,
    );
    let gc = Arc::new(gc);
    let Some((frozen_pid, _frozen)) = freeze_the_session(&store) else {
        return;
    };
    // The writer takes the frozen session for the first batch; the caller gets its answer when
    // the batch is cut off (a failure, or a success on a fresh session when the cut came
    // during `BEGIN`), not when the process resumes.
    let first = Arc::clone(&gc);
    if let Ok(pid) = returns("the first batch", move || first.submit_blocking(())) {
        assert_ne!(pid, frozen_pid);
    }
    // The next write reaches a live session while the first is still frozen.
    let next = Arc::clone(&gc);
    let pid = returns("the next batch", move || next.submit_blocking(())).unwrap();
    assert_ne!(pid, frozen_pid);
}
