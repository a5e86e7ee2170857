#![doc = include_str!("../README.md")]

mod error;
mod model;
pub mod repo;
pub mod schema;

pub use error::Error;
pub use model::{Delivery, Intake, Recorded, WebhookEvent, parse_body};
