//! HEAD wherever GET is served (RFC 9110 §9.3.2). The router only knows GET routes, so this
//! innermost layer routes a HEAD request as its GET; the HTTP/1 encoder, which remembers that
//! the request on the wire was HEAD, sends the GET's status and headers (its `Content-Length`
//! included) and no body. Every layer outside this one (the access log, the token guard, the
//! rate limit) still sees HEAD.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::middleware::Next;

pub async fn as_get(
    mut req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    if req.method() == Method::HEAD {
        req.head_mut().method = Method::GET;
    }
    next.call(req).await
}
