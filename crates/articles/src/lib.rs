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
    ARTICLE_AUTHOR_MAX, ARTICLE_CATEGORY_MAX, ARTICLE_TITLE_MAX, Article, ArticleInput, NewArticle,
};
