//! Group commit on both databases (PostgreSQL when `TEST_POSTGRES_URL` is set): every job gets
//! its own answer after its batch ran, a panicking batch fails only its own jobs, and the writer
//! gives its connection back to the pool once the queue is empty.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use diesel::RunQueryDsl;
use storage::{Database, DbConnection, Fault, GroupCommit, Store, StoreError};

type Answer = Result<i64, StoreError>;

/// Answers each job with its double after a round trip to the database; panics on a negative
/// job.
fn double(conn: &mut DbConnection, jobs: Vec<i64>) -> Vec<Answer> {
    diesel::sql_query("SELECT 1").execute(conn).unwrap();
    assert!(jobs.iter().all(|&j| j >= 0), "negative job");
    jobs.iter().map(|&j| Ok(j * 2)).collect()
}

fn group_commit(store: &Store) -> GroupCommit<i64, Answer> {
    GroupCommit::new("test", store.clone(), double, Err)
}

/// One-connection stores: SQLite in a fresh file, and PostgreSQL when configured.
fn pools(name: &str) -> Vec<(Store, Option<PathBuf>)> {
    let dir = std::env::temp_dir().join(format!("storage-gc-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}", dir.join("t.db").display());
    let sqlite = Store::open(Database::parse(&url).unwrap(), 1).unwrap();
    let mut pools = vec![(sqlite, Some(dir))];
    if let Ok(url) = std::env::var("TEST_POSTGRES_URL") {
        pools.push((
            Store::open(Database::parse(&url).unwrap(), 1).unwrap(),
            None,
        ));
    }
    pools
}

fn cleanup(pools: Vec<(Store, Option<PathBuf>)>) {
    for (pool, dir) in pools {
        drop(pool);
        if let Some(dir) = dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[test]
fn every_concurrent_job_gets_its_own_answer() {
    let pools = pools("answers");
    for (pool, _) in &pools {
        let gc = group_commit(pool);
        std::thread::scope(|s| {
            for t in 0..8_i64 {
                let gc = &gc;
                s.spawn(move || {
                    for i in 0..50 {
                        let job = t * 1000 + i;
                        assert_eq!(gc.submit_blocking(job), Ok(job * 2));
                    }
                });
            }
        });
    }
    cleanup(pools);
}

#[test]
fn an_idle_writer_gives_its_connection_back() {
    let pools = pools("idle");
    for (pool, _) in &pools {
        let gc = group_commit(pool);
        assert_eq!(gc.submit_blocking(21), Ok(42));
        // The pool has one connection: this waits for the writer to return it (and fails after
        // the pool's connection timeout if it never does).
        let mut conn = pool
            .pool()
            .get()
            .expect("the idle writer returned its connection");
        diesel::sql_query("SELECT 1").execute(&mut **conn).unwrap();
        drop(conn);
        // And the writer takes it again for the next job.
        assert_eq!(gc.submit_blocking(5), Ok(10));
    }
    cleanup(pools);
}

#[test]
fn a_panicking_batch_fails_only_its_own_jobs() {
    let pools = pools("panic");
    for (pool, _) in &pools {
        let gc = group_commit(pool);
        let err = gc.submit_blocking(-1).unwrap_err();
        assert_eq!(err.fault, Fault::Unavailable);
        assert!(err.detail.contains("panicked"), "{err}");
        assert_eq!(gc.submit_blocking(4), Ok(8));
        assert!(
            pool.pool().get().is_ok(),
            "the connection went back to the pool"
        );
    }
    cleanup(pools);
}

/// Marks its connection with a temporary table (`"mark"`), reports whether the connection has
/// that mark (`"probe"`), or fails the way a statement on a read-only connection does
/// (`"read-only"`), while the batch around it commits.
fn marks(conn: &mut DbConnection, jobs: Vec<&'static str>) -> Vec<Result<bool, StoreError>> {
    jobs.into_iter()
        .map(|job| match job {
            "mark" => {
                diesel::sql_query("CREATE TEMPORARY TABLE IF NOT EXISTS marked (x INTEGER)")
                    .execute(conn)
                    .unwrap();
                Ok(true)
            }
            // In a savepoint of its own: on PostgreSQL a failed statement aborts the batch's
            // transaction, and a commit of an aborted transaction is refused.
            "probe" => Ok(storage::savepoint(conn, |c| {
                diesel::sql_query("SELECT x FROM marked").execute(c)
            })
            .is_ok()),
            _ => Err(StoreError::new(
                Fault::ReadOnly,
                "attempt to write a readonly database",
            )),
        })
        .collect()
}

/// A SQLite connection opened while the file was read-only stays read-only after the file is
/// writable again: its statements fail inside a batch that still commits. The writer must not
/// keep such a connection (the server would answer 503 to every write until restarted).
#[test]
fn a_job_that_meets_a_lasting_fault_discards_the_writer_connection() {
    let pools = pools("discard");
    for (pool, _) in &pools {
        let gc = GroupCommit::new("test", pool.clone(), marks, Err);
        assert_eq!(gc.submit_blocking("mark"), Ok(true));
        // One connection in the pool: the same one, still marked.
        assert_eq!(gc.submit_blocking("probe"), Ok(true));
        let err = gc.submit_blocking("read-only").unwrap_err();
        assert_eq!(err.fault, Fault::ReadOnly);
        assert_eq!(
            pool.check().unwrap_err().fault,
            Fault::ReadOnly,
            "/health hears about the job's fault"
        );
        assert_eq!(
            gc.submit_blocking("probe"),
            Ok(false),
            "the connection that met the fault was closed, the next batch runs on a new one"
        );
        assert!(pool.check().is_ok(), "a committed batch clears the fault");
    }
    cleanup(pools);
}

/// With the database unreachable, a batch learns it only after the checkout timeout. The jobs
/// that queued behind it meanwhile get that answer at once rather than one more checkout
/// timeout each, batch after batch (a PostgreSQL outage answered ledger appends after 3 s).
#[test]
fn jobs_queued_behind_an_unreachable_database_share_its_answer() {
    // Nothing listens on port 1: every connection attempt is refused until the checkout timeout.
    let mut db = Database::parse("postgres://postgres@127.0.0.1:1/none").unwrap();
    db.timeouts.checkout = std::time::Duration::from_secs(3);
    let store = Store::lazy(db, 1).unwrap();
    let gc = &group_commit(&store);
    std::thread::scope(|s| {
        let first = s.spawn(move || gc.submit_blocking(1));
        // Queued while the first batch waits for a connection (the wait is 3 s).
        std::thread::sleep(std::time::Duration::from_millis(300));
        let queued: Vec<_> = (0..4)
            .map(|i| s.spawn(move || gc.submit_blocking(i)))
            .collect();
        let first = first.join().unwrap().unwrap_err();
        assert_eq!(first.fault, Fault::Unavailable);
        assert!(!first.detail.contains("waited in the queue"), "{first}");
        for job in queued {
            let err = job.join().unwrap().unwrap_err();
            assert_eq!(err.fault, Fault::Unavailable);
            assert!(err.detail.contains("waited in the queue"), "{err}");
        }
    });
}

/// The durability a batch's transaction commits with: SQLite's `synchronous` (2 FULL, 1
/// NORMAL), PostgreSQL's `synchronous_commit`.
fn durability_seen(conn: &mut DbConnection) -> String {
    #[derive(diesel::QueryableByName)]
    struct Setting {
        #[diesel(sql_type = diesel::sql_types::Text)]
        value: String,
    }
    let query = match conn {
        DbConnection::Sqlite(_) => {
            "SELECT CAST(synchronous AS TEXT) AS value FROM pragma_synchronous"
        }
        DbConnection::Postgresql(_) => "SELECT current_setting('synchronous_commit') AS value",
    };
    diesel::sql_query(query)
        .get_result::<Setting>(conn)
        .unwrap()
        .value
}

fn durabilities(conn: &mut DbConnection, jobs: Vec<()>) -> Vec<Result<String, StoreError>> {
    let seen = durability_seen(conn);
    jobs.iter().map(|()| Ok(seen.clone())).collect()
}

/// An unflushed writer's batches commit without waiting for the flush, and its connection goes
/// back to the pool flushing again: nothing else ever commits unflushed by accident.
#[test]
fn an_unflushed_writer_gives_its_connection_back_flushing() {
    use storage::group_commit::Durability;
    let pools = pools("unflushed");
    for (pool, _) in &pools {
        let (flushed, unflushed) = match pool.backend() {
            storage::Backend::Sqlite => ("2", "1"),
            storage::Backend::Postgres => ("on", "off"),
        };
        let gc = GroupCommit::with_durability(
            "test",
            pool.clone(),
            durabilities,
            Err,
            Durability::Unflushed,
            storage::group_commit::MAX_BATCH,
            storage::group_commit::Locking::Ordered,
        );
        assert_eq!(gc.submit_blocking(()).unwrap(), unflushed);
        let mut conn = pool
            .pool()
            .get()
            .expect("the idle writer returned its connection");
        assert_eq!(durability_seen(&mut conn), flushed);
        drop(conn);
        let gc = GroupCommit::new("test", pool.clone(), durabilities, Err);
        assert_eq!(gc.submit_blocking(()).unwrap(), flushed);
    }
    cleanup(pools);
}

/// A batch whose `BEGIN` fails (another process holds SQLite's write lock past the lock
/// timeout) hands its connection back flushing: the pool never holds an unflushed connection.
#[test]
fn an_unflushed_writer_that_cannot_begin_leaves_no_unflushed_connection() {
    use diesel::Connection;
    use diesel::connection::SimpleConnection;
    use storage::group_commit::Durability;
    let dir = std::env::temp_dir().join(format!("storage-gc-busy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.db");
    let timeouts = storage::Timeouts {
        lock: std::time::Duration::from_millis(100),
        ..storage::Timeouts::default()
    };
    let database = Database::parse(&format!("sqlite://{}", path.display()))
        .unwrap()
        .with_timeouts(timeouts);
    let store = Store::open(database, 1).unwrap();
    let mut other = diesel::SqliteConnection::establish(path.to_str().unwrap()).unwrap();
    other.batch_execute("BEGIN IMMEDIATE").unwrap();
    let gc = GroupCommit::with_durability(
        "test",
        store.clone(),
        durabilities,
        Err,
        Durability::Unflushed,
        storage::group_commit::MAX_BATCH,
        storage::group_commit::Locking::Ordered,
    );
    assert_eq!(gc.submit_blocking(()).unwrap_err().fault, Fault::Busy);
    let mut conn = store
        .pool()
        .get()
        .expect("the writer returned its connection");
    assert_eq!(durability_seen(&mut conn), "2");
    drop(conn);
    other.batch_execute("ROLLBACK").unwrap();
    assert_eq!(gc.submit_blocking(()).unwrap(), "1");
    drop((gc, store));
    let _ = std::fs::remove_dir_all(dir);
}

static IN_FLIGHT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static MOST_IN_FLIGHT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A batch that takes a while, counting how many run at once.
fn slow(conn: &mut DbConnection, jobs: Vec<i64>) -> Vec<Answer> {
    use std::sync::atomic::Ordering;
    let now = IN_FLIGHT.fetch_add(1, Ordering::SeqCst) + 1;
    MOST_IN_FLIGHT.fetch_max(now, Ordering::SeqCst);
    let pause = match conn {
        DbConnection::Sqlite(_) => "SELECT 1",
        DbConnection::Postgresql(_) => "SELECT pg_sleep(0.05)",
    };
    diesel::sql_query(pause).execute(conn).unwrap();
    if matches!(conn, DbConnection::Sqlite(_)) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    jobs.iter().map(|&j| Ok(j * 2)).collect()
}

/// SQLite has one writer (one write lock per file); PostgreSQL runs `POSTGRES_WRITERS` batches
/// side by side when callers keep it busy, each on a connection of its own.
#[test]
fn postgres_runs_batches_side_by_side_and_sqlite_one_at_a_time() {
    use std::sync::atomic::Ordering;
    let dir = std::env::temp_dir().join(format!("storage-gc-writers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut stores = vec![(
        Store::open(
            Database::parse(&format!("sqlite://{}", dir.join("t.db").display())).unwrap(),
            8,
        )
        .unwrap(),
        1,
    )];
    if let Ok(url) = std::env::var("TEST_POSTGRES_URL") {
        let store = Store::open(Database::parse(&url).unwrap(), 8).unwrap();
        stores.push((store, storage::group_commit::POSTGRES_WRITERS));
    }
    for (store, writers) in stores {
        MOST_IN_FLIGHT.store(0, Ordering::SeqCst);
        let gc = GroupCommit::new("test", store, slow, Err);
        std::thread::scope(|s| {
            for t in 0..8_i64 {
                let gc = &gc;
                s.spawn(move || {
                    for i in 0..10 {
                        assert_eq!(gc.submit_blocking(t * 100 + i), Ok((t * 100 + i) * 2));
                    }
                });
            }
        });
        assert_eq!(MOST_IN_FLIGHT.load(Ordering::SeqCst), writers);
    }
    let _ = std::fs::remove_dir_all(dir);
}
