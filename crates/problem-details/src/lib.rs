#![doc = include_str!("../README.md")]

mod fields;
mod problem;
mod slug;
pub mod testing;

pub use fields::{FieldError, FieldErrorCode, Fields, check_text};
pub use problem::{Problem, ToProblem};
pub use slug::Slug;
