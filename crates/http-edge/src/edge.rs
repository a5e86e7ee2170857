//! [`Edge`]: everything the edge's layers and extractors read, built once by the server from
//! its configuration and registered as one piece of app data. A request that finds none is a
//! wiring mistake answered with a 500, never served with a layer switched off.

use actix_web::HttpRequest;
use actix_web::web::Data;

use crate::db::Db;
use crate::error::ApiError;
use crate::middleware::client::TrustedProxies;
use crate::middleware::limits::Limits;
use crate::middleware::problems::{ProblemBase, RouteTable};
use crate::middleware::rate_limit::RateLimiter;

pub struct Edge {
    /// The app-level database handle (the layers' own bookkeeping; handlers extract [`Db`]).
    pub db: Db,
    pub limits: Limits,
    /// Where problem `type` URIs point.
    pub problems: ProblemBase,
    /// Every route and its methods, from the OpenAPI document (405 `Allow`, HEAD).
    pub routes: RouteTable,
    /// How long a create's `Idempotency-Key` and first answer are kept, measured so that a
    /// step of the wall clock expires nothing.
    pub keys: idempotency::Expiry,
    /// `None`: no rate limit.
    pub rate_limit: Option<RateLimiter>,
    /// Who the client is behind reverse proxies (`middleware::client`).
    pub proxies: TrustedProxies,
    /// What `/metrics` exposes; the `metrics::record` layer adds to it.
    pub metrics: crate::metrics::Metrics,
    /// Path prefixes whose answers may be cached (static assets): `middleware::headers` adds
    /// no `Cache-Control: no-store` to them.
    pub cacheable: Vec<String>,
    /// Where each request's span goes (`middleware::spans`); `None`: nowhere.
    pub spans: Option<trace_context::export::Exporter>,
    /// The operator's API keys and the JWT secret (`crate::credentials`).
    pub credentials: crate::credentials::Credentials,
}

impl Edge {
    /// The app's edge.
    pub fn of(req: &HttpRequest) -> Result<&Edge, ApiError> {
        registered(req).map(Data::get_ref)
    }
}

/// The app's one `Data<T>`: a 500 naming `T` when the app was built without it.
pub fn registered<T: 'static>(req: &HttpRequest) -> Result<&Data<T>, ApiError> {
    req.app_data::<Data<T>>().ok_or_else(|| {
        ApiError::internal(format!(
            "no Data<{}> in the app",
            std::any::type_name::<T>()
        ))
    })
}
