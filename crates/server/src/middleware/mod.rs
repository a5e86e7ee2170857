//! The layers that are this service's policy: who may call what (the bearer-token guard) and
//! the V1 deprecation headers and usage count. The layers that hold for any route are in
//! `http_edge::middleware`; app.rs orders them all.

pub mod deprecation;
pub mod token_auth;
