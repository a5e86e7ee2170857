//! HEAD wherever GET is served (RFC 9110 §9.3.2). The router only knows GET routes, so this
//! innermost layer routes a HEAD request as its GET; the HTTP/1 encoder, which remembers that
//! the request on the wire was HEAD, sends the GET's status and headers (its `Content-Length`
//! included) and no body. Every layer outside this one (the access log, the token guard, the
//! rate limit) still sees HEAD.
//!
//! A streamed body (an event stream, which never ends by itself) is dropped here: the encoder
//! would otherwise wait for its end, writing nothing, and hold the connection for good.

use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::body::{BodySize, EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::middleware::Next;
use actix_web::web::Bytes;

pub async fn as_get<B: MessageBody>(
    mut req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B, Ended>>, actix_web::Error> {
    let head = req.method() == Method::HEAD;
    if head {
        req.head_mut().method = Method::GET;
    }
    let res = next.call(req).await?;
    if head && res.response().body().size() == BodySize::Stream {
        return Ok(res.map_body(|_, _| EitherBody::right(Ended)));
    }
    Ok(res.map_into_left_body())
}

/// A streamed body that has already ended: the GET's framing (chunked), no bytes.
pub struct Ended;

impl MessageBody for Ended {
    type Error = std::convert::Infallible;

    fn size(&self) -> BodySize {
        BodySize::Stream
    }

    fn poll_next(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        Poll::Ready(None)
    }
}
