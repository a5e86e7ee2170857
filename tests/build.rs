//! `cfg(postgres_tests)` when `TEST_POSTGRES_URL` names a PostgreSQL server: without it, the
//! tests that need one are marked ignored (and reported so), never passed without running.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(postgres_tests)");
    println!("cargo::rerun-if-env-changed=TEST_POSTGRES_URL");
    if std::env::var_os("TEST_POSTGRES_URL").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=postgres_tests");
    }
}
