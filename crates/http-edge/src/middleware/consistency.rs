//! `Consistency-Token` on the answer of every successful write while PostgreSQL standbys serve
//! reads: the primary's WAL position once the write has committed, which a later read sends
//! back so that a standby serves it only after replaying that far (`storage::replicas`). The
//! client crate carries the latest token of its session by itself.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;

use crate::db::CONSISTENCY_TOKEN;

pub async fn stamp(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let db = crate::Edge::of(req.request())?.db.clone();
    let reads = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if reads || !db.has_replicas() {
        return next.call(req).await;
    }
    let mut res = next.call(req).await?;
    if res.status().is_success() {
        // Without a position (the primary went away after the commit) the answer carries no
        // token, and the caller's next read goes to the primary: never a stale read.
        match db.wal_position().await {
            Ok(Some(lsn)) => {
                if let Ok(value) = HeaderValue::from_str(&lsn.to_string()) {
                    res.headers_mut()
                        .insert(HeaderName::from_static(CONSISTENCY_TOKEN), value);
                }
            }
            Ok(None) => {}
            Err(err) => log::warn!("no consistency token for a write: {err}"),
        }
    }
    Ok(res)
}
