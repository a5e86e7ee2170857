//! Layers that hold for every route: path normalisation, access log, request id and security
//! headers, problem rendering, request limits (media type, encoding, size, deadline,
//! connections per client), rate limit, each request's span for an OpenTelemetry collector,
//! and innermost HEAD routed as GET.

pub mod access_log;
pub mod client;
pub mod consistency;
pub mod head;
pub mod headers;
pub mod limits;
pub mod path;
pub mod problems;
pub mod rate_limit;
pub mod spans;
