//! The HTTP edge: what turns HTTP into typed values and typed answers back into HTTP, for any
//! route. The `server` crate wires these to its routes and the domain crates; nothing here
//! knows a route, a domain crate or an environment variable (configuration comes in as plain
//! structs).
//!
//! - Requests in: [`extract`] (JSON bodies, queries, headers, bearer), [`conditional`]
//!   (`If-Match`), [`idempotent`] (`Idempotency-Key`), [`db`] (the request's database handle).
//! - Answers out: [`error`] (the one `ResponseError`), [`links`] (`Link` paging), [`answers`]
//!   (their OpenAPI documentation).
//! - Around every request: [`middleware`] (limits, rate limit, problems, headers, access log,
//!   path normalisation, HEAD) and [`connection`] (each socket's pacing).

pub mod access_rules;
pub mod actor;
pub mod annotate;
pub mod answers;
pub mod conditional;
pub mod connection;
pub mod created;
pub mod credentials;
pub mod db;
pub mod document;
mod edge;
pub mod error;
pub mod extract;
pub mod idempotent;
pub mod links;
pub mod list;
pub mod metrics;
pub mod middleware;
pub mod probe;
pub mod serve;
pub mod sse;

pub use edge::{Edge, registered};
