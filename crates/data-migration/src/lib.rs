#![doc = include_str!("../README.md")]

pub mod backup;
mod copy;
mod error;
mod tables;
mod verify;

pub use copy::{Progress, connect, migrate};
pub use error::Error;
pub use tables::{Checksum, DERIVED_COLUMNS, DERIVED_TABLES, tables};
pub use verify::{Report, Side, TableReport, verify};
