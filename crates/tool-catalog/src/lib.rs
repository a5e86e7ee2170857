#![doc = include_str!("../README.md")]

mod error;
mod model;
mod request;
pub mod schema;
mod validate;

pub use error::{ArgumentError, BaseUrlError, CatalogError, EntryProblem, EntryRef, PathProblem};
pub use model::{Catalog, Method, Safety, Source, SourceType, Tool};
pub use request::{BaseUrl, RequestSpec};
pub use validate::NAME_MAX;
