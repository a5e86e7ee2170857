//! Repository functions: each takes `&mut DbConnection` and runs the same Diesel code on
//! SQLite and PostgreSQL. The caller decides on transactions.

pub mod tokens;
pub mod users;
