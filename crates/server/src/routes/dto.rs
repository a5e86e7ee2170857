//! DTOs shared by several route modules.

pub use http_edge::list::{ClampedPageQuery, PageQuery, offset_page};

/// Required text: at least one character that is not white space, and no NUL.
pub const TEXT_PATTERN: &str = r"^[^\u0000]*[^\s\u0000][^\u0000]*$";

/// Optional text: anything without NUL (blank allowed).
pub const NO_NUL_PATTERN: &str = r"^[^\u0000]*$";
