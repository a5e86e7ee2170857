//! Repository functions: each takes `&mut DbConnection` and runs the same code on SQLite and
//! PostgreSQL. The caller decides on transactions.

pub mod notes;
pub mod usage;
