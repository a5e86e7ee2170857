//! Cross-cutting behaviour, outermost first: access log, request id and security headers, V1
//! deprecation headers and usage count, problem rendering, rate limit, and the early body-size
//! check.

pub mod deprecation;
pub mod headers;
pub mod problems;
pub mod rate_limit;
pub mod token_auth;
