#![doc = include_str!("../README.md")]

mod error;
mod model;
mod recorder;
pub mod repo;
pub mod schema;

pub use error::Error;
pub use model::{Delivery, Intake, Recorded, WebhookEvent, parse_body};
pub use recorder::Recorder;
