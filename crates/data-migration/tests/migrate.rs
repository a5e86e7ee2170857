//! A SQLite source filled through the domain crates, copied into a fresh target: another SQLite
//! file always, and a throwaway PostgreSQL database when `TEST_POSTGRES_URL` is set.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use data_migration::{Error, Progress, Report, migrate, verify};
use diesel::RunQueryDsl;
use diesel::sql_types::Text;
use serde_json::{Map, Value, json};
use storage::testing::TestDatabase;
use storage::{Backend, Database, DbConnection};
use webhook_verify::{Verifier, header};

const WEBHOOK_SECRET: &[u8] = b"whsec_migration_test";
const NOW: i64 = 1_700_000_000;
/// More than one read batch (5,000 rows for a five-column table).
const ARTICLES: u64 = 12_001;

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// Rows in every table, written by the same functions the service uses.
fn fill(c: &mut DbConnection) {
    use notes::{CommentInput, NoteInput, TagInput};
    let note = |c: &mut DbConnection, title: &str| {
        let input = NoteInput::from_json(&object(json!({"title": title, "body": "b"}))).unwrap();
        notes::repo::notes::create(c, &input, Some(7)).unwrap().id
    };
    let first = note(c, "first");
    let gone = note(c, "deleted, so ids have a gap");
    let last = note(c, "última nota ✓");
    notes::repo::notes::delete(c, gone).unwrap();
    for body in ["a comment", "another"] {
        let input = CommentInput::from_json(&object(json!({"body": body}))).unwrap();
        notes::repo::comments::create(c, first, &input, None).unwrap();
    }
    let input = CommentInput::from_json(&object(json!({"body": "on the last"}))).unwrap();
    notes::repo::comments::create(c, last, &input, Some(7)).unwrap();
    for name in ["rust", "Zebra", "ärger"] {
        let input = TagInput::from_json(&object(json!({"name": name}))).unwrap();
        notes::repo::tags::create(c, &input, Some(7)).unwrap();
    }

    articles::service::seed(c, ARTICLES, 1_000, |_| {}).unwrap();

    let v2 = versioned_notes::NoteInput::from_v2_json(&object(
        json!({"title": "v2", "body": "x", "tags": ["a", "b"]}),
    ))
    .unwrap();
    versioned_notes::repo::notes::create(c, &v2, Some(7)).unwrap();
    let v1 = versioned_notes::NoteInput::from_v1_json(&object(json!({"title": "v1"}))).unwrap();
    versioned_notes::repo::notes::create(c, &v1, None).unwrap();
    // Keys whose bytewise order differs from a locale's: upper case, accents, punctuation.
    for caller in [
        "user:bob",
        "user:Bob",
        "user:Émile",
        "ip:10.0.0.1",
        "user:_x",
        "user:bob",
    ] {
        versioned_notes::repo::usage::record(c, caller).unwrap();
    }

    let user = |c: &mut DbConnection, name: &str| {
        let input = tokens::NewUser::from_body(format!(r#"{{"name":"{name}"}}"#).as_bytes());
        tokens::service::create_user(c, &input.unwrap()).unwrap().id
    };
    let ann = user(c, "ann");
    let bob = user(c, "bob");
    let revoked = tokens::service::issue(
        c,
        ann,
        ann,
        br#"{"scope":"admin","label":"ci"}"#,
        tokens::Policy::default(),
    )
    .unwrap()
    .token
    .id;
    tokens::service::issue(c, ann, ann, b"{}", tokens::Policy::default()).unwrap();
    tokens::service::issue(
        c,
        bob,
        bob,
        br#"{"scope":"write"}"#,
        tokens::Policy::default(),
    )
    .unwrap();
    tokens::service::revoke(c, ann, ann, Some(revoked)).unwrap();

    use ledger::{AppendEvent, Change, IdempotencyKey, OpenAccount};
    let body = object(json!({"account_id": "acc-1", "owner": "ann"}));
    let keyed = |key| idempotency::CallerKey::new("ann", key, idempotency::DEFAULT_TTL);
    let key = keyed(IdempotencyKey::new("open-acc-1", "open", &body).unwrap());
    ledger::service::open_account(c, &OpenAccount::new("acc-1", "ann").unwrap(), Some(&key))
        .unwrap();
    for change in [
        Change::Deposited { amount_cents: 500 },
        Change::Withdrawn { amount_cents: 200 },
        Change::Deposited { amount_cents: 75 },
    ] {
        ledger::service::append(c, "acc-1", &AppendEvent::new(change, None), None).unwrap();
    }
    let deposit = AppendEvent::new(Change::Deposited { amount_cents: 5 }, Some(4));
    let key =
        keyed(IdempotencyKey::new("dep-5", "append acc-1", &object(json!({"n": 5}))).unwrap());
    ledger::service::append(c, "acc-1", &deposit, Some(&key)).unwrap();
    ledger::service::open_account(c, &OpenAccount::new("ACC-2", "bob").unwrap(), None).unwrap();
    let close = AppendEvent::new(Change::Closed, None);
    ledger::service::append(c, "ACC-2", &close, None).unwrap();

    let intake = webhooks::Intake::new(Some(Verifier::new(WEBHOOK_SECRET).unwrap()));
    for (t, body) in [
        (NOW, r#"{"event_type":"order.created","id":1}"#),
        (NOW + 1, r#"{"event_type":"order.paid","id":1}"#),
    ] {
        let signature = header(WEBHOOK_SECRET, t, body.as_bytes());
        let delivery = intake
            .accept(&[signature.as_bytes()], body.as_bytes(), t)
            .unwrap();
        webhooks::repo::record(c, &delivery).unwrap();
    }
    // An outbound webhook endpoint that has delivered the first two events, and its log.
    let endpoint = outbound_webhooks::repo::insert(
        c,
        Some(ann),
        "https://hooks.example.com/in",
        &outbound_webhooks::EventTypes::all(),
        "5a17",
        ledger::FeedPosition { tx: 0, id: 2 },
        "2026-11-25 00:00:00",
    )
    .unwrap();
    for event_id in [1, 2] {
        let delivered = outbound_webhooks::repo::NewDelivery {
            endpoint_id: endpoint.id,
            message_id: &format!("evt_{event_id}"),
            event_id,
            attempt: 1,
            outcome: "delivered",
            response_status: Some(204),
            latency_ms: 12,
            error: None,
            next_attempt_at: None,
            manual: false,
        };
        outbound_webhooks::repo::insert_delivery(c, &delivered, "2026-11-25 00:00:01").unwrap();
    }
    // The audit trail: a user's write and the operator's.
    for actor in [
        ownership::Actor::User {
            user_id: ann,
            token_id: 1,
        },
        ownership::Actor::Operator,
    ] {
        let action = audit::Action {
            actor,
            method: "POST".to_owned(),
            route: "/notes".to_owned(),
            path: "/notes".to_owned(),
        };
        audit::record(c, &action, Some("/notes/1")).unwrap();
    }
    // A create's stored first answer, with and without a Location.
    for (caller, location) in [("user:1", None), ("anonymous", Some("/notes/1"))] {
        let body = serde_json::Map::new();
        let key = idempotency::Key::new("retry-1", "POST /notes", &body).unwrap();
        let answer = idempotency::Answer {
            status: 201,
            location: location.map(str::to_owned),
            body: r#"{"id":1}"#.to_owned(),
        };
        idempotency::repo::record(c, caller, &key, &answer, "2026-11-25T00:00:00Z").unwrap();
    }
}

/// A filled SQLite source and every target this run can reach (SQLite, and PostgreSQL when
/// `TEST_POSTGRES_URL` is set), each fresh and not yet migrated.
fn source_and_targets() -> (TestDatabase, Vec<TestDatabase>) {
    let source = TestDatabase::create(Backend::Sqlite, None)
        .unwrap()
        .unwrap();
    fill(&mut source.migrated_connection().unwrap());
    let admin = std::env::var("TEST_POSTGRES_URL").ok();
    let targets = [Backend::Sqlite, Backend::Postgres]
        .into_iter()
        .filter_map(|b| TestDatabase::create(b, admin.as_deref()).unwrap())
        .collect();
    (source, targets)
}

fn open(db: &TestDatabase) -> DbConnection {
    Database::parse(&db.url).unwrap().establish().unwrap()
}

fn run(source: &TestDatabase, target: &TestDatabase) -> Result<Report, Error> {
    migrate(&mut open(source), &mut open(target), |_| {})
}

fn counts(conn: &mut DbConnection) -> Vec<(String, i64)> {
    data_migration::tables()
        .map(|(table, _)| {
            let n: Count = diesel::sql_query(format!("SELECT COUNT(*) AS n FROM {table}"))
                .get_result(conn)
                .unwrap();
            (table.to_owned(), n.n)
        })
        .collect()
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

#[test]
fn copies_every_table_with_its_ids_and_verifies() {
    let (source, targets) = source_and_targets();
    for target in &targets {
        let mut seen: Vec<Progress> = Vec::new();
        let report = migrate(&mut open(&source), &mut open(target), |p| {
            if p.done {
                seen.push(p)
            }
        })
        .unwrap();
        let backend = target.backend();
        assert!(report.is_ok(), "{backend:?}\n{report}");
        assert_eq!(report.tables.len(), 15);
        // The endpoint's place in the feed names the same event in the target (on PostgreSQL
        // the copied events belong to the copy's transaction).
        let places: Vec<Count> = diesel::sql_query(
            "SELECT COUNT(*) AS n FROM webhook_endpoints e WHERE e.cursor_id = 2 AND e.cursor_tx = \
             COALESCE((SELECT a.tx FROM account_events a WHERE a.id = 2), 0)",
        )
        .load(&mut open(target))
        .unwrap_or_else(|_| {
            // SQLite has no tx column: its positions are (0, id).
            diesel::sql_query(
                "SELECT COUNT(*) AS n FROM webhook_endpoints WHERE cursor_id = 2 AND cursor_tx = 0",
            )
            .load(&mut open(target))
            .unwrap()
        });
        assert_eq!(places[0].n, 1, "{backend:?}");
        for t in &report.tables {
            assert!(
                t.source.rows > 0,
                "{backend:?}: {} is empty in the source",
                t.table
            );
            assert_eq!(t.source, t.target, "{backend:?}: {}", t.table);
        }
        let articles = report
            .tables
            .iter()
            .find(|t| t.table == "articles")
            .unwrap();
        assert_eq!(articles.target.rows, ARTICLES as i64);
        assert_eq!((report.ledger.accounts, report.ledger.events), (2, 7));
        assert!(report.ledger.is_consistent(), "{backend:?}\n{report}");
        assert_eq!(seen.len(), 15);
        assert_eq!(seen[0].table, "notes");
        assert_eq!(seen[0].rows, 2);

        // Verifying the committed copy again, from fresh connections, agrees.
        let again = verify(&mut open(&source), &mut open(target)).unwrap();
        assert!(again.is_ok(), "{backend:?}\n{again}");
        assert_eq!(again.tables, report.tables);

        // Ids were kept (note 2 was deleted), and new rows get fresh ids on the target.
        let mut t = open(target);
        assert_eq!(
            notes::repo::notes::get(&mut t, 3).unwrap().title,
            "última nota ✓"
        );
        assert!(notes::repo::notes::get(&mut t, 2).is_err());
        let input =
            notes::NoteInput::from_json(&object(json!({"title": "after", "body": "b"}))).unwrap();
        assert_eq!(
            notes::repo::notes::create(&mut t, &input, None).unwrap().id,
            4
        );
        let user = tokens::NewUser::from_body(br#"{"name":"cy"}"#).unwrap();
        assert_eq!(tokens::service::create_user(&mut t, &user).unwrap().id, 3);
        let next = articles::service::demo_article(1);
        assert_eq!(
            articles::repo::create(&mut t, &next, None).unwrap().id,
            ARTICLES as i64 + 1
        );
        // The copied ledger keeps working: the next append takes sequence 6, and the copied
        // idempotency key still answers with its original event.
        let deposit = ledger::AppendEvent::new(ledger::Change::Deposited { amount_cents: 1 }, None);
        let next = ledger::service::append(&mut t, "acc-1", &deposit, None).unwrap();
        assert_eq!(next.event.sequence, 6);
        let key = idempotency::CallerKey::new(
            "ann",
            ledger::IdempotencyKey::new("dep-5", "append acc-1", &object(json!({"n": 5}))).unwrap(),
            idempotency::DEFAULT_TTL,
        );
        let deposit =
            ledger::AppendEvent::new(ledger::Change::Deposited { amount_cents: 5 }, Some(4));
        let replay = ledger::service::append(&mut t, "acc-1", &deposit, Some(&key)).unwrap();
        assert!(replay.replayed);
        assert_eq!(replay.event.sequence, 5);
        assert!(ledger::check::check_all(&mut t).unwrap().is_consistent());
    }
}

#[test]
fn a_second_run_into_the_filled_target_refuses_and_writes_nothing() {
    let (source, targets) = source_and_targets();
    for target in &targets {
        run(&source, target).unwrap();
        let before = verify(&mut open(&source), &mut open(target)).unwrap();
        let counted = counts(&mut open(target));
        let err = run(&source, target).unwrap_err();
        assert!(
            matches!(
                err,
                Error::TargetNotEmpty {
                    table: "notes",
                    rows: 2
                }
            ),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "the target already holds data (2 rows in notes); nothing was written"
        );
        assert_eq!(counts(&mut open(target)), counted);
        let after = verify(&mut open(&source), &mut open(target)).unwrap();
        assert_eq!(after.tables, before.tables);
    }
}

#[test]
fn one_row_anywhere_in_the_target_is_enough_to_refuse() {
    let (source, targets) = source_and_targets();
    for target in &targets {
        let mut t = target.migrated_connection().unwrap();
        versioned_notes::repo::usage::record(&mut t, "ip:127.0.0.1").unwrap();
        let err = run(&source, target).unwrap_err();
        assert!(
            matches!(
                err,
                Error::TargetNotEmpty {
                    table: "v1_usage",
                    rows: 1
                }
            ),
            "{err:?}"
        );
        let counted = counts(&mut t);
        assert!(
            counted
                .iter()
                .all(|(table, n)| *n == i64::from(table == "v1_usage")),
            "{counted:?}"
        );
    }
}

#[test]
fn a_tampered_target_is_reported() {
    let (source, targets) = source_and_targets();
    for target in &targets {
        run(&source, target).unwrap();
        let mut t = open(target);
        diesel::sql_query("UPDATE tokens SET label = 'changed' WHERE id = 2")
            .execute(&mut t)
            .unwrap();
        let report = verify(&mut open(&source), &mut t).unwrap();
        assert!(!report.is_ok());
        let bad: Vec<&str> = report
            .tables
            .iter()
            .filter(|t| !t.is_ok())
            .map(|t| t.table)
            .collect();
        assert_eq!(bad, ["tokens"], "{report}");
        let tokens = report.tables.iter().find(|t| t.table == "tokens").unwrap();
        assert_eq!(tokens.source.rows, tokens.target.rows);
        assert!(report.to_string().contains("MISMATCH"), "{report}");

        // A projection that no longer matches its events fails the ledger replay as well.
        diesel::sql_query("UPDATE accounts SET balance_cents = 1 WHERE account_id = 'acc-1'")
            .execute(&mut t)
            .unwrap();
        let report = verify(&mut open(&source), &mut t).unwrap();
        assert_eq!(report.ledger.mismatches.len(), 1, "{report}");
        assert_eq!(report.ledger.mismatches[0].account_id, "acc-1");

        // A missing row changes the count too.
        diesel::sql_query("DELETE FROM webhook_events WHERE id = 2")
            .execute(&mut t)
            .unwrap();
        let report = verify(&mut open(&source), &mut t).unwrap();
        let webhooks = report
            .tables
            .iter()
            .find(|t| t.table == "webhook_events")
            .unwrap();
        assert_eq!((webhooks.source.rows, webhooks.target.rows), (2, 1));
    }
}

#[test]
fn a_copy_that_does_not_verify_is_rolled_back() {
    let (source, targets) = source_and_targets();
    // The source itself is inconsistent: its projection no longer matches its events. The copy
    // is faithful, so the replay on the target fails and nothing may be committed.
    diesel::sql_query("UPDATE accounts SET balance_cents = 999 WHERE account_id = 'acc-1'")
        .execute(&mut open(&source))
        .unwrap();
    for target in &targets {
        let err = run(&source, target).unwrap_err();
        let Error::Unverified(report) = err else {
            panic!("{err:?}")
        };
        assert!(report.tables.iter().all(|t| t.is_ok()), "{report}");
        assert_eq!(report.ledger.mismatches.len(), 1, "{report}");
        // Even the target's migrations were rolled back; migrated now, it is empty.
        let counted = counts(&mut target.migrated_connection().unwrap());
        assert!(counted.iter().all(|(_, n)| *n == 0), "{counted:?}");
    }
}

#[test]
fn an_unmigrated_or_missing_source_is_refused() {
    let dir = TestDatabase::create(Backend::Sqlite, None)
        .unwrap()
        .unwrap();
    let target = TestDatabase::create(Backend::Sqlite, None)
        .unwrap()
        .unwrap();
    let missing = dir.url.replace("test.db", "missing.db");
    assert!(matches!(
        data_migration::connect(&missing, &target.url),
        Err(Error::SourceMissing { .. })
    ));
    assert!(matches!(
        data_migration::connect(&target.url, &target.url),
        Err(Error::SameDatabase)
    ));
    // An empty SQLite file: no migration table.
    open(&dir);
    let (mut s, mut t) = data_migration::connect(&dir.url, &target.url).unwrap();
    assert!(matches!(
        migrate(&mut s, &mut t, |_| {}),
        Err(Error::SourceNotMigrated(_))
    ));
}

/// A PostgreSQL database whose default collation is a locale's (ICU English), where
/// `'user:_x' < 'user:Bob' < 'user:bob'`, unlike SQLite's bytewise order. Dropped afterwards.
struct LocaleDatabase {
    admin: String,
    name: String,
    url: String,
}

impl LocaleDatabase {
    fn create(admin: &str) -> LocaleDatabase {
        use diesel::Connection;
        let name = format!("t_migrate_icu_{}", std::process::id());
        let mut conn = diesel::PgConnection::establish(admin).unwrap();
        diesel::sql_query(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .execute(&mut conn)
            .unwrap();
        diesel::sql_query(format!(
            "CREATE DATABASE {name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en' \
             LOCALE 'C.UTF-8'"
        ))
        .execute(&mut conn)
        .unwrap();
        let base = admin.rsplit_once('/').map_or(admin, |(base, _)| base);
        LocaleDatabase {
            admin: admin.to_owned(),
            url: format!("{base}/{name}"),
            name,
        }
    }
}

impl Drop for LocaleDatabase {
    fn drop(&mut self) {
        use diesel::Connection;
        if let Ok(mut conn) = diesel::PgConnection::establish(&self.admin) {
            let _ = diesel::sql_query(format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
            .execute(&mut conn);
        }
    }
}

#[test]
fn text_keys_are_ordered_bytewise_on_a_postgres_with_a_locale_collation() {
    let Ok(admin) = std::env::var("TEST_POSTGRES_URL") else {
        return;
    };
    let source = TestDatabase::create(Backend::Sqlite, None)
        .unwrap()
        .unwrap();
    fill(&mut source.migrated_connection().unwrap());
    let target = LocaleDatabase::create(&admin);
    let mut t = Database::parse(&target.url).unwrap().establish().unwrap();
    let report = migrate(&mut open(&source), &mut t, |_| {}).unwrap();
    assert!(report.is_ok(), "{report}");
    let usage = report
        .tables
        .iter()
        .find(|t| t.table == "v1_usage")
        .unwrap();
    assert_eq!(usage.target.rows, 5);
}

#[derive(diesel::QueryableByName)]
struct Name {
    #[diesel(sql_type = Text)]
    name: String,
}

fn names(conn: &mut DbConnection, sql: &str) -> BTreeSet<String> {
    diesel::sql_query(sql)
        .load::<Name>(conn)
        .unwrap()
        .into_iter()
        .map(|n| n.name)
        .collect()
}

/// A migration that adds a table or a column must extend the copy as well.
#[test]
fn the_copy_covers_every_table_and_column_of_the_schema() {
    let admin = std::env::var("TEST_POSTGRES_URL").ok();
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let Some(db) = TestDatabase::create(backend, admin.as_deref()).unwrap() else {
            continue;
        };
        let mut conn = db.migrated_connection().unwrap();
        let (tables_sql, columns_sql): (&str, fn(&str) -> String) = match backend {
            Backend::Sqlite => (
                "SELECT name FROM sqlite_master WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite_%' AND name <> '__diesel_schema_migrations'",
                |t| format!("SELECT name FROM pragma_table_info('{t}')"),
            ),
            Backend::Postgres => (
                "SELECT table_name::text AS name FROM information_schema.tables \
                 WHERE table_schema = 'public' AND table_name <> '__diesel_schema_migrations'",
                |t| {
                    format!(
                        "SELECT column_name::text AS name FROM information_schema.columns \
                         WHERE table_schema = 'public' AND table_name = '{t}'"
                    )
                },
            ),
        };
        let copied: BTreeSet<String> = data_migration::tables()
            .map(|(t, _)| t.to_owned())
            .chain(data_migration::DERIVED_TABLES.map(str::to_owned))
            .collect();
        assert_eq!(names(&mut conn, tables_sql), copied, "{backend:?}");
        for (table, columns) in data_migration::tables() {
            let copied: BTreeSet<String> = columns.iter().map(|c| (*c).to_owned()).collect();
            let mut present = names(&mut conn, &columns_sql(table));
            present.retain(|c| !data_migration::DERIVED_COLUMNS.contains(&(table, c.as_str())));
            assert_eq!(present, copied, "{backend:?}: {table}");
        }
    }
}
