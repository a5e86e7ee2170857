//! The handlers' way to the database: reads on the blocking thread pool, writes through the
//! store's write path (one transaction each, committed before the answer; on SQLite through the
//! group-commit [`WriteQueue`]). Failures become problems here, faults included.

use std::sync::Arc;
use std::time::Duration;

use actix_web::web;
use storage::{Backend, DbConnection, Failure, Store, StoreError, WriteQueue};

use crate::error::ApiError;

#[derive(Clone)]
pub struct Db {
    store: Store,
    /// SQLite: every write shares the group-commit writer (one flush per batch with
    /// `synchronous=FULL`, writers queued in order instead of sleeping on the lock).
    /// PostgreSQL writes run on their own pooled connections, in parallel.
    queue: Option<Arc<WriteQueue>>,
}

impl Db {
    pub fn new(store: Store) -> Self {
        let queue =
            (store.backend() == Backend::Sqlite).then(|| Arc::new(WriteQueue::new(store.clone())));
        Db { store, queue }
    }

    pub fn backend(&self) -> Backend {
        self.store.backend()
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Runs a read with a pooled connection on the blocking pool; `f` runs a second time on
    /// another connection when the database had dropped the first (`storage::Store::read`).
    pub async fn read<T, E, F>(&self, f: F) -> Result<T, ApiError>
    where
        F: FnMut(&mut DbConnection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: std::error::Error + Send + 'static,
        ApiError: From<E>,
    {
        let store = self.store.clone();
        let outcome = web::block(move || store.read(f))
            .await
            .map_err(ApiError::internal)?;
        outcome.map_err(into_api_error)
    }

    /// Runs a write in a transaction that has committed when this returns `Ok`.
    pub async fn write<T, E, F>(&self, f: F) -> Result<T, ApiError>
    where
        F: FnOnce(&mut DbConnection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: std::error::Error + From<diesel::result::Error> + Send + 'static,
        ApiError: From<E>,
    {
        let outcome = match &self.queue {
            Some(queue) => queue.write(f).await,
            None => {
                let store = self.store.clone();
                web::block(move || store.write(f))
                    .await
                    .map_err(ApiError::internal)?
            }
        };
        outcome.map_err(into_api_error)
    }

    /// Whether the database would take a write now (see [`Store::check`]), bounded by
    /// `timeout`. Never writes.
    pub async fn check(&self, timeout: Duration) -> Result<(), StoreError> {
        let store = self.store.clone();
        let check = web::block(move || store.check());
        match tokio::time::timeout(timeout, check).await {
            Ok(Ok(result)) => result,
            Ok(Err(e)) => Err(StoreError::new(storage::Fault::Unavailable, e.to_string())),
            Err(_) => Err(StoreError::new(
                storage::Fault::Timeout,
                format!("no answer within {timeout:?}"),
            )),
        }
    }
}

/// The operation's own error as its problem (or area D's plain body); a storage failure as
/// its fault's problem.
fn into_api_error<E>(failure: Failure<E>) -> ApiError
where
    ApiError: From<E>,
{
    match failure {
        Failure::Op(e) => ApiError::from(e),
        Failure::Store(e) => ApiError::from_store(e),
    }
}
