//! The handlers' way to the database: reads on the blocking thread pool, writes through the
//! group-commit [`WriteQueue`] (committed before the answer, in a transaction shared with the
//! writes queued beside them). Failures become problems here, faults included.
//!
//! A handler extracts `Db` itself: the app's handle bound to the request, so it knows who asks
//! ([`Db::actor`], for the ownership rules) and every write it makes records its audit row
//! (crates/audit) in the write's own transaction. The app-level handle ([`crate::Edge`]'s, used by
//! the layers for their own bookkeeping) records nothing.

use std::future::{Ready, ready};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::dev::Payload;
use actix_web::error::BlockingError;
use actix_web::http::Method;
use actix_web::web::{self, Data};
use actix_web::{FromRequest, HttpRequest};
use ownership::Actor;
use storage::replicas::{Lsn, Replicas};
use storage::{Backend, DbConnection, Failure, Store, StoreError, WriteQueue};

use crate::error::ApiError;

#[derive(Clone)]
pub struct Db {
    store: Store,
    /// Every write goes through the group-commit writers: one commit (and one disk flush) per
    /// batch instead of per request, and on SQLite writers queued in order instead of sleeping
    /// on the lock. On PostgreSQL one transaction per request ran the create routes at 4.4-4.6k
    /// req/s, batched at 6.2-7.1k (`wrk -c16`, 2 cores, fresh database, 2026-11-28).
    queue: Arc<WriteQueue>,
    /// Who the request acts for (the app-level handle: nobody).
    actor: Actor,
    /// What a write of this request records in the audit trail; `None` for reads and for the
    /// app-level handle.
    action: Option<Arc<audit::Action>>,
    /// PostgreSQL standbys for reads (`DATABASE_REPLICA_URLS`).
    replicas: Option<Arc<Replicas>>,
    /// The request's `Consistency-Token`: the primary's WAL position a standby must have
    /// replayed before it serves this request's reads.
    token: Option<Lsn>,
}

/// The header that carries a write's WAL position out, and back in on a later read.
pub const CONSISTENCY_TOKEN: &str = "consistency-token";

/// Whether a write shares the write queue's batches ([`Db::write_as`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// In the next batch of the group-commit queue, with the writes queued beside it.
    Batch,
    /// In a transaction of its own on PostgreSQL: for a write that locks rows of the ledger's
    /// accounts (a transfer's two, in id order). In a shared batch its locks would add to those
    /// of the writes before it, and two batches (or a batch and a ledger batch) could hold them
    /// in opposite orders. Alone, its locks are taken in one sorted sweep, as every ledger
    /// batch takes its own: no cycle can form. SQLite has one writer and no deadlock: there it
    /// shares the queue's batches as usual.
    Alone,
}

/// Where a write's audit row says it wrote.
pub enum Wrote {
    /// The request's path.
    Path,
    /// Another resource: what a create made.
    At(String),
    /// Nothing (a replayed answer): no row.
    Nothing,
}

impl Db {
    pub fn new(store: Store) -> Self {
        let queue = Arc::new(WriteQueue::new(store.clone()));
        Db {
            store,
            queue,
            actor: Actor::Unidentified,
            action: None,
            replicas: None,
            token: None,
        }
    }

    /// Serves reads from `replicas` too (see `storage::replicas`).
    pub fn with_replicas(self, replicas: Replicas) -> Self {
        Db {
            replicas: (!replicas.is_empty()).then(|| Arc::new(replicas)),
            ..self
        }
    }

    /// Whether standbys serve reads, so writes answer a `Consistency-Token`.
    pub fn has_replicas(&self) -> bool {
        self.replicas.is_some()
    }

    /// The primary's WAL position now, within the answer deadline (`None` on SQLite).
    pub async fn wal_position(&self) -> Result<Option<Lsn>, ApiError> {
        let store = self.store.clone();
        self.blocking(move || store.wal_position())
            .await?
            .map_err(ApiError::from_store)
    }

    /// Who the request acts for.
    pub fn actor(&self) -> Actor {
        self.actor
    }

    /// The audit row a write of this request records, if any.
    pub fn action(&self) -> Option<&audit::Action> {
        self.action.as_deref()
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
        let (replicas, token) = (self.replicas.clone(), self.token);
        let outcome = self
            .blocking(move || match replicas {
                Some(replicas) => replicas.read(&store, token, f),
                None => store.read(f),
            })
            .await?;
        outcome.map_err(into_api_error)
    }

    /// [`Db::read`] on the primary whatever the standbys and the request's token: for reads
    /// that decide who may do what (a token's validity, an authentication) or that must see a
    /// write another request has just committed (an idempotency key's stored answer). A
    /// standby may lag, and a revocation must hold from the next request on.
    pub async fn read_primary<T, E, F>(&self, f: F) -> Result<T, ApiError>
    where
        F: FnMut(&mut DbConnection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: std::error::Error + Send + 'static,
        ApiError: From<E>,
    {
        Db {
            replicas: None,
            ..self.clone()
        }
        .read(f)
        .await
    }

    /// `f` (database work) on the blocking pool if it answers within `Timeouts::answer`, else
    /// a 503 `Timeout` fault: the request is answered whatever the database does (a frozen or
    /// unreachable one answers nothing, and no server-side timeout ends that wait). A
    /// PostgreSQL connection `f` is still waiting on past the deadline is cut off
    /// (`storage::cutoff`), so the thread and the pool slot do not stay with a dead server.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        let limit = self.store.timeouts().answer;
        bounded(self.store.observer(), limit, f)
            .await
            .map_err(ApiError::from_store)?
            .map_err(ApiError::internal)
    }

    /// Runs a write in a transaction that has committed when this returns `Ok`, with its audit
    /// row (on the request's path). `f` may run more than once: on PostgreSQL a write that
    /// waited for another batch's lock runs again in a later batch (`storage::write_queue`).
    pub async fn write<T, E, F>(&self, f: F) -> Result<T, ApiError>
    where
        F: Fn(&mut DbConnection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: std::error::Error + From<diesel::result::Error> + Send + 'static,
        ApiError: From<E>,
    {
        self.write_recorded(f, |_| Wrote::Path).await
    }

    /// [`Db::write`] whose audit row names what `wrote` says of the write's result.
    pub async fn write_recorded<T, E, F, W>(&self, f: F, wrote: W) -> Result<T, ApiError>
    where
        F: Fn(&mut DbConnection) -> Result<T, E> + Send + 'static,
        W: Fn(&T) -> Wrote + Send + 'static,
        T: Send + 'static,
        E: std::error::Error + From<diesel::result::Error> + Send + 'static,
        ApiError: From<E>,
    {
        self.write_as(Sharing::Batch, f, wrote).await
    }

    /// [`Db::write_recorded`], sharing the write queue's batches or not as `sharing` says.
    pub async fn write_as<T, E, F, W>(
        &self,
        sharing: Sharing,
        f: F,
        wrote: W,
    ) -> Result<T, ApiError>
    where
        F: Fn(&mut DbConnection) -> Result<T, E> + Send + 'static,
        W: Fn(&T) -> Wrote + Send + 'static,
        T: Send + 'static,
        E: std::error::Error + From<diesel::result::Error> + Send + 'static,
        ApiError: From<E>,
    {
        let f = self.recorded(f, wrote);
        if sharing == Sharing::Batch || self.store.backend() == Backend::Sqlite {
            return self.queue.write(f).await.map_err(into_api_error);
        }
        let store = self.store.clone();
        self.blocking(move || store.write(f))
            .await?
            .map_err(into_api_error)
    }

    /// `f`, and the audit row of what `wrote` says it wrote, in the same transaction.
    fn recorded<T, E, F, W>(
        &self,
        f: F,
        wrote: W,
    ) -> impl Fn(&mut DbConnection) -> Result<T, E> + Send + 'static + use<T, E, F, W>
    where
        F: Fn(&mut DbConnection) -> Result<T, E> + Send + 'static,
        W: Fn(&T) -> Wrote + Send + 'static,
        E: From<diesel::result::Error>,
    {
        let action = self.action.clone();
        move |c: &mut DbConnection| -> Result<T, E> {
            let done = f(c)?;
            if let Some(action) = &action {
                match wrote(&done) {
                    Wrote::Path => audit::record(c, action, None)?,
                    Wrote::At(resource) => audit::record(c, action, Some(&resource))?,
                    Wrote::Nothing => {}
                }
            }
            Ok(done)
        }
    }

    /// Whether the database would take a write now (see [`Store::check`]), bounded by
    /// `timeout`. Never writes.
    pub async fn check(&self, timeout: Duration) -> Result<(), StoreError> {
        let store = self.store.clone();
        match bounded(self.store.observer(), timeout, move || store.check()).await? {
            Ok(result) => result,
            Err(e) => Err(StoreError::new(storage::Fault::Unavailable, e.to_string())),
        }
    }
}

/// Runs `f` on the blocking pool under a deadline `limit` from now (see [`Db::blocking`]); the
/// inner error is the blocking pool's (`f` panicked).
async fn bounded<T: Send + 'static>(
    observer: Arc<dyn storage::observe::Observer>,
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<Result<T, BlockingError>, StoreError> {
    let submitted = Instant::now();
    let deadline = submitted + limit;
    let call = web::block(move || {
        let started = Instant::now();
        let done = storage::cutoff::within(deadline, f);
        observer.call(started - submitted, started.elapsed());
        done
    });
    match tokio::time::timeout_at(deadline.into(), call).await {
        Ok(done) => Ok(done),
        Err(_) => Err(StoreError::new(
            storage::Fault::Timeout,
            format!("no answer from the database within {limit:?}"),
        )),
    }
}

impl FromRequest for Db {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let db = match crate::Edge::of(req) {
            Ok(edge) => &edge.db,
            Err(err) => return ready(Err(err)),
        };
        let actor = crate::actor::actor(req);
        let reads = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
        let action = (!reads).then(|| {
            Arc::new(audit::Action {
                actor,
                method: req.method().to_string(),
                route: req.match_pattern().unwrap_or_else(|| req.path().to_owned()),
                path: req.path().to_owned(),
            })
        });
        let token = db
            .replicas
            .as_ref()
            .and_then(|_| req.headers().get(CONSISTENCY_TOKEN))
            .and_then(|v| v.to_str().ok())
            .and_then(Lsn::parse);
        ready(Ok(Db {
            actor,
            action,
            token,
            ..db.clone()
        }))
    }
}

// Documents nothing, as the app data it is read from.
crate::document_as!(Db => Data<crate::Edge>);

/// The operation's own error as its problem (or area D's plain body); a storage failure as
/// its fault's problem.
pub fn into_api_error<E>(failure: Failure<E>) -> ApiError
where
    ApiError: From<E>,
{
    match failure {
        Failure::Op(e) => ApiError::from(e),
        Failure::Store(e) => ApiError::from_store(e),
    }
}
