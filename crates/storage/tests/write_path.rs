//! The write path answers only what it committed. SQLite reports a failed commit of an
//! autocommit `INSERT … RETURNING` only through `sqlite3_reset`, whose result Diesel drops: a
//! deferred foreign key violated by the insert fails exactly there (as a full disk does when the
//! WAL frames cannot be written at commit), so it reproduces the lost write without root or a
//! tiny file system.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use diesel::connection::SimpleConnection;
use diesel::sql_types::BigInt;
use diesel::{QueryableByName, RunQueryDsl};
use storage::{Database, DbConnection, Failure, Fault, Store, WriteQueue};

#[derive(QueryableByName, Debug)]
struct Id {
    #[diesel(sql_type = BigInt)]
    id: i64,
}

const SCHEMA: &str = "CREATE TABLE parent (id INTEGER PRIMARY KEY); \
     CREATE TABLE child (id INTEGER PRIMARY KEY, \
       parent_id INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED); \
     INSERT INTO parent (id) VALUES (1);";

/// An insert whose commit fails: the parent does not exist, and the check is deferred to
/// `COMMIT`.
fn insert_orphan(c: &mut DbConnection) -> Result<i64, diesel::result::Error> {
    diesel::sql_query("INSERT INTO child (parent_id) VALUES (999) RETURNING id")
        .get_result::<Id>(c)
        .map(|r| r.id)
}

fn insert_child(c: &mut DbConnection) -> Result<i64, diesel::result::Error> {
    diesel::sql_query("INSERT INTO child (parent_id) VALUES (1) RETURNING id")
        .get_result::<Id>(c)
        .map(|r| r.id)
}

fn children(store: &Store) -> i64 {
    store
        .read(|c| {
            diesel::sql_query("SELECT COUNT(*) AS id FROM child")
                .get_result::<Id>(c)
                .map(|r| r.id)
        })
        .map_err(|_| "count failed")
        .unwrap()
}

fn sqlite_store(name: &str) -> (Store, PathBuf) {
    let dir = std::env::temp_dir().join(format!("storage-wp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}", dir.join("t.db").display());
    let store = Store::open(Database::parse(&url).unwrap(), 4).unwrap();
    store.checkout().unwrap().batch_execute(SCHEMA).unwrap();
    (store, dir)
}

#[test]
fn autocommit_returning_hides_a_failed_commit_in_the_driver() {
    // The driver's behaviour this layer exists for: the id comes back, the row does not exist.
    let (store, dir) = sqlite_store("driver");
    let mut conn = store.checkout().unwrap();
    let reported = insert_orphan(&mut conn);
    drop(conn);
    assert!(reported.is_ok(), "Diesel reports the insert: {reported:?}");
    assert_eq!(children(&store), 0, "and nothing was stored");
    drop(store);
    // Best effort: the store's background checkpointer may still be closing its connection
    // (and SQLite removing its -wal and -shm files) while the directory goes.
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_write_path_reports_a_failed_commit() {
    let (store, dir) = sqlite_store("write");
    match store.write(insert_orphan) {
        Err(Failure::Store(e)) => assert_ne!(e.fault, Fault::Full, "{e}"),
        other => panic!("a failed commit must not be a success: {other:?}"),
    }
    assert_eq!(children(&store), 0);
    // The connection is usable again, and a good write commits.
    assert!(store.write(insert_child).is_ok());
    assert_eq!(children(&store), 1);
    drop(store);
    // Best effort: the store's background checkpointer may still be closing its connection
    // (and SQLite removing its -wal and -shm files) while the directory goes.
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_write_queue_fails_every_write_of_a_batch_whose_commit_fails() {
    let (store, dir) = sqlite_store("queue");
    let queue = WriteQueue::new(store.clone());
    let bad = queue.write_blocking(insert_orphan);
    assert!(matches!(bad, Err(Failure::Store(_))), "{bad:?}");
    assert_eq!(children(&store), 0);
    let good = queue.write_blocking(insert_child);
    assert!(good.is_ok(), "{good:?}");
    assert_eq!(children(&store), 1);
    drop(queue);
    drop(store);
    // Best effort: the store's background checkpointer may still be closing its connection
    // (and SQLite removing its -wal and -shm files) while the directory goes.
    let _ = std::fs::remove_dir_all(dir);
}

/// 32 concurrent writes share batches; a quarter refuse after writing (the write's own
/// error) and a quarter after the database refused a statement (a duplicate key, which on
/// PostgreSQL aborts the transaction until the write's savepoint is rolled back): each of
/// those is undone alone, and every other write commits.
fn refused_writes_roll_back_alone(store: &Store) {
    let queue = std::sync::Arc::new(WriteQueue::new(store.clone()));
    let outcomes: Vec<bool> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..32)
            .map(|i| {
                let queue = queue.clone();
                s.spawn(move || {
                    queue
                        .write_blocking(move |c| {
                            insert_child(c)?;
                            match i % 4 {
                                0 => Err(diesel::result::Error::RollbackTransaction),
                                1 => diesel::sql_query("INSERT INTO parent (id) VALUES (1)")
                                    .execute(c)
                                    .map(drop),
                                _ => Ok(()),
                            }
                        })
                        .is_ok()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let committed = outcomes.iter().filter(|ok| **ok).count() as i64;
    assert_eq!(committed, 16);
    assert_eq!(children(store), committed);
}

#[test]
fn a_refused_write_rolls_back_alone_and_its_neighbours_commit() {
    let (store, dir) = sqlite_store("neighbours");
    refused_writes_roll_back_alone(&store);
    drop(store);
    // Best effort: the store's background checkpointer may still be closing its connection
    // (and SQLite removing its -wal and -shm files) while the directory goes.
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn writes_into_replaced_files_are_refused() {
    let (store, dir) = sqlite_store("replaced");
    assert!(store.write(insert_child).is_ok());
    // A careless restore: another file moved over the database.
    let other = dir.join("other.db");
    std::fs::write(&other, b"").unwrap();
    std::fs::rename(&other, dir.join("t.db")).unwrap();
    match store.write(insert_child) {
        Err(Failure::Store(e)) => assert_eq!(e.fault, Fault::Replaced),
        other => panic!("{other:?}"),
    }
    assert_eq!(store.check().unwrap_err().fault, Fault::Replaced);
    drop(store);
    // Best effort: the store's background checkpointer may still be closing its connection
    // (and SQLite removing its -wal and -shm files) while the directory goes.
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
#[cfg_attr(
    not(postgres_tests),
    ignore = "needs TEST_POSTGRES_URL (a PostgreSQL server)"
)]
fn a_dead_postgres_connection_is_replaced_before_the_write_begins() {
    let Ok(admin) = std::env::var("TEST_POSTGRES_URL") else {
        return;
    };
    let name = format!("storage_wp_{}", std::process::id());
    let mut outside = Database::parse(&admin).unwrap().establish().unwrap();
    diesel::sql_query(format!("DROP DATABASE IF EXISTS {name}"))
        .execute(&mut outside)
        .unwrap();
    diesel::sql_query(format!("CREATE DATABASE {name}"))
        .execute(&mut outside)
        .unwrap();
    let url = format!("{}/{name}", admin.rsplit_once('/').unwrap().0);
    let store = Store::open(Database::parse(&url).unwrap(), 1).unwrap();
    store
        .checkout()
        .unwrap()
        .batch_execute("CREATE TABLE t (id BIGSERIAL PRIMARY KEY)")
        .unwrap();
    // Kill the pool's only connection from the outside, as an operator's
    // pg_terminate_backend would.
    diesel::sql_query(format!(
        "SELECT pg_terminate_backend(pid)::int AS id FROM pg_stat_activity \
         WHERE datname = '{name}' AND pid <> pg_backend_pid()"
    ))
    .execute(&mut outside)
    .unwrap();
    let id = store.write(|c| {
        diesel::sql_query("INSERT INTO t DEFAULT VALUES RETURNING id").get_result::<Id>(c)
    });
    assert!(id.is_ok(), "{id:?}");
    drop(store);
    diesel::sql_query(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&mut outside)
        .unwrap();
}

/// The parent and child tables on PostgreSQL.
const PG_SCHEMA: &str = "CREATE TABLE parent (id BIGINT PRIMARY KEY); \
     CREATE TABLE child (id BIGSERIAL PRIMARY KEY, \
       parent_id BIGINT REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED); \
     INSERT INTO parent (id) VALUES (1);";

/// A store on a fresh PostgreSQL database with `schema` (`None`, said so, without
/// TEST_POSTGRES_URL).
fn postgres_store(schema: &str) -> Option<(storage::testing::TestDatabase, Store)> {
    let Ok(admin) = std::env::var("TEST_POSTGRES_URL") else {
        eprintln!("TEST_POSTGRES_URL not set: skipped");
        return None;
    };
    let db = storage::testing::TestDatabase::create(storage::Backend::Postgres, Some(&admin))
        .unwrap()
        .unwrap();
    let store = Store::open(Database::parse(&db.url).unwrap(), 8).unwrap();
    store.checkout().unwrap().batch_execute(schema).unwrap();
    Some((db, store))
}

/// The same on PostgreSQL, where a write's savepoint is never released (`storage::savepoint`).
#[test]
fn a_refused_write_rolls_back_alone_and_its_neighbours_commit_on_postgres() {
    let Some((_db, store)) = postgres_store(PG_SCHEMA) else {
        return;
    };
    refused_writes_roll_back_alone(&store);
}

/// A write that swallows a failed statement and answers Ok. On PostgreSQL the failure aborted
/// the batch's transaction, whose `COMMIT` PostgreSQL would turn into a rollback without an
/// error: the batch fails instead, nothing is answered as stored that is not, and the queue
/// writes on. (SQLite undoes only the failed statement: the write commits as it answered.)
#[test]
fn a_write_that_swallows_a_failed_statement_is_not_answered_as_stored() {
    let swallowing = |c: &mut DbConnection| {
        insert_child(c)?;
        let _ = diesel::sql_query("INSERT INTO parent (id) VALUES (1)").execute(c);
        Ok::<_, diesel::result::Error>(())
    };
    let (store, dir) = sqlite_store("swallowed");
    let queue = WriteQueue::new(store.clone());
    assert!(queue.write_blocking(swallowing).is_ok());
    assert_eq!(children(&store), 1);
    drop(queue);
    drop(store);
    let _ = std::fs::remove_dir_all(dir);
    let Some((_db, store)) = postgres_store(PG_SCHEMA) else {
        return;
    };
    let queue = WriteQueue::new(store.clone());
    for write in [queue.write_blocking(swallowing), store.write(swallowing)] {
        assert!(matches!(write, Err(Failure::Store(_))), "{write:?}");
    }
    assert_eq!(children(&store), 0);
    assert!(queue.write_blocking(insert_child).is_ok());
    assert_eq!(children(&store), 1);
}

/// A PostgreSQL store with a table `pair` of two counted rows, ids 1 and 2.
fn pair_store() -> Option<(storage::testing::TestDatabase, Store)> {
    postgres_store(
        "CREATE TABLE pair (id BIGINT PRIMARY KEY, n BIGINT NOT NULL); \
         INSERT INTO pair VALUES (1, 0), (2, 0);",
    )
}

/// The counts of table `pair`, by id.
fn pair_counts(store: &Store) -> Vec<i64> {
    store
        .read(|c| {
            diesel::sql_query("SELECT n AS id FROM pair ORDER BY pair.id")
                .load::<Id>(c)
                .map(|rows| rows.into_iter().map(|r| r.id).collect())
        })
        .map_err(|_| "read failed")
        .unwrap()
}

/// `UPDATE pair SET n = n + 1 WHERE id = …` (the row lock a write takes).
fn bump(c: &mut DbConnection, id: i64) -> Result<(), diesel::result::Error> {
    diesel::sql_query(format!("UPDATE pair SET n = n + 1 WHERE id = {id}"))
        .execute(c)
        .map(drop)
}

/// Two writes of two batches lock two rows in opposite orders: each holds one and waits for
/// the other. The wait ends (PostgreSQL's deadlock detection, or sooner `LOCK_WAIT`) by
/// failing one of them, or both; a failed write's savepoint rolls back alone, and the queue
/// runs it again in a later batch: both succeed, each change counted once, and the store's
/// observer is told of each run again.
#[test]
fn a_write_that_two_batches_deadlock_runs_again_and_both_commit() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, mpsc};
    use std::time::Duration;
    // (SQLite has one writer and no deadlock.)
    let Some((_db, store)) = pair_store() else {
        return;
    };
    struct Conflicts(AtomicUsize);
    impl storage::observe::Observer for Conflicts {
        fn conflict(&self, writer: &'static str, _cause: storage::observe::Conflict) {
            assert_eq!(writer, "writes");
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let conflicts = Arc::new(Conflicts(AtomicUsize::new(0)));
    store.observe(conflicts.clone());
    let queue = WriteQueue::new(store.clone());
    let runs = Arc::new(AtomicUsize::new(0));
    // Each write, on its first run, locks its first row, says so, and waits (bounded: were the
    // two ever in one batch, the second could not run before the first ended) for the other's
    // word before it locks its second row.
    let write = |first: i64, second: i64, tell: mpsc::Sender<()>, hear: mpsc::Receiver<()>| {
        let (runs, hear) = (runs.clone(), std::sync::Mutex::new(hear));
        move |c: &mut DbConnection| {
            let run = runs.fetch_add(1, Ordering::SeqCst);
            bump(c, first)?;
            if run < 2 {
                let _ = tell.send(());
                let _ = hear.lock().unwrap().recv_timeout(Duration::from_secs(10));
            }
            bump(c, second)
        }
    };
    let (tell_a, hear_a) = mpsc::channel();
    let (tell_b, hear_b) = mpsc::channel();
    let (a, b) = (write(1, 2, tell_a, hear_b), write(2, 1, tell_b, hear_a));
    let outcomes = std::thread::scope(|s| {
        let first = s.spawn(|| queue.write_blocking(a));
        while runs.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let second = s.spawn(|| queue.write_blocking(b));
        [first.join().unwrap(), second.join().unwrap()]
    });
    for outcome in &outcomes {
        assert!(outcome.is_ok(), "{outcome:?}");
    }
    let runs = runs.load(Ordering::SeqCst);
    assert!(runs >= 3, "one of the two ran again");
    assert_eq!(
        conflicts.0.load(Ordering::SeqCst),
        runs - 2,
        "each run again counted"
    );
    let counted = pair_counts(&store);
    assert_eq!(counted, vec![2, 2], "each write counted once");
    drop(queue);
    drop(store);
}

/// A write that waits for a row lock longer than `LOCK_WAIT` (here another session holds the
/// row for 300 ms) is not left waiting: its savepoint rolls back and it runs again in a later
/// batch, as often as it takes, and succeeds once the lock is free. Two batches that would
/// deadlock thus cost `LOCK_WAIT`, not PostgreSQL's `deadlock_timeout`.
#[test]
fn a_write_waiting_for_a_lock_runs_again_until_it_is_free() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;
    let Some((_db, store)) = pair_store() else {
        return;
    };
    let mut holder = store.checkout().unwrap();
    holder
        .batch_execute("BEGIN; UPDATE pair SET n = n + 1 WHERE id = 1")
        .unwrap();
    let queue = WriteQueue::new(store.clone());
    let runs = Arc::new(AtomicUsize::new(0));
    let write = {
        let runs = runs.clone();
        move |c: &mut DbConnection| {
            runs.fetch_add(1, Ordering::SeqCst);
            bump(c, 2)?;
            bump(c, 1)
        }
    };
    let outcome = std::thread::scope(|s| {
        let writing = s.spawn(|| queue.write_blocking(write));
        std::thread::sleep(Duration::from_millis(300));
        holder.batch_execute("COMMIT").unwrap();
        writing.join().unwrap()
    });
    assert!(outcome.is_ok(), "{outcome:?}");
    assert!(runs.load(Ordering::SeqCst) > 1, "it ran again");
    assert_eq!(pair_counts(&store), vec![2, 1], "its change counted once");
}
