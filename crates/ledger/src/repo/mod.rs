//! Repository functions over `&mut DbConnection`, the same Diesel code on SQLite and
//! PostgreSQL. They never open transactions: [`crate::service`] does. Events are only ever
//! inserted; nothing here updates or deletes one.

mod accounts;
mod events;
mod feed;
mod keys;

pub use accounts::*;
pub use events::*;
pub use feed::*;
pub use keys::*;
