//! The pool's connections: [`Conn`] (a connection that can be marked for discarding) and the
//! r2d2 [`Manager`] that makes them.

use diesel::r2d2::R2D2Connection;

use super::{Database, DbConnection, StorageError};

/// A pooled connection, and whether it may serve another request.
pub struct Conn {
    inner: DbConnection,
    discard: bool,
}

impl Conn {
    /// This connection goes back to the pool only to be closed (see
    /// [`crate::Fault::discards_connection`]).
    pub fn discard(&mut self) {
        self.discard = true;
    }

    pub fn is_discarded(&self) -> bool {
        self.discard
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
        Ok(Conn {
            inner: self.db.establish()?,
            discard: false,
        })
    }

    /// Runs on every checkout. Diesel's `ping` is a `SELECT 1` with a static query id, so its
    /// prepared statement is cached; a `sql_query` is not, and was parsed again on every
    /// request (6% of the CPU of `GET /notes/{id}` on SQLite).
    fn is_valid(&self, conn: &mut Conn) -> Result<(), StorageError> {
        conn.inner.ping().map_err(StorageError::Configure)
    }

    /// A connection whose transaction manager is in an unknown state, or that met a fault after
    /// which it cannot be trusted, is not reused.
    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.discard || conn.inner.is_broken()
    }
}
