//! `server seed-articles N`: batched, deterministic demo articles.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn seed(url: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_server"))
        .env("DATABASE_URL", url)
        .env("RUST_LOG", "warn")
        .arg("seed-articles")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn seeds_n_articles_in_batches_on_a_fresh_database() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/sub/seed.db", dir.path().display());
    let out = seed(&url, &["2500", "--batch", "300"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("inserted 2500 articles in "), "{text}");
    // Again: another 2,500 of the same sequence.
    assert!(seed(&url, &["2500"]).status.success());
    let mut conn = storage::Database::parse(&url).unwrap().establish().unwrap();
    assert_eq!(articles::repo::count(&mut conn).unwrap(), 5000);
    let page = articles::repo::list_cursor(
        &mut conn,
        pagination::Cursor {
            limit: 1,
            after: Some(2502),
        },
    )
    .unwrap();
    assert_eq!(page.items[0].title, "Demo article 1");
    assert_eq!(page.items[0].created_at, "2026-01-01T00:01:00Z");
}

#[test]
fn a_count_that_is_not_a_number_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/seed.db", dir.path().display());
    let out = seed(&url, &["many"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid value"));
}
