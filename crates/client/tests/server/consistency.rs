//! Read-your-writes through standbys: the client keeps the furthest `Consistency-Token` its
//! answers carried and sends it with every request. The "standby" here is the primary's own
//! database, which is not in recovery, so every read goes to the primary: what is tested is
//! the token's round trip; the standby path itself is `just ha-test`'s.

use crate::{Running, connect};

/// The database itself as the one standby (PostgreSQL only: SQLite has none).
fn one_standby(settings: &mut server::Settings) {
    if settings.database_url.starts_with("postgres") {
        settings.replicas = vec![storage::Database::parse(&settings.database_url).unwrap()];
    }
}

on_both_backends!(the_session_carries_its_furthest_write_position => one_standby);

async fn the_session_carries_its_furthest_write_position(server: Running) {
    let api = connect(&server);
    assert_eq!(api.consistency_token(), None);
    let note = api
        .notes()
        .create(&client::NoteInput::new("t", "b"))
        .await
        .unwrap();
    let first = api.consistency_token();
    if server.backend == storage::Backend::Sqlite {
        assert_eq!(first, None, "SQLite has no standbys: no token");
        return;
    }
    let first = first.expect("a write on PostgreSQL with standbys answers a token");
    assert!(storage::replicas::Lsn::parse(&first).is_some(), "{first}");
    // A read with the token sees the write.
    assert_eq!(api.notes().get(note.id).await.unwrap().title, "t");
    api.notes()
        .create(&client::NoteInput::new("u", "c"))
        .await
        .unwrap();
    let second = api.consistency_token().unwrap();
    assert!(
        storage::replicas::Lsn::parse(&second) > storage::replicas::Lsn::parse(&first),
        "{first} then {second}"
    );
}
