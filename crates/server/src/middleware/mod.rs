//! Cross-cutting behaviour, outermost first: access log, request id and security headers,
//! problem rendering, rate limit, and the early body-size check.

pub mod headers;
pub mod problems;
pub mod rate_limit;
