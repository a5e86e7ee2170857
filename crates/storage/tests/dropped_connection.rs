//! A pooled PostgreSQL connection that the database dropped is not handed to a request as if it
//! worked (runs when `TEST_POSTGRES_URL` names a server). The pool skips its check for a
//! connection handed back moments ago, so the store itself must cope: a read runs again on a
//! fresh connection, a write begins on one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use diesel::RunQueryDsl;
use storage::{Database, DbConnection, Store};

#[derive(diesel::QueryableByName)]
struct Pid {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    pid: i32,
}

fn own_pid(conn: &mut DbConnection) -> diesel::QueryResult<i32> {
    Ok(diesel::sql_query("SELECT pg_backend_pid() AS pid")
        .get_result::<Pid>(conn)?
        .pid)
}

fn terminate(admin: &mut DbConnection, pid: i32) -> diesel::QueryResult<()> {
    diesel::sql_query(format!("SELECT pg_terminate_backend({pid})")).execute(admin)?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let left: Vec<Pid> = diesel::sql_query(format!(
            "SELECT pid FROM pg_stat_activity WHERE pid = {pid}"
        ))
        .load(admin)?;
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(())
}

/// Reads its session's pid, then has the database terminate that session and waits until it is
/// gone: the connection goes back to the pool looking healthy.
fn read_then_drop_own_session(store: &Store, admin: &mut DbConnection) -> i32 {
    store
        .read(|c| {
            let pid = own_pid(c)?;
            terminate(admin, pid)?;
            Ok::<_, diesel::result::Error>(pid)
        })
        .unwrap()
}

/// A store of `pool_size` connections and a connection of its own to terminate their sessions,
/// when `TEST_POSTGRES_URL` names a server.
fn store_and_admin(pool_size: u32) -> Option<(Store, DbConnection)> {
    let database = Database::parse(&std::env::var("TEST_POSTGRES_URL").ok()?).unwrap();
    let admin = database.establish().unwrap();
    Some((Store::open(database, pool_size).unwrap(), admin))
}

#[test]
#[cfg_attr(
    not(postgres_tests),
    ignore = "needs TEST_POSTGRES_URL (a PostgreSQL server)"
)]
fn reads_and_writes_go_on_after_the_database_drops_a_pooled_session() {
    let Some((store, mut admin)) = store_and_admin(1) else {
        return;
    };

    let dropped = read_then_drop_own_session(&store, &mut admin);
    let read = store
        .read(own_pid)
        .expect("the read runs again on a fresh connection");
    assert_ne!(read, dropped);

    let dropped = read_then_drop_own_session(&store, &mut admin);
    let written = store
        .write(own_pid)
        .expect("the write begins on a fresh connection");
    assert_ne!(written, dropped);
}

/// A restart drops every session: the second try does not take another dead one from the pool.
#[test]
#[cfg_attr(
    not(postgres_tests),
    ignore = "needs TEST_POSTGRES_URL (a PostgreSQL server)"
)]
fn a_read_goes_on_after_the_database_drops_every_pooled_session() {
    let Some((store, mut admin)) = store_and_admin(3) else {
        return;
    };
    let (mut one, mut two) = (store.checkout().unwrap(), store.checkout().unwrap());
    let pids = [own_pid(&mut one).unwrap(), own_pid(&mut two).unwrap()];
    let third = store
        .read(|c| {
            for pid in pids {
                terminate(&mut admin, pid)?;
            }
            let own = own_pid(c)?;
            terminate(&mut admin, own)?;
            Ok::<_, diesel::result::Error>(own)
        })
        .unwrap();
    drop((one, two));

    let read = store
        .read(own_pid)
        .expect("the read runs again on a live connection");
    assert!(!pids.contains(&read) && read != third, "{read} was dropped");
}
