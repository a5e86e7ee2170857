//! One module per domain noun; each has `configure` and its DTOs (serde + JSON Schema) with
//! `From` conversions from the domain types. Handlers only wire.

pub mod accounts;
pub mod articles;
pub mod audit;
pub mod comments;
pub mod crud;
pub mod dto;
pub mod examples;
pub mod health;
pub mod meta;
pub mod notes;
pub mod tags;
pub mod tokens;
pub mod versioned_notes;
pub mod webhooks;
