//! [`Context`]: what the server's handlers share beyond the edge's ([`http_edge::Edge`]),
//! built once from the settings and registered as one piece of app data; the server's two
//! layers have theirs (`auth::Guard`, `deprecation::V1`). A request that finds one missing is
//! a wiring mistake answered with a 500.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use actix_web::HttpRequest;
use actix_web::web::Data;
use http_edge::error::ApiError;

/// Identity of this instance, for `/`, `/health` and the problem documents.
#[derive(Debug, Clone)]
pub struct AppInfo {
    pub service_name: String,
}

pub struct Context {
    pub info: AppInfo,
    /// Group commit for ledger appends and webhook deliveries: one each per process, shared by
    /// every worker.
    pub appender: ledger::Appender,
    pub recorder: webhooks::Recorder,
    /// Webhook signatures: the secrets and the clock.
    pub intake: webhooks::Intake,
    /// `webhook_verifications_total` by outcome (`routes::webhooks::verifications`).
    pub webhook_verifications: prometheus::IntCounterVec,
    pub v1_usage: versioned_notes::UsageRecorder,
    pub token_policy: tokens::Policy,
    /// Deletes expired idempotency keys while the app lives.
    pub pruner: idempotency::Pruner,
    /// Outbound webhooks: delivers committed events to the registered endpoints.
    pub dispatcher: outbound_webhooks::dispatch::Dispatcher,
    /// The live event streams: their wake-up (every commit of an event) and their limits.
    pub streams: Arc<http_edge::sse::Streams>,
    /// Set from SIGTERM on: `/health/ready` answers 503 for the drain period.
    pub draining: Arc<AtomicBool>,
}

impl Context {
    /// Events of `accounts` were committed: their streams, the feed's and the dispatcher look
    /// now.
    pub fn events_committed(&self, accounts: &[&str]) {
        self.streams.notify(accounts);
        self.dispatcher.notify();
    }

    /// `event` was committed: as [`Context::events_committed`], and its account's streams are
    /// handed it (a caught-up stream sends it without reading it back).
    pub fn event_committed(&self, event: &ledger::Event) {
        let frame = || api_shapes::accounts::frame(&event.sequence, event.clone());
        self.streams
            .committed(&event.aggregate_id, event.sequence, frame);
        self.dispatcher.notify();
    }

    /// The app's context.
    pub fn of(req: &HttpRequest) -> Result<&Context, ApiError> {
        http_edge::registered(req).map(Data::get_ref)
    }
}
