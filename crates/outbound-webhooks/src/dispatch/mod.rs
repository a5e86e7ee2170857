//! The dispatcher: delivers each endpoint's events, in feed order, at least once.
//!
//! - **The outbox is the event log.** An event is committed once, by its append; each
//!   endpoint keeps its place in the commit-ordered feed (`ledger::repo::feed_of`, only its
//!   owner's accounts). Nothing is delivered that was not committed, and nothing committed is
//!   skipped: the cursor moves past an event only once it was delivered, or given up on after
//!   the last attempt.
//! - **Order and retries.** An endpoint's next event waits for the one before it. A failed
//!   attempt (no answer within the timeout, a refused connection, a status other than 2xx) is
//!   tried again after `retry_base · 2^(n-1)` (at most `retry_max`), with up to a quarter of
//!   random jitter, until `max_attempts`; then it is logged `gave_up` and the endpoint goes on.
//! - **At least once.** A process killed between a delivery and its cursor write delivers
//!   that event again; the `webhook-id` (`evt_<event id>`) is the same, so receivers drop the
//!   duplicate.
//! - **Isolation.** The dispatcher has its own thread and runtime; appends never wait for it.
//!   Endpoints are delivered concurrently (`concurrency` at a time), so a slow or dead one
//!   delays only itself.
//! - **Cheap beside the appends.** The dispatcher's sending thread runs in the idle scheduling
//!   class (`SCHED_IDLE`, [`storage::idle_own_priority`]): it takes only CPU that nothing else
//!   wants, and gives a core up the moment a request's thread wakes. Nothing a request thread
//!   takes is held by it: a commit only sets a flag it looks at ([`Dispatcher::notify`]), its
//!   reads run on threads of the normal class (`readers`), and its writes (leases, log rows,
//!   cursors) on the normal-priority thread of a group commit of their own, which shares
//!   transactions instead of one each and does not wait for the disk flush (a power loss may
//!   take the last of them: the events after the cursor it leaves are sent again, with the
//!   same `webhook-id`; the appends themselves are flushed before anyone can read them). A
//!   round of deliveries starts at most every [`ROUND_SPACING`], so that under a stream of
//!   appends each round carries several events instead of one. docs/PERFORMANCE.md has what
//!   each of these gained.
//! - **Several processes.** An endpoint is delivered by the process holding its lease (a row
//!   update, renewed with every cursor write, lost when not renewed for `lease`): one at a time,
//!   so order holds across instances. One exception: a sender kept off the CPU for longer than
//!   the lease's margin (a CPU full for seconds gives the idle class almost nothing) may send
//!   one event after its lease ran out and another process took the endpoint over; the
//!   receiver then gets that event again, late, with the same `webhook-id`, and the late
//!   sender's writes are refused.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ownership::Actor;
use storage::{DbConnection, Failure, Store};
use tokio::sync::Semaphore;

use crate::Error;
use crate::model::Delivery;
use crate::repo::{self, NewDelivery};

mod attempt;
mod deliver;
mod readers;
mod settings;

pub use attempt::{body, message_id};
pub use settings::Settings;

use attempt::Resolver;
use readers::Readers;

/// How long one turn of an endpoint's deliveries may go on before its slot is given back.
const YIELD_AFTER: std::time::Duration = std::time::Duration::from_secs(5);

/// The least time between the starts of two rounds, and how often the sender looks whether
/// this process committed events: an event committed within it of the last round waits for
/// the next (the price in delivery latency), and a round carries every event that came
/// meanwhile.
pub const ROUND_SPACING: std::time::Duration = std::time::Duration::from_millis(20);

/// The dispatcher of this process (cheap to clone). Dropping the last clone stops it.
#[derive(Clone)]
pub struct Dispatcher {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    /// The dispatcher's writes, in shared transactions.
    writes: storage::WriteQueue,
    settings: Settings,
    http: reqwest::Client,
    /// This process's name on the leases it holds.
    me: String,
    /// Events were committed here since the last round. A flag the sender looks at, not a
    /// wake-up: waking a task of the sender's runtime takes a lock that the sender, in the
    /// idle class and descheduled, may hold, and the request thread that committed would wait
    /// for it.
    pending: AtomicBool,
    /// The threads that run its reads (not in the sender's idle class); none when it does not
    /// send (no signing key).
    readers: Option<Readers>,
    /// Endpoints a task of this process is delivering for: one task per endpoint (the lease
    /// keeps other processes out, this keeps this one's ticks from starting a second).
    busy: std::sync::Mutex<std::collections::HashSet<i64>>,
}

impl Dispatcher {
    /// Starts delivering on a thread of its own (nothing when no signing key is set).
    pub fn start(store: Store, settings: Settings) -> Result<Dispatcher, Error> {
        let resolver = Arc::new(Resolver::new(settings.allow.clone()));
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            // A proxy would resolve the destination itself, past the resolver's checks.
            .no_proxy()
            .dns_resolver(resolver)
            .user_agent(concat!(
                "notes-service-webhooks/",
                env!("CARGO_PKG_VERSION")
            ))
            .build()
            .map_err(|e| Error::Internal(e.to_string()))?;
        let mut me = [0u8; 8];
        getrandom::fill(&mut me).map_err(|e| Error::Internal(e.to_string()))?;
        let readers = settings.key.is_some().then(Readers::start).transpose()?;
        let inner = Arc::new(Inner {
            // Lost on a power loss, this bookkeeping is redone: the events are sent again.
            writes: storage::WriteQueue::named(
                "webhook-dispatch",
                store.clone(),
                storage::group_commit::Durability::Unflushed,
            ),
            store,
            settings,
            http,
            me: me.iter().map(|b| format!("{b:02x}")).collect(),
            pending: AtomicBool::new(false),
            readers,
            busy: std::sync::Mutex::new(std::collections::HashSet::new()),
        });
        if inner.settings.key.is_some() {
            let weak = Arc::downgrade(&inner);
            std::thread::Builder::new()
                .name("webhook-dispatch".into())
                .spawn(move || run(weak))
                .map_err(|e| Error::Internal(e.to_string()))?;
        }
        Ok(Dispatcher { inner })
    }

    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// Events were committed: look for due endpoints at the next round (within
    /// [`ROUND_SPACING`]).
    pub fn notify(&self) {
        self.inner.pending.store(true, Ordering::Release);
    }

    /// Sends the event of delivery `delivery_id` of endpoint `endpoint_id` again, now, and logs
    /// the attempt (`manual`), whatever the endpoint's own progress: a receiver that lost
    /// something asks for it again.
    pub async fn redeliver(
        &self,
        endpoint_id: String,
        delivery_id: i64,
        actor: Actor,
    ) -> Result<Delivery, Failure<Error>> {
        let inner = Arc::clone(&self.inner);
        let store = inner.store.clone();
        let (endpoint, event, versions) = blocking(move || {
            store.read(|c| -> Result<_, Error> {
                let endpoint = crate::service::get(c, &endpoint_id, actor)?;
                let not_found = || Error::NotFound {
                    id: format!("{endpoint_id}/deliveries/{delivery_id}"),
                };
                let delivery =
                    repo::get_delivery(c, endpoint.id, delivery_id)?.ok_or_else(not_found)?;
                let event =
                    ledger::repo::event_by_id(c, delivery.event_id)?.ok_or_else(not_found)?;
                let versions = repo::signing_versions(c, endpoint.id)?;
                Ok((endpoint, event, versions))
            })
        })
        .await?;
        // An unknown endpoint or delivery is 404 whether or not a key is set.
        let key = (inner.settings.key.clone()).ok_or(Failure::Op(Error::NoSigningKey))?;
        let attempt = inner.send(&key, &endpoint, &versions, &event).await;
        let store = inner.store.clone();
        blocking(move || {
            store.write(|c| {
                let new = NewDelivery {
                    endpoint_id: endpoint.id,
                    message_id: &message_id(&event),
                    event_id: event.id,
                    attempt: 1,
                    outcome: if attempt.delivered() {
                        "delivered"
                    } else {
                        "failed"
                    },
                    response_status: attempt.status,
                    latency_ms: attempt.latency_ms,
                    error: attempt.error.as_deref(),
                    next_attempt_at: None,
                    manual: true,
                };
                Ok::<_, Error>(repo::insert_delivery(
                    c,
                    &new,
                    &storage::timestamp::now_sql(),
                )?)
            })
        })
        .await
    }
}

/// Runs `f` on the blocking pool of the current runtime.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Failure<Error>> + Send + 'static,
) -> Result<T, Failure<Error>> {
    match tokio::task::spawn_blocking(f).await {
        Ok(out) => out,
        Err(e) => Err(Failure::Op(Error::Internal(e.to_string()))),
    }
}

/// A failure for the log, with its causes.
fn say(failure: Failure<Error>) -> String {
    let mut out = match &failure {
        Failure::Op(e) => e.to_string(),
        Failure::Store(e) => e.to_string(),
    };
    if let Failure::Op(e) = &failure {
        let mut cause = std::error::Error::source(e);
        while let Some(c) = cause {
            out.push_str(": ");
            out.push_str(&c.to_string());
            cause = c.source();
        }
    }
    out
}

/// The dispatcher thread: a runtime of its own, until the dispatcher is dropped.
fn run(inner: std::sync::Weak<Inner>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        // Its blocking threads only look names up (at most `attempt::LOOKUPS` at once, which
        // cannot be cancelled), in the sender's idle class; its reads run on `readers`, and its
        // writes through its own group commit (`writes`), whose thread keeps the normal
        // priority (it may hold the SQLite write lock an append waits for).
        .max_blocking_threads(64)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            log::error!("webhook dispatcher: cannot start its runtime: {err}");
            return;
        }
    };
    // Sending is background work: under a full CPU the appends it follows go first, and the
    // deliveries catch up when the load eases (their order and the log are unaffected). The
    // idle class, not only nice 19: a niced thread still finished part of its slice before a
    // woken request thread got the core, and sending runs whenever a core is free.
    storage::idle_own_priority();
    runtime.block_on(async move {
        let Some(concurrency) = inner.upgrade().map(|i| i.settings.concurrency.max(1)) else {
            return;
        };
        let permits = Arc::new(Semaphore::new(concurrency));
        loop {
            let Some(strong) = inner.upgrade() else {
                return;
            };
            let started = tokio::time::Instant::now();
            if let Err(err) = Arc::clone(&strong).tick(&permits).await {
                log::warn!("webhook dispatcher: {err}");
            }
            let poll = strong.settings.poll;
            drop(strong);
            // The next round: the first look, every ROUND_SPACING from this one's start, that
            // finds this process's commits pending, or the poll (other processes' commits).
            let mut look = started;
            loop {
                look = (look + ROUND_SPACING).max(tokio::time::Instant::now());
                tokio::time::sleep_until(look).await;
                let Some(strong) = inner.upgrade() else {
                    return;
                };
                if strong.pending.swap(false, Ordering::AcqRel) || started.elapsed() >= poll {
                    break;
                }
            }
        }
    });
}

impl Inner {
    /// Starts a delivery task for each due endpoint this process can lease.
    async fn tick(self: Arc<Self>, permits: &Arc<Semaphore>) -> Result<(), String> {
        let store = self.store.clone();
        let due = self
            .read(move || {
                store.read(|c| {
                    // Only endpoints with something after their place: an idle one costs nothing.
                    let head = ledger::repo::feed_head(c)?;
                    Ok::<_, Error>(repo::due(c, head, 256)?)
                })
            })
            .await
            .map_err(say)?;
        for id in due {
            let started = self.busy.lock().is_ok_and(|mut busy| busy.insert(id));
            if !started {
                continue;
            }
            let Ok(permit) = Arc::clone(permits).acquire_owned().await else {
                return Ok(());
            };
            let inner = Arc::clone(&self);
            tokio::spawn(async move {
                if let Err(err) = Arc::clone(&inner).deliver(id).await {
                    log::warn!("webhook endpoint {id}: {err}");
                }
                if let Ok(mut busy) = inner.busy.lock() {
                    busy.remove(&id);
                }
                drop(permit);
            });
        }
        Ok(())
    }

    /// Runs `read` on the dispatcher's reader threads.
    async fn read<T: Send + 'static>(
        &self,
        read: impl FnOnce() -> Result<T, Failure<Error>> + Send + 'static,
    ) -> Result<T, Failure<Error>> {
        match &self.readers {
            Some(readers) => readers.run(read).await,
            None => Err(Failure::Op(Error::NoSigningKey)),
        }
    }

    async fn write<T: Send + 'static>(
        &self,
        f: impl Fn(&mut DbConnection) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, String> {
        self.writes.write(f).await.map_err(say)
    }
}
