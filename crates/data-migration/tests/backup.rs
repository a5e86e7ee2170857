//! Backups and restores of SQLite files: verified copies, damage refused, a database in use
//! never replaced. (Under a live server's write load: crates/server/tests/cli.rs.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use data_migration::Error;
use data_migration::backup::{backup, inspect, restore};
use serde_json::json;
use storage::testing::TestDatabase;
use storage::{Backend, Database};

fn filled() -> TestDatabase {
    let db = TestDatabase::create(Backend::Sqlite, None)
        .unwrap()
        .unwrap();
    let mut c = db.migrated_connection().unwrap();
    for i in 0..300 {
        let body = json!({"title": format!("note {i}"), "body": "x".repeat(200)});
        let input = notes::NoteInput::from_json(body.as_object().unwrap()).unwrap();
        notes::repo::notes::create(&mut c, &input, None).unwrap();
    }
    db
}

fn path_of(db: &TestDatabase) -> std::path::PathBuf {
    Database::parse(&db.url)
        .unwrap()
        .sqlite_path()
        .unwrap()
        .to_path_buf()
}

#[test]
fn a_backup_verifies_and_a_damaged_one_is_never_restored() {
    let db = filled();
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.db");
    let report = backup(&db.url, &copy).unwrap();
    assert!(report.is_ok(), "{report}");
    let notes = report.tables.iter().find(|(t, _)| *t == "notes").unwrap();
    assert_eq!(notes.1.rows, 300);
    assert!(matches!(
        backup(&db.url, &copy),
        Err(Error::DestinationExists(_))
    ));
    assert!(!dir.path().join("copy.db.partial").exists());

    // Bytes flipped in the middle of the copy: refused, and the database is left as it was.
    let mut bytes = std::fs::read(&copy).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle..middle + 512].fill(0xA5);
    let damaged = dir.path().join("damaged.db");
    std::fs::write(&damaged, bytes).unwrap();
    let before = std::fs::read(path_of(&db)).unwrap();
    assert!(restore(&damaged, &db.url).is_err());
    assert_eq!(std::fs::read(path_of(&db)).unwrap(), before);
    let report = inspect(&damaged);
    assert!(report.is_err() || !report.unwrap().is_ok());
}

#[test]
fn a_database_in_use_is_never_replaced_and_the_replaced_one_is_kept() {
    let db = filled();
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.db");
    backup(&db.url, &copy).unwrap();
    let mut c = db.migrated_connection().unwrap();
    let input =
        notes::NoteInput::from_json(json!({"title": "later", "body": "b"}).as_object().unwrap());
    notes::repo::notes::create(&mut c, &input.unwrap(), None).unwrap();

    assert!(matches!(restore(&copy, &db.url), Err(Error::InUse(_))));
    drop(c);
    let restored = restore(&copy, &db.url).unwrap();
    let kept = restored.previous.unwrap();
    let kept_report = inspect(&kept).unwrap();
    let rows = |r: &data_migration::backup::FileReport| {
        r.tables.iter().find(|(t, _)| *t == "notes").unwrap().1.rows
    };
    assert_eq!(rows(&kept_report), 301, "the replaced database, whole");
    assert_eq!(rows(&inspect(&path_of(&db)).unwrap()), 300, "the backup's");
}

#[test]
fn postgresql_is_left_to_its_own_tools() {
    let dir = tempfile::tempdir().unwrap();
    let url = "postgres://postgres@127.0.0.1:5432/test";
    assert!(matches!(
        backup(url, &dir.path().join("x.db")),
        Err(Error::NotSqlite)
    ));
}
