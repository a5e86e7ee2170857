//! Finished spans sent to an OpenTelemetry collector over OTLP/HTTP, by the OpenTelemetry SDK's
//! batch processor and OTLP exporter (feature `otlp`). The caller keeps its own trace context
//! ([`TraceParent`]) and hands over each span when it is done; the span keeps that trace id,
//! its own span id (the one the caller already answered in `traceresponse` and logged) and the
//! caller's parent, so the collector's trace, the logs and the answers agree.
//!
//! Recording never blocks the caller: spans wait in the SDK's bounded queue (2,048) and are
//! sent in batches from the SDK's own thread; when the collector is slow or down, spans past
//! the queue are dropped, never the requests.

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
    Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracer, SdkTracerProvider,
};

use crate::TraceParent;

/// How spans travel: OTLP/HTTP with protobuf bodies (the collectors' default) or JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Protobuf,
    Json,
}

impl Encoding {
    /// `http/protobuf` or `http/json` (`OTEL_EXPORTER_OTLP_PROTOCOL`'s values); `grpc` is not
    /// offered.
    pub fn parse(value: &str) -> Option<Encoding> {
        match value.trim() {
            "http/protobuf" => Some(Encoding::Protobuf),
            "http/json" => Some(Encoding::Json),
            _ => None,
        }
    }
}

/// Where and how to send spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpConfig {
    /// The collector's base URL (`http://collector:4318`); spans go to `<base>/v1/traces`.
    pub endpoint: String,
    pub encoding: Encoding,
    /// `service.name` of every span's resource.
    pub service_name: String,
    /// The most one export request may take.
    pub timeout: Duration,
}

impl OtlpConfig {
    /// Spans to the collector at `endpoint` (its http:// or https:// base URL), encoded as
    /// `encoding` (protobuf when `None`), from `service_name`, each export within 5 s.
    pub fn new(
        endpoint: &str,
        encoding: Option<Encoding>,
        service_name: String,
    ) -> Result<OtlpConfig, &'static str> {
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(
                "expected the collector's http:// or https:// base URL (http://collector:4318)",
            );
        }
        Ok(OtlpConfig {
            endpoint: endpoint.to_owned(),
            encoding: encoding.unwrap_or(Encoding::Protobuf),
            service_name,
            timeout: Duration::from_secs(5),
        })
    }
}

/// The exporter could not be built (a malformed endpoint).
#[derive(Debug)]
pub struct ExportError(String);

impl std::fmt::Display for ExportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot export spans over OTLP: {}", self.0)
    }
}

impl std::error::Error for ExportError {}

/// One finished span, as the caller saw it.
#[derive(Debug, Clone)]
pub struct FinishedSpan {
    /// This span's position (its trace id and span id).
    pub span: TraceParent,
    /// The caller's span, when the request continued a trace.
    pub parent: Option<TraceParent>,
    /// `GET /notes/{id}`: the method and the route template (never the raw path).
    pub name: String,
    pub start: SystemTime,
    pub end: SystemTime,
    pub attributes: Vec<(&'static str, Value)>,
    /// The answer was a server error (5xx): the span's status is `Error`.
    pub failed: bool,
}

/// An attribute value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Text(String),
    Int(i64),
}

/// The running exporter: cheap to share; [`Exporter::shutdown`] sends what is queued.
#[derive(Debug, Clone)]
pub struct Exporter {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
}

impl Exporter {
    /// Starts the batch processor's thread. Builds on a thread of its own: the blocking HTTP
    /// client it makes must not be created inside an async runtime.
    pub fn start(config: &OtlpConfig) -> Result<Exporter, ExportError> {
        let config = config.clone();
        std::thread::spawn(move || Exporter::build(&config))
            .join()
            .map_err(|_| ExportError("the exporter's set-up panicked".to_owned()))?
    }

    fn build(config: &OtlpConfig) -> Result<Exporter, ExportError> {
        let protocol = match config.encoding {
            Encoding::Protobuf => Protocol::HttpBinary,
            Encoding::Json => Protocol::HttpJson,
        };
        let endpoint = format!("{}/v1/traces", config.endpoint.trim_end_matches('/'));
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(endpoint)
            .with_protocol(protocol)
            .with_timeout(config.timeout)
            .build()
            .map_err(|err| ExportError(err.to_string()))?;
        let resource = Resource::builder()
            .with_service_name(config.service_name.clone())
            .build();
        // A batch every second (the SDK's default waits five), so a trace shows up while the
        // operator still looks for it.
        let batches = BatchConfigBuilder::default()
            .with_scheduled_delay(Duration::from_secs(1))
            .build();
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(batches)
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("notesvc");
        Ok(Exporter { provider, tracer })
    }

    /// Queues one finished span (never blocks; dropped when the queue is full).
    pub fn record(&self, finished: FinishedSpan) {
        let remote = |p: TraceParent| {
            SpanContext::new(
                TraceId::from_bytes(p.trace_id_bytes()),
                SpanId::from_bytes(p.span_id_bytes()),
                TraceFlags::new(p.flags()),
                true,
                TraceState::default(),
            )
        };
        let parent = finished.parent.map_or_else(Context::new, |p| {
            Context::new().with_remote_span_context(remote(p))
        });
        let attributes = finished
            .attributes
            .into_iter()
            .map(|(key, value)| match value {
                Value::Text(text) => KeyValue::new(key, text),
                Value::Int(n) => KeyValue::new(key, n),
            });
        let mut builder = self
            .tracer
            .span_builder(Cow::Owned(finished.name))
            .with_kind(SpanKind::Server)
            .with_start_time(finished.start)
            .with_attributes(attributes);
        // The ids the caller already gave out: the SDK takes them instead of making its own.
        builder.trace_id = Some(TraceId::from_bytes(finished.span.trace_id_bytes()));
        builder.span_id = Some(SpanId::from_bytes(finished.span.span_id_bytes()));
        if finished.failed {
            builder.status = Status::error("server error");
        }
        let mut span = builder.start_with_context(&self.tracer, &parent);
        opentelemetry::trace::Span::end_with_timestamp(&mut span, finished.end);
    }

    /// Sends every queued span (within the export timeout) and stops the processor.
    pub fn shutdown(&self) -> Result<(), ExportError> {
        self.provider
            .shutdown()
            .map_err(|err| ExportError(err.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_are_the_standard_names() {
        assert_eq!(Encoding::parse("http/protobuf"), Some(Encoding::Protobuf));
        assert_eq!(Encoding::parse("http/json"), Some(Encoding::Json));
        assert_eq!(Encoding::parse("grpc"), None);
    }

    #[test]
    fn a_malformed_endpoint_is_an_error_not_a_panic() {
        let config = OtlpConfig {
            endpoint: "not a url".to_owned(),
            encoding: Encoding::Json,
            service_name: "t".to_owned(),
            timeout: Duration::from_secs(1),
        };
        assert!(Exporter::start(&config).is_err());
    }
}
