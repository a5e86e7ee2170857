#![doc = include_str!("../README.md")]

mod error;
mod model;
#[cfg(feature = "db")]
pub mod repo;
#[cfg(feature = "db")]
pub mod schema;
#[cfg(feature = "db")]
pub mod service;

pub use error::Error;
pub use model::{
    IssueRequest, LABEL_MAX, LAST_USED_RESOLUTION, Lifetime, MAX_ACTIVE_DEFAULT, NAME_MAX, NewUser,
    Policy, RawToken, Scope, Token, User, Verification, VerifyRequest, body_object, hash_token,
    parse_actor, parse_path_id, rfc3339,
};
