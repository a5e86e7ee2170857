//! An endpoint's turn: its events delivered in feed order while it holds the lease, the
//! attempts and its place written as it goes, and the pause before a failed event is tried
//! again.

use std::sync::Arc;
use std::time::Instant;

use storage::timestamp::database_ms;

use super::attempt::Logged;
use super::{Inner, YIELD_AFTER, say};
use crate::repo::{self, Due};
use crate::{Error, SigningKey};

impl Inner {
    /// Delivers endpoint `id`'s events while it holds the lease and they succeed. Attempts are
    /// written (log rows and the cursor, one transaction) at most every 100 events or a
    /// quarter of the lease, and at once when one fails: a process killed in between sends
    /// the unwritten ones again (same `webhook-id`s).
    pub(super) async fn deliver(self: Arc<Self>, id: i64) -> Result<(), String> {
        let Some(key) = self.settings.key.clone() else {
            return Ok(());
        };
        let (me, span) = (self.me.clone(), self.settings.lease);
        // The lease's end is counted from before it was asked for: it is taken later than that
        // (by the database's clock), so it lasts at least until then.
        let asked = Instant::now();
        let leased = self
            .write(move |c| Ok(repo::lease(c, id, &me, span)?))
            .await?;
        let Some(due) = leased else {
            return Ok(());
        };
        let delivered = Arc::clone(&self).deliver_leased(&key, id, due, asked).await;
        if delivered.is_err() {
            // Whatever failed, the endpoint is not kept from the next tick (or process).
            let me = self.me.clone();
            let _ = self.write(move |c| Ok(repo::release(c, id, &me)?)).await;
        }
        delivered
    }

    /// [`Inner::deliver`] once the lease is held: batches of the owner's events in feed order,
    /// until none is left, one fails, or the lease is lost. The lease is renewed (with the
    /// attempts so far) before an attempt could outlast it.
    #[allow(clippy::too_many_lines)]
    async fn deliver_leased(
        self: Arc<Self>,
        key: &SigningKey,
        id: i64,
        due: Due,
        leased: Instant,
    ) -> Result<(), String> {
        const BATCH: i64 = 100;
        let Due {
            endpoint,
            mut cursor,
            versions,
        } = due;
        let mut failed = endpoint.failed_attempts;
        let (started, mut renewed) = (Instant::now(), leased);
        loop {
            let store = self.store.clone();
            let (after, owner) = (cursor, endpoint.owner_id);
            let (batch, head) = self
                .read(move || {
                    store
                        .read(|c| Ok::<_, Error>(ledger::repo::feed_batch(c, after, owner, BATCH)?))
                })
                .await
                .map_err(say)?;
            let mut whole = i64::try_from(batch.len()).unwrap_or(BATCH) < BATCH;
            let (mut log, mut waits) = (Vec::new(), None);
            for (position, event) in batch {
                if !endpoint.event_types.contains(&event.event_type) {
                    cursor = position;
                    continue;
                }
                // An attempt must end while the lease holds: renew it first when it might not.
                if renewed.elapsed() + self.settings.timeout >= self.settings.lease * 9 / 10 {
                    let log = std::mem::take(&mut log);
                    let asked = Instant::now();
                    if !self.record(id, log, cursor, failed, None, false).await? {
                        return Ok(());
                    }
                    renewed = asked;
                }
                let attempt = self.send(key, &endpoint, &versions, &event).await;
                let number = failed + 1;
                let outcome = if attempt.delivered() {
                    "delivered"
                } else if number >= self.settings.max_attempts {
                    "gave_up"
                } else {
                    waits = Some(self.backoff(number));
                    "failed"
                };
                log.push(Logged::new(&event, number, outcome, attempt, waits));
                if waits.is_some() {
                    failed = number;
                    break;
                }
                (cursor, failed) = (position, 0);
                if started.elapsed() >= YIELD_AFTER {
                    // The rest of the batch waits for the next turn.
                    whole = false;
                    break;
                }
            }
            // A short batch was everything of the owner's up to the head it was read with: the
            // next read starts there, not at the last event (others' events are not read again).
            let done = whole && waits.is_none();
            if done && head > cursor {
                cursor = head;
            }
            // A long backlog gives its delivery slot (and the lease) back now and then, so that
            // one slow endpoint does not keep a slot for hours; it is taken up again at once.
            let yielding = !done && waits.is_none() && started.elapsed() >= YIELD_AFTER;
            let asked = Instant::now();
            let still_ours =
                (self.record(id, log, cursor, failed, waits, done || yielding)).await?;
            if done || yielding || waits.is_some() || !still_ours {
                return Ok(());
            }
            renewed = asked;
        }
    }

    /// Writes attempts and where the endpoint stands, in one transaction, while this process
    /// holds its lease (`false` when it lost it). The lease is given back when the endpoint
    /// waits (`waits`: the pause before the next attempt, in ms) or has nothing more (`done`),
    /// so that its next event is taken up at once, by any process; otherwise it is renewed.
    /// Times are the database's ([`storage::timestamp::database_ms`]).
    #[allow(clippy::too_many_arguments)]
    async fn record(
        &self,
        id: i64,
        log: Vec<Logged>,
        cursor: ledger::FeedPosition,
        failed: i64,
        waits: Option<i64>,
        done: bool,
    ) -> Result<bool, String> {
        let (me, span) = (self.me.clone(), self.settings.lease);
        self.write(move |c| {
            let (now, now_ms) = (storage::timestamp::now_sql(), database_ms(c)?);
            let attempts: Vec<_> = log.iter().map(|entry| entry.as_new(id, now_ms)).collect();
            repo::log_deliveries(c, &attempts, &now)?;
            let lease = repo::after(now_ms, span);
            let (next_attempt_at, lease_until) = match (waits, done) {
                (Some(pause), _) => (now_ms.saturating_add(pause), 0),
                (None, true) => (0, 0),
                (None, false) => (0, lease),
            };
            let standing = repo::Standing {
                cursor,
                failed_attempts: failed,
                next_attempt_at,
                lease_until,
            };
            Ok(repo::advance(c, id, &me, &standing)?)
        })
        .await
    }

    /// The pause before attempt `failed + 1`: doubling from the base, capped, plus up to a
    /// quarter of jitter so that many endpoints failing together do not retry together.
    fn backoff(&self, failed: i64) -> i64 {
        let base = i64::try_from(self.settings.retry_base.as_millis()).unwrap_or(1_000);
        let max = i64::try_from(self.settings.retry_max.as_millis()).unwrap_or(i64::MAX);
        let exponent = u32::try_from(failed.saturating_sub(1))
            .unwrap_or(u32::MAX)
            .min(40);
        let pause = base.saturating_mul(1i64 << exponent).min(max);
        let mut noise = [0u8; 4];
        let jitter = match getrandom::fill(&mut noise) {
            Ok(()) => i64::from(u32::from_le_bytes(noise)) % (pause / 4 + 1),
            Err(_) => 0,
        };
        pause.saturating_add(jitter)
    }
}
