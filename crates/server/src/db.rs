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

    /// Runs a read with a pooled connection on the blocking pool.
    pub async fn read<T, E, F>(&self, f: F) -> Result<T, ApiError>
    where
        F: FnOnce(&mut DbConnection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: std::error::Error + Send + 'static,
        ApiError: From<E>,
    {
        self.read_as(f).await
    }

    /// Runs a write in a transaction that has committed when this returns `Ok`.
    pub async fn write<T, E, F>(&self, f: F) -> Result<T, ApiError>
    where
        F: FnOnce(&mut DbConnection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: std::error::Error + From<diesel::result::Error> + Send + 'static,
        ApiError: From<E>,
    {
        self.write_as(f).await
    }

    /// [`Db::read`] for a caller with its own error type `O`.
    pub async fn read_as<T, E, O, F>(&self, f: F) -> Result<T, O>
    where
        F: FnOnce(&mut DbConnection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: std::error::Error + Send + 'static,
        O: From<E> + From<ApiError>,
    {
        let store = self.store.clone();
        let outcome = web::block(move || store.read(f))
            .await
            .map_err(ApiError::internal)?;
        outcome.map_err(into_output)
    }

    /// [`Db::write`] for a caller with its own error type `O`.
    pub async fn write_as<T, E, O, F>(&self, f: F) -> Result<T, O>
    where
        F: FnOnce(&mut DbConnection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: std::error::Error + From<diesel::result::Error> + Send + 'static,
        O: From<E> + From<ApiError>,
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
        outcome.map_err(into_output)
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

/// A domain error stays the caller's own error type (area D renders its refusals itself); a
/// storage failure becomes a problem.
fn into_output<E, O: From<E> + From<ApiError>>(failure: Failure<E>) -> O {
    match failure {
        Failure::Op(e) => O::from(e),
        Failure::Store(e) => O::from(ApiError::from_store(e)),
    }
}
