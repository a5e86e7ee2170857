#![doc = include_str!("../README.md")]

mod api_key;
mod error;
mod jwt;

pub use api_key::ApiKeys;
pub use error::Error;
pub use jwt::{
    DEFAULT_LEEWAY_SECONDS, Hs256, MAX_TOKEN_BYTES, MIN_SECRET_BYTES, sign_hs256, sign_with_header,
};
