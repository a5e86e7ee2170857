//! The HTTP service: actix-web wiring around the domain crates. Start with [`Application`].

pub mod app;
pub mod auth;
pub mod context;
pub mod deprecation;
pub mod openapi;
pub mod routes;
pub mod settings;

pub use app::Application;
pub use context::AppInfo;
pub use settings::{Secret, Settings};
