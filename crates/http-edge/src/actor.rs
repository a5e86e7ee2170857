//! Who a request acts for, as the server's access guard recorded it in the request's
//! extensions (inner layers and handlers key on it instead of on headers the client writes).

use actix_web::dev::Extensions;
use actix_web::{HttpMessage, HttpRequest};
use ownership::Actor;

/// Who the request acts for: `Unidentified` when no guard recorded anyone.
pub fn actor(req: &HttpRequest) -> Actor {
    actor_in(&req.extensions())
}

/// [`actor`] from a request's extensions.
pub fn actor_in(extensions: &Extensions) -> Actor {
    extensions.get::<Actor>().copied().unwrap_or_default()
}
