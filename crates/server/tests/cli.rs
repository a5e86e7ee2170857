//! The `server` binary as an operator uses it: sub-commands, start-up errors, graceful shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn server() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_server"));
    cmd.env_remove("DATABASE_URL")
        .env_remove("BIND")
        .env("RUST_LOG", "info");
    cmd
}

/// The whole response to `GET path`, or `None` when nothing answers.
fn get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    Some(response)
}

fn health_ok(port: u16) -> bool {
    get(port, "/health").is_some_and(|r| r.starts_with("HTTP/1.1 200"))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits up to `within` for the child to exit; its status.
fn exit_within(child: &mut std::process::Child, within: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "the server did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn sigterm(child: &std::process::Child) {
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
}

#[test]
fn help_lists_the_subcommands() {
    let out = server().arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for sub in [
        "serve",
        "migrate",
        "openapi",
        "migrate-data",
        "backup",
        "restore",
    ] {
        assert!(text.contains(sub), "{sub} missing from --help");
    }
}

#[test]
fn openapi_writes_the_committed_document() {
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("openapi.json");
    let status = server()
        .args(["openapi", "--out"])
        .arg(&out_file)
        .status()
        .unwrap();
    assert!(status.success());
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    let committed: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/openapi.json"
        ))
        .unwrap(),
    )
    .unwrap();
    assert!(
        written == committed,
        "docs/openapi.json is stale: run `just openapi`"
    );
    let stdout = server().arg("openapi").output().unwrap();
    let printed: serde_json::Value = serde_json::from_slice(&stdout.stdout).unwrap();
    assert_eq!(printed, written);
}

#[test]
fn bad_configuration_stops_with_one_line_naming_the_variable() {
    for (var, value) in [("BIND", "not-an-address"), ("MAX_BODY_BYTES", "lots")] {
        let out = server().env(var, value).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(var), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

#[test]
fn migrate_creates_the_database_and_serve_stops_gracefully_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/nested/dir/service.db", dir.path().display());
    let status = server()
        .arg("migrate")
        .env("DATABASE_URL", &url)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(dir.path().join("nested/dir/service.db").exists());

    let port = free_port();
    let log = dir.path().join("server.log");
    let mut child = server()
        .env("DATABASE_URL", &url)
        .env("BIND", format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    // Serving requests means the signal handlers are installed too.
    while !health_ok(port) {
        assert!(Instant::now() < deadline, "server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    sigterm(&child);
    let status = exit_within(&mut child, Duration::from_secs(15));
    assert!(status.success(), "exit status {status}");
    // The first minute says where the data is, what migrating did, the authentication mode
    // and the address, one line each.
    let log = std::fs::read_to_string(&log).unwrap();
    let db = dir.path().join("nested/dir/service.db");
    for line in [
        format!("database: SQLite file {}", db.display()),
        "migrations: 0 applied now; the schema is at version ".to_owned(),
        "authentication: API_AUTH=off".to_owned(),
        format!("listening on http://127.0.0.1:{port}"),
    ] {
        assert!(log.contains(&line), "no {line:?} in:\n{log}");
    }
}

#[test]
fn migrate_data_copies_into_an_empty_database_once() {
    let dir = tempfile::tempdir().unwrap();
    let from = format!("sqlite://{}/source.db", dir.path().display());
    let seeded = server()
        .args(["seed", "--articles", "120"])
        .env("DATABASE_URL", &from)
        .output()
        .unwrap();
    assert!(seeded.status.success(), "{seeded:?}");
    // PostgreSQL when the run has one, else another SQLite file: the command takes either.
    let admin = std::env::var("TEST_POSTGRES_URL").ok();
    let pg = storage::testing::TestDatabase::create(storage::Backend::Postgres, admin.as_deref())
        .unwrap();
    let to = pg.as_ref().map_or_else(
        || format!("sqlite://{}/target.db", dir.path().display()),
        |db| db.url.clone(),
    );
    let migrate_data = |from: &str| {
        server()
            .args(["migrate-data", "--from", from, "--to", &to])
            .output()
            .unwrap()
    };

    let out = migrate_data(&from);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let articles = stdout.lines().find(|l| l.starts_with("articles ")).unwrap();
    assert!(
        articles.contains(" 120 ") && articles.ends_with("ok"),
        "{stdout}"
    );
    assert!(stdout.contains("committed"), "{stdout}");

    for (source, expected) in [
        (from.clone(), "already holds data"),
        (
            format!("sqlite://{}/missing.db", dir.path().display()),
            "does not exist",
        ),
    ] {
        let out = migrate_data(&source);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(expected), "{err}");
    }
}

/// SIGTERM with `DRAIN_SECS`: not ready at once, everything else still served for the drain
/// period, then a graceful stop; liveness stays 200 throughout.
#[test]
fn sigterm_drains_before_it_stops() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/drain.db", dir.path().display());
    let port = free_port();
    let mut child = spawn(&url, port, &[("DRAIN_SECS", "3")], Stdio::null());
    let ready = get(port, "/health/ready").unwrap();
    assert!(ready.starts_with("HTTP/1.1 200"), "{ready}");
    assert!(ready.contains(r#""draining":false"#), "{ready}");
    let signalled = Instant::now();
    sigterm(&child);
    // Not ready from the signal on (as soon as the signal is handled).
    let mut draining = None;
    while signalled.elapsed() < Duration::from_secs(2) {
        let ready = get(port, "/health/ready").unwrap();
        if ready.starts_with("HTTP/1.1 503") {
            draining = Some(ready);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let draining = draining.expect("/health/ready never turned 503 after SIGTERM");
    assert!(draining.contains(r#""draining":true"#), "{draining}");
    assert!(draining.contains(r#""status":"not-ready""#), "{draining}");
    // Still serving everything else while draining.
    for path in ["/health/live", "/health", "/notes"] {
        let answer = get(port, path).unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 200"),
            "{path} while draining: {answer}"
        );
    }
    let status = exit_within(&mut child, Duration::from_secs(20));
    assert!(status.success(), "exit status {status}");
    assert!(
        signalled.elapsed() >= Duration::from_secs(3),
        "stopped before the drain period ended"
    );
}

/// `LOG_FORMAT=json`: every line the server writes to standard error is one JSON object, the
/// access record among them with its fields.
#[test]
fn json_logs_are_one_object_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/logs.db", dir.path().display());
    let port = free_port();
    let mut child = spawn(&url, port, &[("LOG_FORMAT", "json")], Stdio::piped());
    let answer = get(port, "/notes/424242").unwrap();
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    sigterm(&child);
    assert!(exit_within(&mut child, Duration::from_secs(20)).success());
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    let records: Vec<serde_json::Value> = stderr
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    assert!(
        records
            .iter()
            .all(|r| r["timestamp"].is_string() && r["level"].is_string())
    );
    let access = records
        .iter()
        .find(|r| r["target"] == "access" && r["route"] == "/notes/{note_id}")
        .unwrap_or_else(|| panic!("no access record in {stderr}"));
    assert_eq!(access["status"], 404);
    assert_eq!(access["method"], "GET");
    assert_eq!(access["trace_id"].as_str().unwrap().len(), 32);
    assert!(access["request_id"].is_string());
}

/// `method path` with a JSON body; the status and the body of the answer.
fn send(port: u16, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: \
         application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = response.get(9..12)?.parse().ok()?;
    let (_, body) = response.split_once("\r\n\r\n")?;
    Some((status, body.to_owned()))
}

/// A server on `url` with the extra `env`, once it serves (`/health/live`).
fn spawn(url: &str, port: u16, env: &[(&str, &str)], stderr: Stdio) -> std::process::Child {
    let child = server()
        .env("DATABASE_URL", url)
        .env("BIND", format!("127.0.0.1:{port}"))
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while get(port, "/health/live").is_none_or(|r| !r.starts_with("HTTP/1.1 200")) {
        assert!(Instant::now() < deadline, "server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

fn start(url: &str, port: u16) -> std::process::Child {
    spawn(url, port, &[], Stdio::null())
}

fn tool(url: &str, args: &[&str]) -> std::process::Output {
    server()
        .env("DATABASE_URL", url)
        .args(args)
        .output()
        .unwrap()
}

/// `server backup` of a server under a write load (notes and deposits): every write
/// acknowledged before the backup began is in the copy, which verifies; `server restore`
/// refuses while the server runs, then swaps the copy in (keeping the replaced file), and the
/// restored database serves exactly what the copy held.
#[test]
fn a_backup_under_write_load_holds_every_acknowledged_write_and_restores() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/live.db", dir.path().display());
    let port = free_port();
    let mut child = start(&url, port);
    let opened = send(
        port,
        "POST",
        "/accounts",
        r#"{"account_id":"acc","owner":"Ann"}"#,
    );
    assert_eq!(opened.unwrap().0, 201);

    let stop = Arc::new(AtomicBool::new(false));
    let notes = Arc::new(Mutex::new(Vec::<i64>::new()));
    let deposits = Arc::new(Mutex::new(0_i64));
    let writers = [
        {
            let (stop, notes) = (stop.clone(), notes.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let body = r#"{"title":"t","body":"b"}"#;
                    if let Some((201, made)) = send(port, "POST", "/notes", body) {
                        let made: serde_json::Value = serde_json::from_str(&made).unwrap();
                        notes.lock().unwrap().push(made["id"].as_i64().unwrap());
                    }
                }
            })
        },
        {
            let (stop, deposits) = (stop.clone(), deposits.clone());
            std::thread::spawn(move || {
                let body = r#"{"event_type":"MoneyDeposited","payload":{"amount_cents":100}}"#;
                while !stop.load(Ordering::SeqCst) {
                    if let Some((201, _)) = send(port, "POST", "/accounts/acc/events", body) {
                        *deposits.lock().unwrap() += 1;
                    }
                }
            })
        },
    ];
    std::thread::sleep(Duration::from_millis(700));
    let notes_before = notes.lock().unwrap().clone();
    let deposits_before = *deposits.lock().unwrap();
    let copy = dir.path().join("copy.db");
    let copy_arg = copy.display().to_string();
    let backup = tool(&url, &["backup", "--to", &copy_arg]);
    let report = String::from_utf8_lossy(&backup.stdout).into_owned();
    assert!(
        backup.status.success(),
        "{report}{}",
        String::from_utf8_lossy(&backup.stderr)
    );
    assert!(report.contains("integrity_check: ok"), "{report}");
    assert!(report.contains("backup: verified and synced"), "{report}");
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::SeqCst);
    for writer in writers {
        writer.join().unwrap();
    }
    let after = *notes.lock().unwrap().last().unwrap();
    assert!(
        !notes_before.is_empty() && deposits_before > 0,
        "the load wrote nothing"
    );

    // Never overwritten; never restored over a database in use.
    assert!(!tool(&url, &["backup", "--to", &copy_arg]).status.success());
    let refused = tool(&url, &["restore", "--from", &copy_arg]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("in use"));

    sigterm(&child);
    assert!(exit_within(&mut child, Duration::from_secs(20)).success());
    let restored = tool(&url, &["restore", "--from", &copy_arg]);
    let said = String::from_utf8_lossy(&restored.stdout).into_owned();
    assert!(
        restored.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&restored.stderr)
    );
    assert!(said.contains("kept as"), "{said}");

    let port = free_port();
    let mut child = start(&url, port);
    for id in &notes_before {
        let (status, _) = send(port, "GET", &format!("/notes/{id}"), "").unwrap();
        assert_eq!(
            status, 200,
            "note {id}, acknowledged before the backup, is missing"
        );
    }
    let (status, _) = send(port, "GET", &format!("/notes/{after}"), "").unwrap();
    assert_eq!(status, 404, "a note written after the backup is not in it");
    let (_, account) = send(port, "GET", "/accounts/acc", "").unwrap();
    let account: serde_json::Value = serde_json::from_str(&account).unwrap();
    let balance = account["balance_cents"].as_i64().unwrap();
    assert!(
        balance >= 100 * deposits_before,
        "{balance} < {deposits_before} deposits"
    );
    sigterm(&child);
    assert!(exit_within(&mut child, Duration::from_secs(20)).success());
    let check = tool(&url, &["ledger-check"]);
    assert!(check.status.success());
}

/// A database with `notes` notes, each written in its own transaction and left in the WAL
/// (no checkpoint), copied with its WAL while its writer is still open: the files a crash
/// leaves. Returns the copy's path.
fn crashed_with_a_full_wal(dir: &std::path::Path, notes: usize) -> std::path::PathBuf {
    use storage::diesel::connection::SimpleConnection;
    let live = dir.join("live.db");
    let url = format!("sqlite://{}", live.display());
    assert!(tool(&url, &["migrate"]).status.success());
    let mut conn = storage::Database::parse(&url).unwrap().establish().unwrap();
    conn.batch_execute("PRAGMA wal_autocheckpoint = 0; PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    for n in 0..notes {
        let body = serde_json::json!({"title": format!("note {n}"), "body": "b"});
        let input = notes::NoteInput::from_json(body.as_object().unwrap()).unwrap();
        notes::repo::notes::create(&mut conn, &input, None).unwrap();
    }
    let copy = dir.join("crashed.db");
    std::fs::copy(&live, &copy).unwrap();
    std::fs::copy(storage::wal::wal_path(&live), storage::wal::wal_path(&copy)).unwrap();
    drop(conn);
    copy
}

fn metric(port: u16, name: &str) -> Option<String> {
    let text = get(port, "/metrics")?;
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next())
        .map(str::to_owned)
}

/// One flipped byte early in the WAL would make SQLite's recovery drop every later committed
/// transaction. The server finds it before SQLite opens the file: one error line naming how
/// much, the WAL copied aside, writes refused (503 `storage-damaged`), reads served, not
/// ready, across restarts, until ACCEPT_WAL_LOSS=true.
#[test]
fn a_wal_that_lost_committed_writes_refuses_writes_until_an_operator_decides() {
    let dir = tempfile::tempdir().unwrap();
    let db = crashed_with_a_full_wal(dir.path(), 20);
    // The inspection reads SQLite's own WAL as SQLite does: clean as written...
    assert_eq!(storage::wal::inspect(&db).unwrap(), None);
    // ...and after one flipped byte in the second frame's page, later commits are lost.
    let wal = storage::wal::wal_path(&db);
    let mut bytes = std::fs::read(&wal).unwrap();
    let page = u32::from_be_bytes(bytes[8..12].try_into().unwrap()) as usize;
    bytes[32 + (24 + page) + 24 + 100] ^= 0x01;
    std::fs::write(&wal, &bytes).unwrap();
    let loss = storage::wal::inspect(&db).unwrap().expect("a loss");
    assert!(loss.commits >= 15, "{loss:?}");

    let url = format!("sqlite://{}", db.display());
    let port = free_port();
    let mut child = spawn(&url, port, &[], Stdio::piped());
    let (status, body) = send(port, "POST", "/notes", r#"{"title":"t","body":"b"}"#).unwrap();
    if status != 503 {
        sigterm(&child);
        let _ = exit_within(&mut child, Duration::from_secs(20));
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        panic!("{status} {body}\n{stderr}");
    }
    assert!(body.contains("storage-damaged"), "{body}");
    assert_eq!(send(port, "GET", "/notes?limit=1", "").unwrap().0, 200);
    assert!(
        get(port, "/health/ready")
            .unwrap()
            .starts_with("HTTP/1.1 503")
    );
    assert_eq!(metric(port, "db_storage_damaged").as_deref(), Some("1"));
    sigterm(&child);
    assert!(exit_within(&mut child, Duration::from_secs(20)).success());
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("ERROR storage::damage"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains(&format!("{} committed transactions", loss.commits)));
    assert!(storage::wal::marker_path(&db).exists());
    let copies = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy()
                .starts_with("crashed.db-wal.damaged-")
        })
        .count();
    assert_eq!(copies, 1, "the damaged WAL is kept");

    // A restart remembers (SQLite has rewritten the WAL by now).
    let port = free_port();
    let mut child = start(&url, port);
    assert_eq!(
        send(port, "POST", "/notes", r#"{"title":"t","body":"b"}"#)
            .unwrap()
            .0,
        503
    );
    sigterm(&child);
    assert!(exit_within(&mut child, Duration::from_secs(20)).success());

    // The operator accepts the loss: writes again, ready, the marker gone.
    let port = free_port();
    let mut child = spawn(&url, port, &[("ACCEPT_WAL_LOSS", "true")], Stdio::null());
    assert_eq!(
        send(port, "POST", "/notes", r#"{"title":"t","body":"b"}"#)
            .unwrap()
            .0,
        201
    );
    assert!(
        get(port, "/health/ready")
            .unwrap()
            .starts_with("HTTP/1.1 200")
    );
    assert!(!storage::wal::marker_path(&db).exists());
    sigterm(&child);
    assert!(exit_within(&mut child, Duration::from_secs(20)).success());
}

/// A damaged table page: the background `PRAGMA quick_check` finds it, the instance turns not
/// ready and the metric says so; a request that meets the page answers 503 `storage-damaged`.
#[test]
fn a_damaged_page_is_found_and_never_served() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("pages.db");
    let url = format!("sqlite://{}", db.display());
    let port = free_port();
    let mut child = start(&url, port);
    for n in 0..400 {
        let body = format!(r#"{{"title":"note {n}","body":"{}"}}"#, "x".repeat(300));
        assert_eq!(send(port, "POST", "/notes", &body).unwrap().0, 201);
    }
    sigterm(&child);
    assert!(exit_within(&mut child, Duration::from_secs(20)).success());
    // The notes table's root page: its header overwritten.
    #[derive(storage::diesel::QueryableByName)]
    struct Root {
        #[diesel(sql_type = storage::diesel::sql_types::BigInt)]
        rootpage: i64,
    }
    let root = {
        use storage::diesel::RunQueryDsl;
        let mut conn = storage::Database::parse(&url).unwrap().establish().unwrap();
        let query = "SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = 'notes'";
        storage::diesel::sql_query(query)
            .get_result::<Root>(&mut conn)
            .unwrap()
            .rootpage
    };
    let mut bytes = std::fs::read(&db).unwrap();
    let page = usize::from(u16::from_be_bytes([bytes[16], bytes[17]]));
    let at = (usize::try_from(root).unwrap() - 1) * page;
    bytes[at..at + 12].fill(0xA5);
    std::fs::write(&db, &bytes).unwrap();

    let port = free_port();
    let mut child = spawn(&url, port, &[("QUICK_CHECK_SECS", "1")], Stdio::null());
    let deadline = Instant::now() + Duration::from_secs(20);
    while metric(port, "db_storage_damaged").as_deref() != Some("1") {
        assert!(
            Instant::now() < deadline,
            "quick_check never reported the damage"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        get(port, "/health/ready")
            .unwrap()
            .starts_with("HTTP/1.1 503")
    );
    // Reading every note meets the page: never a 500, never damaged data as data.
    let mut damaged = 0;
    for id in 1..=400 {
        let (status, body) = send(port, "GET", &format!("/notes/{id}"), "").unwrap();
        assert_ne!(status, 500, "{body}");
        if status == 503 {
            assert!(body.contains("storage-damaged"), "{body}");
            damaged += 1;
        }
    }
    let (status, body) = send(port, "GET", "/notes?limit=100&offset=300", "").unwrap();
    assert!(
        status == 200 || body.contains("storage-damaged"),
        "{status} {body}"
    );
    assert!(damaged > 0, "no request met the damaged page");
    sigterm(&child);
    assert!(exit_within(&mut child, Duration::from_secs(20)).success());
}

/// `ledger-check --standby` reads the first of `DATABASE_REPLICA_URLS` without migrating it
/// (a standby takes no writes), and without one it says what it needs and exits 1.
#[test]
#[cfg_attr(
    not(postgres_tests),
    ignore = "needs TEST_POSTGRES_URL (a PostgreSQL server)"
)]
fn ledger_check_runs_on_a_standby_and_needs_one_named() {
    let Ok(admin) = std::env::var("TEST_POSTGRES_URL") else {
        eprintln!("TEST_POSTGRES_URL not set: skipped");
        return;
    };
    let db = storage::testing::TestDatabase::create(storage::Backend::Postgres, Some(&admin))
        .unwrap()
        .unwrap();
    assert!(tool(&db.url, &["migrate"]).status.success());
    // The primary's own database stands in for a standby: what is tested is that the check
    // reads there and writes nothing (no migration on a read-only server).
    let check = server()
        .env("DATABASE_URL", &db.url)
        .env("DATABASE_REPLICA_URLS", &db.url)
        .args(["ledger-check", "--standby"])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let none = tool(&db.url, &["ledger-check", "--standby"]);
    assert!(!none.status.success());
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("DATABASE_REPLICA_URLS"),
        "{}",
        String::from_utf8_lossy(&none.stderr)
    );
}
