//! Outbound webhooks: endpoints registered over HTTP, events delivered to a real receiver on a
//! socket, every signature verified with the Standard Webhooks reference library; order,
//! retries, giving up, rotation, redelivery, the SSRF checks, a restart, and no secret stored.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::backend_tests;
use crate::helpers::{Backend, TestApp, json, problem, test_settings, with_conn};

backend_tests!(
    deliveries_are_signed_in_order_and_logged,
    failures_are_retried_then_given_up_in_order,
    a_dead_endpoint_delays_no_other,
    internal_destinations_are_refused_unless_allowed,
    rotation_signs_with_both_secrets_and_redelivery_repeats_the_id,
    a_restarted_server_delivers_what_waited,
    endpoints_are_their_owners,
    an_owner_has_at_most_the_configured_endpoints,
);

const SIGNING_KEY: &str = "outbound-webhooks-test-signing-key-0123456789";

/// What the receiver does with the next request.
#[derive(Debug, Clone, Copy)]
enum Answer {
    Status(u16),
    /// Answers 200 after this long (past the delivery timeout: a timeout).
    Stall(Duration),
}

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Received {
    id: String,
    timestamp: String,
    signature: String,
    body: Vec<u8>,
}

impl Received {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// Verified with `secret` by the Standard Webhooks reference library.
    fn verifies_with(&self, secret: &str) -> bool {
        let mut headers = http::HeaderMap::new();
        headers.insert("webhook-id", self.id.parse().unwrap());
        headers.insert("webhook-timestamp", self.timestamp.parse().unwrap());
        headers.insert("webhook-signature", self.signature.parse().unwrap());
        standardwebhooks::Webhook::new(secret)
            .unwrap()
            .verify(&self.body, &headers)
            .is_ok()
    }
}

/// A webhook receiver on 127.0.0.1: records every request, answers as told (200 when told
/// nothing).
#[derive(Clone)]
struct Receiver {
    url: String,
    got: Arc<Mutex<Vec<Received>>>,
    script: Arc<Mutex<VecDeque<Answer>>>,
}

impl Receiver {
    fn start() -> Receiver {
        let got = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(VecDeque::new()));
        let state = (Arc::clone(&got), Arc::clone(&script));
        let server = HttpServer::new(move || {
            App::new()
                .app_data(web::Data::new(state.clone()))
                .default_service(web::to(receive))
        })
        .workers(1)
        .bind("127.0.0.1:0")
        .unwrap();
        let port = server.addrs()[0].port();
        tokio::spawn(server.run());
        Receiver {
            url: format!("http://127.0.0.1:{port}/hooks"),
            got,
            script,
        }
    }

    fn then(&self, answers: &[Answer]) {
        self.script.lock().unwrap().extend(answers.iter().copied());
    }

    fn got(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// Waits (at most 20 s) until `n` requests have arrived.
    async fn wait_for(&self, n: usize) -> Vec<Received> {
        for _ in 0..400 {
            let got = self.got();
            if got.len() >= n {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{n} deliveries expected, got {:?}", self.got().len());
    }
}

type State = (Arc<Mutex<Vec<Received>>>, Arc<Mutex<VecDeque<Answer>>>);

async fn receive(req: HttpRequest, body: web::Bytes, state: web::Data<State>) -> HttpResponse {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    state.0.lock().unwrap().push(Received {
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp"),
        signature: header("webhook-signature"),
        body: body.to_vec(),
    });
    let answer = state.1.lock().unwrap().pop_front();
    match answer {
        None => HttpResponse::Ok().finish(),
        Some(Answer::Status(code)) => {
            HttpResponse::build(actix_web::http::StatusCode::from_u16(code).unwrap()).finish()
        }
        Some(Answer::Stall(pause)) => {
            tokio::time::sleep(pause).await;
            HttpResponse::Ok().finish()
        }
    }
}

/// Quick retries, a short timeout, a quick poll; the receiver's address allowed.
fn outbound(s: &mut server::Settings) {
    let o = &mut s.outbound_webhooks;
    o.key = outbound_webhooks::SigningKey::new(SIGNING_KEY.as_bytes().to_vec());
    o.allow = outbound_webhooks::Allow::parse("127.0.0.1").unwrap();
    o.max_attempts = 3;
    o.retry_base = Duration::from_millis(100);
    o.timeout = Duration::from_millis(700);
    o.poll = Duration::from_millis(100);
    // A stopped server's lease runs out quickly, for the restart test.
    o.lease = Duration::from_secs(2);
}

async fn spawn(backend: Backend) -> Option<TestApp> {
    TestApp::spawn_with(backend, outbound).await
}

async fn register(app: &TestApp, url: &str, types: Option<&[&str]>) -> Value {
    let mut body = json!({"url": url});
    if let Some(types) = types {
        body["event_types"] = json!(types);
    }
    json(
        app.post_json("/webhook-endpoints", &body).await,
        StatusCode::CREATED,
    )
    .await
}

async fn deliveries_are_signed_in_order_and_logged(backend: Backend) {
    let Some(app) = spawn(backend).await else {
        return eprintln!("TEST_POSTGRES_URL not set: skipped");
    };
    let receiver = Receiver::start();
    app.open_account("before", "Before").await;
    let endpoint = register(&app, &receiver.url, None).await;
    let secret = endpoint["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{endpoint}");
    assert_eq!(endpoint["event_types"].as_array().unwrap().len(), 4);
    let id = endpoint["id"].as_i64().unwrap();

    app.open_account("ann", "Ann").await;
    app.open_account("bob", "Bob").await;
    app.deposit("ann", 500).await;
    let moved = app
        .post_json(
            "/transfers",
            &json!({"from": "ann", "to": "bob", "amount_cents": 200}),
        )
        .await;
    assert_eq!(moved.status(), StatusCode::CREATED);
    let got = receiver.wait_for(5).await;
    // Only what was committed after the registration, in commit order, each verified.
    let mut listed = Vec::new();
    for account in ["ann", "bob"] {
        listed.extend(app.all_events(account).await);
    }
    listed.sort_by_key(|e| e["id"].as_i64().unwrap());
    assert_eq!(got.len(), listed.len(), "{got:?}");
    for (delivery, event) in got.iter().zip(&listed) {
        assert!(delivery.verifies_with(&secret), "{delivery:?}");
        assert_eq!(delivery.id, format!("evt_{}", event["id"]));
        let body = delivery.json();
        assert_eq!(body["type"], event["event_type"]);
        assert_eq!(&body["data"], event);
    }
    // The log: one delivered attempt per event, newest first.
    let log = json(
        app.get(&format!("/webhook-endpoints/{id}/deliveries"))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(log["total"], 5);
    let first = &log["items"][0];
    assert_eq!(
        (first["outcome"].clone(), first["attempt"].clone()),
        (json!("delivered"), json!(1))
    );
    assert_eq!(first["response_status"], 200);
    // The secret is shown once and stored nowhere.
    let shown = json(
        app.get(&format!("/webhook-endpoints/{id}")).await,
        StatusCode::OK,
    )
    .await;
    assert!(shown.get("secret").is_none(), "{shown}");
    let stored: Vec<String> = with_conn(&app.db, |c| {
        use diesel::RunQueryDsl;
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Text)]
            text: String,
        }
        diesel::sql_query(
            "SELECT url || event_types || created_at || lease_owner AS text FROM webhook_endpoints \
             UNION ALL SELECT message_id || COALESCE(error, '') AS text FROM webhook_deliveries",
        )
        .load::<Row>(c)
        .unwrap()
        .into_iter()
        .map(|r| r.text)
        .collect()
    })
    .await;
    let key_part = &secret["whsec_".len()..];
    assert!(stored.iter().all(|t| !t.contains(key_part)), "{stored:?}");
}

async fn failures_are_retried_then_given_up_in_order(backend: Backend) {
    let Some(app) = spawn(backend).await else {
        return eprintln!("TEST_POSTGRES_URL not set: skipped");
    };
    let receiver = Receiver::start();
    let endpoint = register(&app, &receiver.url, Some(&["MoneyDeposited"])).await;
    let id = endpoint["id"].as_i64().unwrap();
    app.open_account("ann", "Ann").await;
    // The first deposit fails twice and then arrives; the second fails all three times and is
    // given up; the third arrives at once. None overtakes another.
    receiver.then(&[
        Answer::Status(500),
        Answer::Stall(Duration::from_secs(2)),
        Answer::Status(204),
        Answer::Status(503),
        Answer::Status(400),
        Answer::Status(500),
    ]);
    for amount in [1, 2, 3] {
        app.deposit("ann", amount).await;
    }
    let got = receiver.wait_for(7).await;
    let amounts: Vec<i64> = got
        .iter()
        .map(|r| {
            r.json()["data"]["payload"]["amount_cents"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(
        amounts,
        [1, 1, 1, 2, 2, 2, 3],
        "only deposits, in order, retried"
    );
    let ids: Vec<&str> = got.iter().map(|r| r.id.as_str()).collect();
    assert!(
        ids[0] == ids[1] && ids[1] == ids[2] && ids[2] != ids[3],
        "{ids:?}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let log = json(
        app.get(&format!("/webhook-endpoints/{id}/deliveries?limit=10"))
            .await,
        StatusCode::OK,
    )
    .await;
    let outcomes: Vec<(String, i64)> = log["items"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .map(|d| {
            (
                d["outcome"].as_str().unwrap().to_owned(),
                d["attempt"].as_i64().unwrap(),
            )
        })
        .collect();
    let expected = [
        ("failed", 1),
        ("failed", 2),
        ("delivered", 3),
        ("failed", 1),
        ("failed", 2),
        ("gave_up", 3),
        ("delivered", 1),
    ];
    let expected: Vec<(String, i64)> = expected
        .iter()
        .map(|(o, a)| ((*o).to_owned(), *a))
        .collect();
    assert_eq!(outcomes, expected);
    let timed_out = &log["items"][5];
    assert!(
        timed_out["error"].as_str().unwrap().contains("timed out"),
        "{timed_out}"
    );
    assert_eq!(timed_out["response_status"], Value::Null);
    let failed = &log["items"][6];
    assert!(failed["next_attempt_at"].as_i64().unwrap() > 0, "{failed}");
}

/// One endpoint's first attempt hangs (for its whole 10 s timeout) while the other gets all its
/// events: endpoints are delivered side by side.
async fn a_dead_endpoint_delays_no_other(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, |s| {
        outbound(s);
        s.outbound_webhooks.timeout = Duration::from_secs(10);
    })
    .await
    else {
        return eprintln!("TEST_POSTGRES_URL not set: skipped");
    };
    let (dead, live) = (Receiver::start(), Receiver::start());
    dead.then(&[Answer::Stall(Duration::from_secs(60)); 5]);
    register(&app, &dead.url, None).await;
    register(&app, &live.url, None).await;
    app.open_account("ann", "Ann").await;
    for amount in 1..=5 {
        app.deposit("ann", amount).await;
    }
    let got = live.wait_for(6).await;
    assert_eq!(got.len(), 6);
    assert_eq!(
        dead.got().len(),
        1,
        "the dead one is still on its first attempt"
    );
}

async fn internal_destinations_are_refused_unless_allowed(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, |s| {
        outbound(s);
        s.outbound_webhooks.allow = outbound_webhooks::Allow::default();
    })
    .await
    else {
        return eprintln!("TEST_POSTGRES_URL not set: skipped");
    };
    for url in [
        "http://127.0.0.1:9/x",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/x",
        "http://10.0.0.1/x",
        "http://localhost:8080/x",
        "http://metadata.google.internal/x",
    ] {
        let res = app
            .post_json("/webhook-endpoints", &json!({"url": url}))
            .await;
        let refused = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
        let message = refused["errors"][0]["message"].as_str().unwrap();
        assert!(message.contains("refused destination"), "{url}: {refused}");
    }
    for body in [
        json!({"url": "ftp://example.com/x"}),
        json!({"url": "https://example.com", "event_types": ["Nope"]}),
    ] {
        let res = app.post_json("/webhook-endpoints", &body).await;
        problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    }
    // Names that always mean this machine are refused as they are (other names are checked
    // when each delivery resolves them: crates/outbound-webhooks, destination tests).
    let receiver = Receiver::start();
    let sneaky = receiver.url.replace("127.0.0.1", "localhost.");
    let res = app
        .post_json("/webhook-endpoints", &json!({"url": sneaky}))
        .await;
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    // Without a signing key nothing is registered.
    let off = TestApp::spawn(backend).await.unwrap();
    let res = off
        .post_json(
            "/webhook-endpoints",
            &json!({"url": "https://example.com/x"}),
        )
        .await;
    problem(res, StatusCode::SERVICE_UNAVAILABLE, "service-unavailable").await;
}

async fn rotation_signs_with_both_secrets_and_redelivery_repeats_the_id(backend: Backend) {
    let Some(app) = spawn(backend).await else {
        return eprintln!("TEST_POSTGRES_URL not set: skipped");
    };
    let receiver = Receiver::start();
    let endpoint = register(&app, &receiver.url, None).await;
    let (id, old) = (
        endpoint["id"].as_i64().unwrap(),
        endpoint["secret"].as_str().unwrap().to_owned(),
    );
    app.open_account("ann", "Ann").await;
    receiver.wait_for(1).await;
    let rotated = json(
        app.post_json(
            &format!("/webhook-endpoints/{id}/rotate-secret"),
            &json!({}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let new = rotated["secret"].as_str().unwrap().to_owned();
    assert_ne!(new, old);
    assert_eq!(rotated["secret_version"], 2);
    // Again within the grace (a retried call, say) would end the old secret at once: refused.
    let again = app
        .post_json(
            &format!("/webhook-endpoints/{id}/rotate-secret"),
            &json!({}),
        )
        .await;
    problem(again, StatusCode::CONFLICT, "conflict").await;
    app.deposit("ann", 5).await;
    let got = receiver.wait_for(2).await;
    assert!(got[0].verifies_with(&old) && !got[0].verifies_with(&new));
    assert!(
        got[1].verifies_with(&old) && got[1].verifies_with(&new),
        "{:?}",
        got[1]
    );

    let log = json(
        app.get(&format!("/webhook-endpoints/{id}/deliveries"))
            .await,
        StatusCode::OK,
    )
    .await;
    let first = log["items"][1]["id"].as_i64().unwrap();
    let again = app
        .post_json(
            &format!("/webhook-endpoints/{id}/deliveries/{first}/redeliver"),
            &json!({}),
        )
        .await;
    let again = json(again, StatusCode::CREATED).await;
    assert_eq!(
        (again["manual"].clone(), again["outcome"].clone()),
        (json!(true), json!("delivered"))
    );
    let got = receiver.wait_for(3).await;
    assert_eq!(got[2].id, got[0].id, "a redelivery keeps the webhook-id");
    assert_eq!(got[2].body, got[0].body);
    let res = app
        .post_json(
            &format!("/webhook-endpoints/{id}/deliveries/99999/redeliver"),
            &json!({}),
        )
        .await;
    problem(res, StatusCode::NOT_FOUND, "not-found").await;

    // Disabled, events wait; enabled, they come, in order.
    let path = format!("/webhook-endpoints/{id}");
    let off = app
        .request(reqwest::Method::PATCH, &path)
        .json(&json!({"enabled": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(json(off, StatusCode::OK).await["enabled"], false);
    app.deposit("ann", 6).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.got().len(), 3);
    let on = app
        .request(reqwest::Method::PATCH, &path)
        .json(&json!({"enabled": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(on.status(), StatusCode::OK);
    let got = receiver.wait_for(4).await;
    assert_eq!(got[3].json()["data"]["payload"]["amount_cents"], 6);
    assert_eq!(app.delete(&path).await.status(), StatusCode::NO_CONTENT);
    problem(app.get(&path).await, StatusCode::NOT_FOUND, "not-found").await;
}

/// Events committed while deliveries fail are delivered, in order, by the next server on the
/// database once the receiver is back: the cursor is in the database, not in a process.
async fn a_restarted_server_delivers_what_waited(backend: Backend) {
    let Some(app) = spawn(backend).await else {
        return eprintln!("TEST_POSTGRES_URL not set: skipped");
    };
    let receiver = Receiver::start();
    register(&app, &receiver.url, None).await;
    receiver.then(&[Answer::Status(500); 2]);
    app.open_account("ann", "Ann").await;
    app.deposit("ann", 1).await;
    receiver.wait_for(1).await;
    // The first server stops; a second one on the same database takes over.
    app.handle_stop().await;
    let mut settings = test_settings(&app.db);
    outbound(&mut settings);
    let second = server::Application::build(settings).await.unwrap();
    let handle = second.handle();
    tokio::spawn(second.run_until_stopped());
    let got = receiver.wait_for(4).await;
    let sequences: Vec<i64> = got
        .iter()
        .map(|r| r.json()["data"]["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(sequences, [1, 1, 1, 2], "{got:?}");
    handle.stop(false).await;
}

async fn endpoints_are_their_owners(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, |s| {
        outbound(s);
        s.api_auth = server::auth::ApiAuth::Tokens;
        s.api_keys = vec![server::Secret::new(
            "outbound-operator-key-0123456789abcdef",
        )];
    })
    .await
    else {
        return eprintln!("TEST_POSTGRES_URL not set: skipped");
    };
    let operator = |req: reqwest::RequestBuilder| {
        req.header("X-API-Key", "outbound-operator-key-0123456789abcdef")
    };
    let mut tokens = Vec::new();
    for name in ["ann", "bob"] {
        let user = json(
            operator(app.request(reqwest::Method::POST, "/users"))
                .json(&json!({"name": name}))
                .send()
                .await
                .unwrap(),
            StatusCode::CREATED,
        )
        .await;
        let path = format!("/users/{}/tokens", user["id"]);
        let token = json(
            operator(app.request(reqwest::Method::POST, &path))
                .json(&json!({"scope": "write"}))
                .send()
                .await
                .unwrap(),
            StatusCode::CREATED,
        )
        .await;
        tokens.push(token["token"].as_str().unwrap().to_owned());
    }
    let as_user = |i: usize, method: reqwest::Method, path: &str| {
        app.request(method, path).bearer_auth(&tokens[i])
    };
    let receiver = Receiver::start();
    let endpoint = json(
        as_user(0, reqwest::Method::POST, "/webhook-endpoints")
            .json(&json!({"url": receiver.url}))
            .send()
            .await
            .unwrap(),
        StatusCode::CREATED,
    )
    .await;
    let path = format!("/webhook-endpoints/{}", endpoint["id"]);
    for (i, account) in [(0, "ann-1"), (1, "bob-1")] {
        let res = as_user(i, reqwest::Method::POST, "/accounts")
            .json(&json!({"account_id": account, "owner": account}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED);
    }
    let got = receiver.wait_for(1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        receiver.got().len(),
        1,
        "only ann's account's events go to ann's endpoint"
    );
    assert_eq!(got[0].json()["data"]["aggregate_id"], "ann-1");
    // Bob cannot see, change or remove ann's endpoint; his list is empty.
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let res = as_user(1, method, &path).send().await.unwrap();
        problem(res, StatusCode::NOT_FOUND, "not-found").await;
    }
    let res = as_user(1, reqwest::Method::PATCH, &path)
        .json(&json!({"enabled": false}))
        .send()
        .await
        .unwrap();
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
    let list = json(
        as_user(1, reqwest::Method::GET, "/webhook-endpoints")
            .send()
            .await
            .unwrap(),
        StatusCode::OK,
    )
    .await;
    assert_eq!(list["total"], 0);
    let list = json(
        operator(app.request(reqwest::Method::GET, "/webhook-endpoints"))
            .send()
            .await
            .unwrap(),
        StatusCode::OK,
    )
    .await;
    assert_eq!(list["total"], 1);
    assert_eq!(
        app.get("/webhook-endpoints").await.status(),
        StatusCode::UNAUTHORIZED
    );
}

/// Past `max_per_owner` endpoints a registration is 409, also when several race for the last
/// places: exactly the free places are taken (the owner's registrations are serialized).
async fn an_owner_has_at_most_the_configured_endpoints(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, |s| {
        outbound(s);
        s.outbound_webhooks.max_per_owner = 3;
    })
    .await
    else {
        return eprintln!("TEST_POSTGRES_URL not set: skipped");
    };
    let first = register(&app, "http://127.0.0.1:9/a", None).await;
    let body = json!({"url": "http://127.0.0.1:9/b"});
    let answers =
        futures_util::future::join_all((0..6).map(|_| app.post_json("/webhook-endpoints", &body)))
            .await;
    let created = answers
        .iter()
        .filter(|r| r.status() == StatusCode::CREATED)
        .count();
    assert_eq!(created, 2, "the two free places, no more");
    for answer in answers {
        if answer.status() != StatusCode::CREATED {
            problem(answer, StatusCode::CONFLICT, "conflict").await;
        }
    }
    let path = format!("/webhook-endpoints/{}", first["id"]);
    assert_eq!(app.delete(&path).await.status(), StatusCode::NO_CONTENT);
    register(&app, "http://127.0.0.1:9/c", None).await;
}
