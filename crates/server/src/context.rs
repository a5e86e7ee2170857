//! [`Context`]: what the server's routes and layers share beyond the edge's
//! ([`http_edge::Edge`]), built once from the settings and registered as one piece of app
//! data. A request that finds none is a wiring mistake answered with a 500.

use actix_web::HttpRequest;
use actix_web::web::Data;
use http_edge::error::ApiError;

use crate::AppInfo;
use crate::auth::Guard;
use crate::deprecation::V1Policy;

pub struct Context {
    pub info: AppInfo,
    /// Group commit for ledger appends and webhook deliveries: one each per process, shared by
    /// every worker.
    pub appender: ledger::Appender,
    pub recorder: webhooks::Recorder,
    /// Webhook signatures: the secrets and the clock.
    pub intake: webhooks::Intake,
    pub v1: V1Policy,
    pub v1_usage: versioned_notes::UsageRecorder,
    /// Who may call what, and the operator's and the examples' credentials.
    pub guard: Guard,
    pub token_policy: tokens::Policy,
    /// Deletes expired idempotency keys while the app lives.
    pub pruner: idempotency::Pruner,
}

impl Context {
    /// The app's context.
    pub fn of(req: &HttpRequest) -> Result<&Context, ApiError> {
        http_edge::registered(req).map(Data::get_ref)
    }
}
