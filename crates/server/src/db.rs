//! Runs repository calls on the blocking thread pool so they never stall the async workers.

use std::time::Duration;

use actix_web::web;
use problem_details::{Problem, Slug};
use storage::{Backend, DbConnection, Pool};

use crate::error::ApiError;

#[derive(Clone)]
pub struct Db {
    pool: Pool,
    backend: Backend,
}

impl Db {
    pub fn new(pool: Pool, backend: Backend) -> Self {
        Db { pool, backend }
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Runs `f` with a pooled connection on the blocking pool. Domain errors convert into
    /// problems; an unavailable database is 503 (its cause goes to the log only).
    pub async fn run<T, E, F>(&self, f: F) -> Result<T, ApiError>
    where
        F: FnOnce(&mut DbConnection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: Send + 'static,
        ApiError: From<E>,
    {
        let pool = self.pool.clone();
        let outcome = web::block(move || {
            let mut conn = pool.get()?;
            Ok::<_, r2d2::Error>(f(&mut conn))
        })
        .await
        .map_err(ApiError::internal)?;
        match outcome {
            Ok(result) => result.map_err(ApiError::from),
            Err(pool_err) => Err(unavailable(pool_err)),
        }
    }

    /// `SELECT 1` bounded by `timeout`: true when the database answered in time.
    pub async fn ping(&self, timeout: Duration) -> bool {
        let pool = self.pool.clone();
        let check = web::block(move || {
            let mut conn = pool.get_timeout(timeout).ok()?;
            use diesel::RunQueryDsl;
            diesel::sql_query("SELECT 1").execute(&mut *conn).ok()
        });
        matches!(tokio::time::timeout(timeout, check).await, Ok(Ok(Some(_))))
    }
}

fn unavailable(cause: r2d2::Error) -> ApiError {
    let mut err = ApiError::internal(cause);
    *err.problem = Problem::new(
        Slug::ServiceUnavailable,
        "The database is unavailable; retry shortly.",
    );
    err
}
