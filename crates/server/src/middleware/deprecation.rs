//! V1 is deprecated: every response to a path under `/v1` carries `Deprecation`, `Sunset` and
//! `Link` (whatever produced it: a handler, an extractor's 413/415/422, a 404 for an unknown
//! path or id, a 405, a 401, a 429), and the calls that got past the rate limit and the token
//! guard are counted per caller. Two layers, for those two jobs: [`headers`] sits outside the
//! problem renderer, so it sees final responses; [`count`] sits inside the token guard, so
//! refused requests write nothing and, in tokens mode, the caller is the token's user rather
//! than a header anyone can set. Both see the path after percent-decoding (`/%761/notes` is
//! `/v1/notes`, `middleware::path`).

use actix_web::HttpMessage;
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use std::sync::Arc;
use std::time::Duration;

use actix_web::web::{self, Data};
use storage::Store;
use storage::timestamp::now_rfc3339;
use versioned_notes::tally::Tally;
use versioned_notes::{DeprecationForm, caller};

use http_edge::actor::actor_in;
use http_edge::middleware::client::TrustedProxies;

/// What the layers need from the settings.
#[derive(Debug, Clone, Copy)]
pub struct V1Policy {
    pub form: DeprecationForm,
    pub proxies: TrustedProxies,
}

/// `/v1` itself or anything below it.
pub fn is_v1(path: &str) -> bool {
    path == "/v1" || path.starts_with("/v1/")
}

/// The deprecation headers on every V1 response.
pub async fn headers(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let form = match req.app_data::<Data<V1Policy>>() {
        Some(policy) if is_v1(req.path()) => policy.form,
        _ => return Ok(next.call(req).await?.map_into_boxed_body()),
    };
    let mut res = next.call(req).await?.map_into_boxed_body();
    let headers = res.headers_mut();
    for (name, value) in form.headers() {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
    Ok(res)
}

/// Counts a V1 call that passed the rate limit and the token guard, in [`V1Usage`]'s tally.
pub async fn count(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let policy = match req.app_data::<Data<V1Policy>>() {
        Some(policy) if is_v1(req.path()) => *policy.get_ref(),
        _ => return Ok(next.call(req).await?.map_into_boxed_body()),
    };
    let authenticated = actor_in(&req.extensions()).owner_id();
    let who = match authenticated {
        Some(user_id) => caller(Some(&user_id.to_string()), None),
        None => caller(
            req.headers().get("x-user-id").and_then(|v| v.to_str().ok()),
            policy.proxies.of(&req),
        ),
    };
    let usage = req.app_data::<Data<V1Usage>>().cloned();
    let res = next.call(req).await?.map_into_boxed_body();
    if let Some(usage) = usage {
        usage.record(&who);
    }
    Ok(res)
}

/// The V1 calls counted since the last write (`versioned_notes::tally`) and the store they go
/// to. A thread writes them every second; `GET /metrics/v1-usage` writes them before it reads,
/// so this instance's calls are all in its answer; the last handle to go writes what is left.
/// Counting never fails a call: a write that fails is logged and its counts wait for the next.
#[derive(Clone)]
pub struct V1Usage {
    inner: Arc<UsageInner>,
}

struct UsageInner {
    tally: Tally,
    store: Store,
}

impl V1Usage {
    pub fn new(store: Store) -> Self {
        let inner = Arc::new(UsageInner {
            tally: Tally::default(),
            store,
        });
        let writer = Arc::downgrade(&inner);
        // Without the thread the tally is still written when full, when read, and at the end.
        let _ = std::thread::Builder::new()
            .name("v1-usage".into())
            .spawn(move || {
                while let Some(inner) = {
                    std::thread::sleep(WRITE_EVERY);
                    writer.upgrade()
                } {
                    inner.write();
                }
            });
        V1Usage { inner }
    }

    /// Counts one call; a full tally is written on the blocking pool, off this request.
    pub fn record(&self, caller: &str) {
        if self.inner.tally.record(caller, &now_rfc3339()) {
            let inner = Arc::clone(&self.inner);
            drop(actix_web::rt::task::spawn_blocking(move || inner.write()));
        }
    }

    /// Writes what is counted, now.
    pub async fn write(&self) {
        let inner = Arc::clone(&self.inner);
        let _ = web::block(move || inner.write()).await;
    }
}

/// How often the thread writes the tally: the most a killed process loses.
const WRITE_EVERY: Duration = Duration::from_secs(1);

impl UsageInner {
    fn write(&self) {
        let counts = self.tally.take();
        if counts.is_empty() {
            return;
        }
        if let Err(err) = self
            .store
            .write(|c| versioned_notes::repo::usage::record_all(c, &counts))
        {
            log::warn!("cannot count {} V1 callers yet: {err:?}", counts.len());
            self.tally.restore(counts);
        }
    }
}

impl Drop for UsageInner {
    fn drop(&mut self) {
        self.write();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_paths() {
        for path in ["/v1", "/v1/", "/v1/notes", "/v1/notes/1", "/v1/anything"] {
            assert!(is_v1(path), "{path}");
        }
        for path in [
            "/v2/notes",
            "/v10/notes",
            "/v1notes",
            "/notes",
            "/metrics/v1-usage",
        ] {
            assert!(!is_v1(path), "{path}");
        }
    }
}
