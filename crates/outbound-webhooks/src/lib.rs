#![doc = include_str!("../README.md")]

pub mod destination;
mod error;
pub mod model;
pub mod secret;

#[cfg(feature = "db")]
pub mod dispatch;
#[cfg(feature = "db")]
pub mod repo;
#[cfg(feature = "db")]
pub mod schema;
#[cfg(feature = "db")]
pub mod service;

pub use destination::Allow;
pub use error::Error;
pub use model::{Delivery, Endpoint, EndpointInput, EndpointPatch, EventTypes};
pub use secret::SigningKey;
