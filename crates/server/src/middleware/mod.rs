//! Cross-cutting behaviour, outermost first: path normalisation, access log, CORS, request id
//! and security headers, V1 deprecation headers, problem rendering, request limits (media type,
//! encoding, size, deadline, connections per client), rate limit, bearer-token guard, V1 usage
//! count, and innermost HEAD routed as GET.

pub mod access_log;
pub mod client;
pub mod deprecation;
pub mod head;
pub mod headers;
pub mod limits;
pub mod path;
pub mod problems;
pub mod rate_limit;
pub mod token_auth;
