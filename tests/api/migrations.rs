use storage::Database;

use crate::backend_tests;
use crate::helpers::{Backend, TestDb};

backend_tests!(migrations_round_trip_up_down_up);

#[test]
fn both_trees_hold_the_same_migration_names() {
    let (sqlite, postgres) = storage::migration_names().unwrap();
    assert!(!sqlite.is_empty());
    assert_eq!(sqlite, postgres);
}

async fn migrations_round_trip_up_down_up(backend: Backend) {
    let db = TestDb::create(backend).unwrap();
    let url = db.url.clone();
    tokio::task::spawn_blocking(move || {
        let (names, _) = storage::migration_names().unwrap();
        let mut conn = Database::parse(&url).unwrap().establish().unwrap();
        assert_eq!(storage::run_migrations(&mut conn).unwrap(), names.len());
        assert_eq!(
            storage::applied_migrations(&mut conn).unwrap().len(),
            names.len()
        );
        assert_eq!(
            storage::revert_all_migrations(&mut conn).unwrap(),
            names.len()
        );
        assert!(storage::applied_migrations(&mut conn).unwrap().is_empty());
        assert_eq!(storage::run_migrations(&mut conn).unwrap(), names.len());
        assert_eq!(storage::run_migrations(&mut conn).unwrap(), 0, "idempotent");
    })
    .await
    .unwrap();
}
