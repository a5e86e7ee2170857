//! `embed_migrations!` reads the migration directories while this crate compiles, but Cargo only
//! tracks the files it read: a new migration directory would not rebuild the crate, and a stale
//! build would silently run without it. Watching the whole tree fixes that.
fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
