//! DTOs shared by several route modules.

pub use http_edge::list::{ClampedPageQuery, PageQuery, offset_page};

pub use api_shapes::{NO_NUL_PATTERN, TEXT_PATTERN};
