//! `cfg(postgres_tests)` when `TEST_POSTGRES_URL` names a PostgreSQL server: without it, the
//! tests that need one are marked ignored (and reported so), never passed without running.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(postgres_tests)");
    println!("cargo::rerun-if-env-changed=TEST_POSTGRES_URL");
    // The migrations are embedded (`embed_migrations!`), which cargo cannot see: a new one must
    // rebuild the crate. (Any rerun-if line turns off cargo's default of watching the package.)
    println!("cargo::rerun-if-changed=migrations");
    if std::env::var_os("TEST_POSTGRES_URL").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=postgres_tests");
    }
}
