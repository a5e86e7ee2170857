//! `server seed` (every listed table, in batches, on both backends) and `server seed --articles N`
//! (batched, deterministic demo articles).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn seed(url: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_server"))
        .env("DATABASE_URL", url)
        .env("RUST_LOG", "warn")
        .args(["seed", "--articles"])
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

fn server(url: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_server"))
        .env("DATABASE_URL", url)
        .env("RUST_LOG", "warn")
        .args(args)
        .output()
        .unwrap()
}

/// Every table the seed fills gets its rows, twice over (a second run adds distinct rows: tag
/// names and account ids are unique), the kept counts agree with the rows, the comments sit on
/// one note, and the accounts replay consistently in `ledger-check`. Quiet when its output is
/// not a terminal: one line per table, no progress bar.
#[test]
fn seed_fills_every_table_on_both_backends() {
    use storage::counts::{Counted, audit, total};
    storage::testing::on_each_backend(|db, conn| {
        let args = [
            "seed",
            "--notes",
            "130",
            "--tags",
            "70",
            "--comments",
            "90",
            "--accounts",
            "120",
            "--articles",
            "50",
            "--versioned-notes",
            "40",
            "--webhook-events",
            "60",
            "--batch",
            "16",
        ];
        for _ in 0..2 {
            let out = server(&db.url, &args);
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(stdout.lines().count(), 7, "{stdout}");
            assert!(
                stdout.contains("inserted 60 webhook events in "),
                "{stdout}"
            );
            assert!(
                out.stderr.is_empty(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert_eq!(audit(conn).unwrap(), vec![]);
        for (table, n) in [
            ("notes", 260),
            ("tags", 140),
            ("accounts", 240),
            ("articles", 100),
            ("versioned_notes", 80),
            ("webhook_events", 120),
        ] {
            assert_eq!(total(conn, Counted::table(table)).unwrap(), n, "{table}");
        }
        assert_eq!(total(conn, Counted::comments_of(1)).unwrap(), 180);
        let check = server(&db.url, &["ledger-check"]);
        let stdout = String::from_utf8_lossy(&check.stdout);
        assert!(check.status.success(), "{stdout}");
        assert!(
            stdout.contains("240 accounts, 240 events replayed, 0 mismatches"),
            "{stdout}"
        );
    });
}

#[test]
fn comments_get_a_note_when_there_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/seed.db", dir.path().display());
    assert!(server(&url, &["seed", "--comments", "5"]).status.success());
    let mut conn = storage::Database::parse(&url).unwrap().establish().unwrap();
    let counted = storage::counts::Counted::table("notes");
    assert_eq!(storage::counts::total(&mut conn, counted).unwrap(), 1);
    let comments = storage::counts::Counted::comments_of(1);
    assert_eq!(storage::counts::total(&mut conn, comments).unwrap(), 5);
}

/// A seed beside a running server (here: one open connection, which keeps SQLite from removing
/// the WAL when the seed exits) leaves the WAL empty, its rows already in the database file,
/// rather than megabytes for the server's background checkpointer to copy under live traffic.
#[test]
fn a_seed_leaves_an_empty_wal_behind_on_sqlite() {
    use diesel::RunQueryDsl;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("seed.db");
    let url = format!("sqlite://{}", file.display());
    assert!(server(&url, &["migrate"]).status.success());
    let mut server_side = storage::Database::parse(&url).unwrap().establish().unwrap();
    diesel::sql_query("SELECT 1")
        .execute(&mut server_side)
        .unwrap();

    let out = server(&url, &["seed", "--notes", "3000", "--tags", "3000"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let wal = std::fs::metadata(dir.path().join("seed.db-wal")).unwrap();
    assert_eq!(wal.len(), 0, "the WAL still holds {} bytes", wal.len());
    let notes = storage::counts::Counted::table("notes");
    assert_eq!(
        storage::counts::total(&mut server_side, notes).unwrap(),
        3000
    );
}
