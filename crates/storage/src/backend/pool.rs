//! The pool's connections: [`Conn`] (a connection that can be marked for discarding) and the
//! r2d2 [`Manager`] that makes them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use diesel::r2d2::R2D2Connection;

use super::{Database, DbConnection, StorageError};
use crate::cutoff::Watch;

/// A pooled connection, and whether it may serve another request.
pub struct Conn {
    inner: DbConnection,
    discard: bool,
    /// When it last went back to the pool after serving a request.
    returned: Option<Instant>,
    /// How a call stuck on it past its deadline is cut off (PostgreSQL over TCP only).
    watch: Option<Arc<Watch>>,
}

/// A connection handed back less than this long ago is handed out again without the `SELECT 1`
/// round trip: it was just seen working. The check cost PostgreSQL's point read about a
/// fifth of its throughput (docs/PERFORMANCE.md). A connection the database dropped within
/// the window fails its first statement instead, and then is discarded; reads run once more on
/// a fresh connection (`Store::read`), writes find out at their `BEGIN` and do the same. The
/// window is HikariCP's (`aliveBypassWindowMs`).
pub const VALIDATION_BYPASS: Duration = Duration::from_millis(500);

impl Conn {
    /// This connection goes back to the pool only to be closed (see
    /// [`crate::Fault::discards_connection`]).
    pub fn discard(&mut self) {
        self.discard = true;
    }

    /// Whether it goes back to the pool only to be closed: discarded, or cut off.
    pub fn is_discarded(&self) -> bool {
        self.discard || self.watch.as_ref().is_some_and(|w| w.was_cut())
    }

    /// Lets the call this thread is making cut this connection off when it outlives its
    /// deadline ([`crate::cutoff`]). Taking a connection from the pool arms it; a connection
    /// kept between calls (a group-commit writer's) is armed again for each.
    pub fn arm(&self) {
        if let Some(watch) = &self.watch {
            watch.arm();
        }
    }
}

impl std::ops::Deref for Conn {
    type Target = DbConnection;
    fn deref(&self) -> &DbConnection {
        &self.inner
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut DbConnection {
        &mut self.inner
    }
}

/// The r2d2 manager: builds the right enum variant explicitly (never guessing the backend by
/// trying one after the other).
#[derive(Debug)]
pub struct Manager {
    db: Database,
}

impl Manager {
    pub(super) fn new(db: Database) -> Manager {
        Manager { db }
    }
}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = StorageError;

    fn connect(&self) -> Result<Conn, StorageError> {
        let (inner, watch) = self.db.establish_watched()?;
        Ok(Conn {
            inner,
            discard: false,
            returned: None,
            watch,
        })
    }

    /// Runs on every checkout; skipped for a connection handed back within
    /// [`VALIDATION_BYPASS`]. Diesel's `ping` is a `SELECT 1` with a static query id, so its
    /// prepared statement is cached; a `sql_query` is not, and was parsed again on every
    /// request (6% of the CPU of `GET /notes/{id}` on SQLite).
    fn is_valid(&self, conn: &mut Conn) -> Result<(), StorageError> {
        // Armed before the check: the check itself hangs on a frozen server.
        conn.arm();
        if recently_returned(conn.returned, Instant::now()) {
            return Ok(());
        }
        conn.inner.ping().map_err(StorageError::Configure)
    }

    /// A connection whose transaction manager is in an unknown state, or that met a fault after
    /// which it cannot be trusted, is not reused. Runs as each connection goes back to the
    /// pool, which is when it last worked.
    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.returned = Some(Instant::now());
        if let Some(watch) = &conn.watch {
            watch.disarm();
        }
        conn.is_discarded() || conn.inner.is_broken()
    }
}

/// Whether a connection handed back at `returned` may skip the check at `now`.
fn recently_returned(returned: Option<Instant>, now: Instant) -> bool {
    returned.is_some_and(|at| now.saturating_duration_since(at) < VALIDATION_BYPASS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_connection_handed_back_within_the_window_skips_the_check() {
        let now = Instant::now();
        assert!(!recently_returned(None, now), "a new connection is checked");
        assert!(recently_returned(Some(now), now));
        assert!(recently_returned(
            Some(now),
            now + VALIDATION_BYPASS - Duration::from_millis(1)
        ));
        assert!(!recently_returned(Some(now), now + VALIDATION_BYPASS));
        assert!(!recently_returned(Some(now), now + Duration::from_secs(60)));
    }
}
