//! Each request as an OpenTelemetry server span, sent to a collector when the app configured
//! an exporter ([`crate::Edge::spans`]): named `METHOD /route/{template}` (never the raw
//! path), with the trace and span ids the request was stamped with (`traceresponse`, the log
//! line), its caller's span as parent, and the HTTP semantic conventions' attributes. Only
//! sampled traces are sent: a caller's `traceparent` decides for its trace; a trace this
//! service starts while exporting is sampled.

use std::time::SystemTime;

use actix_web::HttpMessage;
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use trace_context::export::{FinishedSpan, Value};

use crate::middleware::headers::Trace;

pub async fn export(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let Some(exporter) = crate::Edge::of(req.request())?.spans.clone() else {
        return next.call(req).await;
    };
    let client = crate::middleware::client::address(&req);
    let start = SystemTime::now();
    let res = next.call(req).await?;
    let request = res.request();
    let trace = request.extensions().get::<Trace>().copied();
    let Some(Trace { span, parent }) = trace.filter(|t| t.span.sampled()) else {
        return Ok(res);
    };
    let method = request.method().as_str().to_owned();
    let route = request.match_pattern();
    let status = res.status();
    let name = match &route {
        Some(route) => format!("{method} {route}"),
        None => method.clone(),
    };
    let mut attributes = vec![
        ("http.request.method", Value::Text(method)),
        (
            "http.response.status_code",
            Value::Int(i64::from(status.as_u16())),
        ),
        ("url.scheme", Value::Text("http".to_owned())),
    ];
    if let Some(route) = route {
        attributes.push(("http.route", Value::Text(route)));
    }
    if let Some(ip) = client {
        attributes.push(("client.address", Value::Text(ip.to_string())));
    }
    exporter.record(FinishedSpan {
        span,
        parent,
        name,
        start,
        end: SystemTime::now(),
        attributes,
        failed: status.is_server_error(),
    });
    Ok(res)
}
