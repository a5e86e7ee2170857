//! Group commit for deliveries: concurrent requests share one transaction
//! ([`storage::GroupCommit`] running [`repo::record_batch`] in a savepoint of its transaction), so a burst of deliveries pays one
//! commit (one write-lock hand-over on SQLite, one disk flush on PostgreSQL) instead of one
//! each. Every request is still answered only after the commit that stores its delivery.

use storage::{DbConnection, GroupCommit, Store};

use crate::{Delivery, Error, Recorded, repo};

/// One per process, shared by every request.
pub struct Recorder(GroupCommit<Delivery, Result<Recorded, Error>>);

impl Recorder {
    pub fn new(store: Store) -> Self {
        Recorder(GroupCommit::new("webhooks", store, record_all, |e| {
            Err(Error::Store(e))
        }))
    }

    /// Stores `delivery` (or finds the original of an exact replay) in the next shared
    /// transaction; resolves once that transaction has committed.
    pub async fn record(&self, delivery: Delivery) -> Result<Recorded, Error> {
        self.0.submit(delivery).await
    }

    /// [`Recorder::record`] for a plain thread.
    pub fn record_blocking(&self, delivery: Delivery) -> Result<Recorded, Error> {
        self.0.submit_blocking(delivery)
    }
}

fn record_all(conn: &mut DbConnection, deliveries: Vec<Delivery>) -> Vec<Result<Recorded, Error>> {
    let deliveries: Vec<&Delivery> = deliveries.iter().collect();
    // Each attempt in its own savepoint, so a refused one leaves nothing behind.
    match storage::savepoint(conn, |c| repo::record_batch(c, &deliveries)) {
        Ok(recorded) => recorded.into_iter().map(Ok).collect(),
        Err(e) if deliveries.len() == 1 => vec![Err(e)],
        // One delivery the database refuses must not fail its neighbours: each on its own.
        Err(_) => deliveries
            .iter()
            .map(|d| storage::savepoint(conn, |c| repo::record(c, d)))
            .collect(),
    }
}
