//! Area F: `POST /webhook` and `GET /webhook/events`.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};
use server::{Application, Secret};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use webhook_verify::header;

use crate::helpers::{Backend, TestApp, json, problem, test_settings};
use crate::{api_tests, backend_tests};

const SECRET: &str = "whsec_http_test_3f9a_padded_to_32_bytes";
const PREVIOUS: &str = "whsec_http_previous_77c1";
const MAX_BODY: usize = 1_048_576;

backend_tests!(
    every_vector_through_the_endpoint,
    body_is_checked_only_after_the_signature,
    invalid_deliveries_store_nothing,
    exact_replay_returns_the_original_id,
    concurrent_identical_deliveries_store_one_row,
    body_at_the_size_limit_is_accepted_and_over_it_is_413,
    previous_secret_is_accepted_during_rotation,
    list_pages_newest_first,
    only_json_content_types_are_accepted,
    list_pages_are_bounded_in_bytes,
    nul_in_event_type_is_422,
    several_signature_headers_are_malformed,
    blank_secret_refuses_to_start,
    secret_never_appears_in_responses_or_logs,
);

api_tests!(unset_secret_refuses_every_delivery, wrong_method_is_405,);

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

async fn spawn(backend: Backend) -> TestApp {
    TestApp::spawn_with(backend, |s| s.webhook_secret = Some(Secret::new(SECRET)))
        .await
        .unwrap()
}

impl TestApp {
    /// POSTs `body` to /webhook with the given signature header (none when `None`).
    async fn deliver(&self, signature: Option<&str>, body: impl Into<reqwest::Body>) -> Response {
        let mut req = self
            .request(Method::POST, "/webhook")
            .header("content-type", "application/json")
            .body(body);
        if let Some(sig) = signature {
            let value = reqwest::header::HeaderValue::from_bytes(sig.as_bytes()).unwrap();
            req = req.header("x-webhook-signature", value);
        }
        req.send().await.unwrap()
    }

    /// Signs `body` with `secret` at the current time and delivers it.
    async fn deliver_signed(&self, secret: &str, body: &str) -> Response {
        let sig = header(secret.as_bytes(), now(), body.as_bytes());
        self.deliver(Some(&sig), body.to_owned()).await
    }

    async fn event_count(&self) -> i64 {
        let list = json(self.get("/webhook/events").await, StatusCode::OK).await;
        list["total"].as_i64().unwrap()
    }
}

/// Asserts a 202 receipt; returns the id.
async fn accepted(res: Response) -> i64 {
    let body = json(res, StatusCode::ACCEPTED).await;
    assert_eq!(body["status"], "accepted");
    assert_eq!(body.as_object().unwrap().len(), 2, "{body}");
    body["id"].as_i64().unwrap()
}

/// Asserts a 401 `invalid-signature` problem; returns its detail.
async fn rejected(res: Response) -> String {
    assert_eq!(
        res.headers()["www-authenticate"],
        "HMAC-SHA256 header=\"X-Webhook-Signature\""
    );
    let p = problem(res, StatusCode::UNAUTHORIZED, "invalid-signature").await;
    assert_eq!(p["title"], "Invalid webhook signature.");
    p["detail"].as_str().unwrap().to_owned()
}

async fn invalid_body(res: Response) -> Value {
    assert!(!res.headers().contains_key("www-authenticate"));
    let p = problem(res, StatusCode::BAD_REQUEST, "invalid-body").await;
    assert_eq!(p["title"], "event_type (string) is required.");
    p
}

// ---------------------------------------------------------------------------------------------
// The shared vectors (crates/webhook-verify/tests/vectors.json) through the real endpoint.

struct Vector {
    name: String,
    secret: String,
    previous: Option<String>,
    header: Option<String>,
    body: Vec<u8>,
    now: i64,
    expected: String,
}

/// Vectors that need the same server: (secret, previous secret, now).
type Group<'a> = ((String, Option<String>, i64), Vec<&'a Vector>);

fn vectors() -> Vec<Vector> {
    let all: Value = serde_json::from_str(include_str!(
        "../../crates/webhook-verify/tests/vectors.json"
    ))
    .unwrap();
    all.as_array()
        .unwrap()
        .iter()
        .map(|v| Vector {
            name: v["name"].as_str().unwrap().to_owned(),
            secret: v["secret"].as_str().unwrap().to_owned(),
            previous: v["previous_secret"].as_str().map(str::to_owned),
            header: v["header"].as_str().map(str::to_owned),
            body: match (v["body"].as_str(), v["body_base64"].as_str()) {
                (Some(text), None) => text.as_bytes().to_vec(),
                (None, Some(b64)) => base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .unwrap(),
                _ => panic!("{}: body or body_base64", v["name"]),
            },
            now: v["now"].as_i64().unwrap(),
            expected: v["expected"].as_str().unwrap().to_owned(),
        })
        .collect()
}

/// Vectors whose header HTTP itself changes on the way: a field value's leading and trailing
/// white space is not part of the value (RFC 9110 §5.5), so ` t=…,v1=…` reaches the server as
/// the plain, valid header. The verifier's own tests cover the untrimmed string.
const TRIMMED_IN_TRANSIT: &[&str] = &["leading_space_in_header"];

/// The final value of `key` under the parsing rules of spec 5.2 (split on `,`, then on the
/// first `=`, later keys win).
fn final_value<'a>(header: &'a str, key: &str) -> &'a str {
    header
        .split(',')
        .filter_map(|part| part.split_once('='))
        .rfind(|(k, _)| *k == key)
        .unwrap()
        .1
}

fn final_t(header: &str) -> u128 {
    final_value(header, "t").parse().unwrap()
}

/// The decided `detail` of DECISIONS.md F, computed independently of the verifier crate.
fn expected_detail(v: &Vector) -> String {
    match v.expected.as_str() {
        "missing_header" => "Missing X-Webhook-Signature header.".to_owned(),
        "malformed_header" => "Malformed X-Webhook-Signature header.".to_owned(),
        "signature_mismatch" => "Signature mismatch.".to_owned(),
        "timestamp_out_of_tolerance" => {
            let age = i128::from(v.now) - final_t(v.header.as_deref().unwrap()) as i128;
            let n = age.unsigned_abs().min(i64::MAX as u128);
            if age < 0 {
                format!("Webhook timestamp is {n} seconds in the future (tolerance: 300).")
            } else {
                format!("Webhook timestamp is {n} seconds old (tolerance: 300).")
            }
        }
        other => panic!("{}: unknown expectation {other}", v.name),
    }
}

/// True when the body is what step 3 of spec 4.6 accepts.
fn acceptable_body(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("event_type").map(Value::is_string))
        .unwrap_or(false)
}

async fn every_vector_through_the_endpoint(backend: Backend) {
    let vectors = vectors();
    assert_eq!(
        vectors.len(),
        86,
        "the vector file changed: review this test"
    );
    // One app per (secret, previous secret, now): the server's clock is pinned to the
    // vectors' `now`.
    let mut groups: Vec<Group> = Vec::new();
    for v in &vectors {
        let key = (v.secret.clone(), v.previous.clone(), v.now);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, list)) => list.push(v),
            None => groups.push((key, vec![v])),
        }
    }
    let (mut ok, mut bad_body, mut refused) = (0, 0, 0);
    for ((secret, previous, now), group) in groups {
        let app = TestApp::spawn_with(backend, |s| {
            s.webhook_secret = Some(Secret::new(secret.clone()));
            s.webhook_secret_previous = previous.clone().map(Secret::new);
            s.webhook_clock = webhooks::Clock::Fixed(now);
        })
        .await
        .unwrap();
        // (t, v1) of every accepted delivery → its id: a repeat must get the same id back.
        let mut stored: HashMap<(u128, String), i64> = HashMap::new();
        for v in group {
            let before = app.event_count().await;
            let res = app.deliver(v.header.as_deref(), v.body.clone()).await;
            let trimmed = TRIMMED_IN_TRANSIT.contains(&v.name.as_str());
            if trimmed {
                assert_eq!(v.expected, "malformed_header", "{}", v.name);
            }
            if v.expected == "ok" || trimmed {
                if !acceptable_body(&v.body) {
                    invalid_body(res).await;
                    assert_eq!(app.event_count().await, before, "{}", v.name);
                    bad_body += 1;
                    continue;
                }
                let id = accepted(res).await;
                let h = v.header.as_deref().unwrap().trim();
                let v1 = final_value(h, "v1").to_owned();
                match stored.get(&(final_t(h), v1.clone())) {
                    Some(original) => {
                        assert_eq!(id, *original, "{}: replay gets the original id", v.name);
                        assert_eq!(app.event_count().await, before, "{}", v.name);
                    }
                    None => {
                        stored.insert((final_t(h), v1), id);
                        assert_eq!(app.event_count().await, before + 1, "{}", v.name);
                    }
                }
                ok += 1;
            } else {
                let detail = rejected(res).await;
                assert_eq!(detail, expected_detail(v), "{}", v.name);
                assert_eq!(
                    app.event_count().await,
                    before,
                    "{}: nothing stored",
                    v.name
                );
                refused += 1;
            }
        }
    }
    assert_eq!(ok + bad_body + refused, 86);
    assert_eq!(bad_body, 2, "body_empty_ok and body_binary_ok");
    assert!(ok >= 20 && refused >= 50, "{ok} {refused}");
}

// ---------------------------------------------------------------------------------------------

async fn body_is_checked_only_after_the_signature(backend: Backend) {
    let app = spawn(backend).await;
    for body in [
        "",
        "not json",
        "[]",
        "\"event_type\"",
        "{}",
        r#"{"event_type": 5}"#,
        r#"{"event_type": null}"#,
        r#"{"data": {"event_type": "nested"}}"#,
    ] {
        let p = invalid_body(app.deliver_signed(SECRET, body).await).await;
        assert!(
            p["detail"]
                .as_str()
                .unwrap()
                .starts_with("The webhook body")
        );
        // The same bad body with a bad signature is a 401: nothing is parsed before that.
        let res = app.deliver(Some("t=1,v1=00"), body.to_owned()).await;
        assert!(rejected(res).await.starts_with("Webhook timestamp is"));
        let sig = header(b"wrong secret", now(), body.as_bytes());
        assert_eq!(
            rejected(app.deliver(Some(&sig), body.to_owned()).await).await,
            "Signature mismatch."
        );
        assert_eq!(
            rejected(app.deliver(None, body.to_owned()).await).await,
            "Missing X-Webhook-Signature header."
        );
    }
    // Not UTF-8, validly signed.
    let bytes = b"{\"event_type\":\"\xff\"}".to_vec();
    let sig = header(SECRET.as_bytes(), now(), &bytes);
    invalid_body(app.deliver(Some(&sig), bytes).await).await;
    assert_eq!(app.event_count().await, 0);
}

async fn invalid_deliveries_store_nothing(backend: Backend) {
    let app = spawn(backend).await;
    let body = r#"{"event_type":"note.created"}"#;
    let t = now();
    let good = header(SECRET.as_bytes(), t, body.as_bytes());
    let cases: Vec<(Option<String>, String, &str)> = vec![
        (None, body.into(), "Missing X-Webhook-Signature header."),
        (
            Some(String::new()),
            body.into(),
            "Malformed X-Webhook-Signature header.",
        ),
        (
            Some("garbage".into()),
            body.into(),
            "Malformed X-Webhook-Signature header.",
        ),
        (
            Some(format!("t={t}")),
            body.into(),
            "Malformed X-Webhook-Signature header.",
        ),
        (
            Some(good.clone()),
            format!("{body} "),
            "Signature mismatch.",
        ),
        (
            Some(
                good.to_uppercase()
                    .replace("T=", "t=")
                    .replace("V1=", "v1="),
            ),
            body.into(),
            "Signature mismatch.",
        ),
        (
            Some(header(SECRET.as_bytes(), t - 1000, body.as_bytes())),
            body.into(),
            "Webhook timestamp is 1000 seconds old (tolerance: 300).",
        ),
        (
            Some(header(SECRET.as_bytes(), t + 3600, body.as_bytes())),
            body.into(),
            "Webhook timestamp is 3600 seconds in the future (tolerance: 300).",
        ),
        (
            Some(header(PREVIOUS.as_bytes(), t, body.as_bytes())),
            body.into(),
            "Signature mismatch.",
        ),
    ];
    for (sig, body, detail) in cases {
        let res = app.deliver(sig.as_deref(), body).await;
        let got = rejected(res).await;
        // The age depends on the second the request lands in (a loaded machine may take a
        // few): compare the sentence with the number allowed to drift by up to a minute.
        if let Some(age) = detail.strip_prefix("Webhook timestamp is ") {
            let expected: i64 = age.split(' ').next().unwrap().parse().unwrap();
            let rest = got.strip_prefix("Webhook timestamp is ").expect(&got);
            let (n, tail) = rest.split_once(' ').unwrap();
            let n: i64 = n.parse().unwrap();
            let drift = if detail.contains("future") {
                expected - n
            } else {
                n - expected
            };
            assert!((0..60).contains(&drift), "{got}");
            assert_eq!(tail, age.split_once(' ').unwrap().1, "{got}");
        } else {
            assert_eq!(got, detail);
        }
    }
    let list = json(app.get("/webhook/events").await, StatusCode::OK).await;
    assert_eq!(
        list,
        json!({"items": [], "limit": 20, "offset": 0, "total": 0, "next_offset": null})
    );
    // The good one still works afterwards.
    accepted(app.deliver(Some(&good), body.to_owned()).await).await;
    assert_eq!(app.event_count().await, 1);
}

async fn exact_replay_returns_the_original_id(backend: Backend) {
    let app = spawn(backend).await;
    let body = r#"{"event_type":"invoice.paid","amount":100}"#;
    let t = now();
    let sig = header(SECRET.as_bytes(), t, body.as_bytes());
    let first = accepted(app.deliver(Some(&sig), body.to_owned()).await).await;
    for _ in 0..3 {
        let again = accepted(app.deliver(Some(&sig), body.to_owned()).await).await;
        assert_eq!(again, first);
    }
    assert_eq!(app.event_count().await, 1);
    // The same body signed at another second is a new delivery.
    let later = header(SECRET.as_bytes(), t - 1, body.as_bytes());
    let second = accepted(app.deliver(Some(&later), body.to_owned()).await).await;
    assert_ne!(second, first);
    // Another body at the same second too.
    let other = r#"{"event_type":"invoice.paid","amount":101}"#;
    let sig = header(SECRET.as_bytes(), t, other.as_bytes());
    let third = accepted(app.deliver(Some(&sig), other.to_owned()).await).await;
    assert!(third != first && third != second);
    assert_eq!(app.event_count().await, 3);
}

async fn concurrent_identical_deliveries_store_one_row(backend: Backend) {
    let app = spawn(backend).await;
    let body = r#"{"event_type":"race","n":1}"#;
    let sig = header(SECRET.as_bytes(), now(), body.as_bytes());
    let sends = (0..12).map(|_| app.deliver(Some(&sig), body.to_owned()));
    let responses = futures_util::future::join_all(sends).await;
    let mut ids = Vec::new();
    for res in responses {
        ids.push(accepted(res).await);
    }
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    assert_eq!(app.event_count().await, 1);
}

/// A JSON body of exactly `len` bytes.
fn body_of_len(len: usize) -> String {
    let head = r#"{"event_type":"big","pad":""#;
    let tail = r#""}"#;
    format!("{head}{}{tail}", "x".repeat(len - head.len() - tail.len()))
}

/// Payloads are kept as delivered (up to `MAX_BODY_BYTES` each): a page stops before about
/// 1 MiB, and `next_offset` leads to the rest, one large event at a time if need be.
async fn list_pages_are_bounded_in_bytes(backend: Backend) {
    let app = spawn(backend).await;
    for i in 0..3 {
        accepted(app.deliver_signed(SECRET, &body_of_len(600_000 + i)).await).await;
    }
    accepted(
        app.deliver_signed(SECRET, r#"{"event_type":"small"}"#)
            .await,
    )
    .await;
    let mut offsets = Vec::new();
    let mut next = Some(0);
    while let Some(offset) = next {
        let res = app
            .get(&format!("/webhook/events?limit=100&offset={offset}"))
            .await;
        let bytes = res.bytes().await.unwrap();
        assert!(bytes.len() <= 1_100_000, "a page of {} bytes", bytes.len());
        let page: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(page["total"], 4);
        offsets.push((offset, page["items"].as_array().unwrap().len()));
        next = page["next_offset"].as_i64();
    }
    // The small newest one fits beside the first large one; the others come one per page.
    assert_eq!(offsets, [(0, 2), (2, 1), (3, 1)]);
}

async fn body_at_the_size_limit_is_accepted_and_over_it_is_413(backend: Backend) {
    let app = spawn(backend).await;
    assert_eq!(server::settings::DEFAULT_MAX_BODY_BYTES, MAX_BODY);
    let big = body_of_len(MAX_BODY);
    assert_eq!(big.len(), MAX_BODY);
    let id = accepted(app.deliver_signed(SECRET, &big).await).await;
    let list = json(app.get("/webhook/events").await, StatusCode::OK).await;
    assert_eq!(list["items"][0]["id"], id);
    assert_eq!(list["items"][0]["payload"].as_str().unwrap(), big);

    // One byte over, validly signed: 413 before any verification.
    let over = body_of_len(MAX_BODY + 1);
    let p = problem(
        app.deliver_signed(SECRET, &over).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload-too-large",
    )
    .await;
    assert_eq!(p["max_bytes"], MAX_BODY);

    // The same without a declared length (chunked).
    let sig = header(SECRET.as_bytes(), now(), over.as_bytes());
    let addr = app.address.trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let mut request = format!(
        "POST /webhook HTTP/1.1\r\nHost: {addr}\r\nX-Webhook-Signature: {sig}\r\n\
         Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    .into_bytes();
    for chunk in over.as_bytes().chunks(64 * 1024) {
        request.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        request.extend_from_slice(chunk);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    let _ = stream.write_all(&request).await;
    let mut response = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response)).await;
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with("HTTP/1.1 413"), "got: {text}");
    assert!(text.contains("payload-too-large"));
    assert_eq!(app.event_count().await, 1);
}

async fn previous_secret_is_accepted_during_rotation(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| {
        s.webhook_secret = Some(Secret::new(SECRET));
        s.webhook_secret_previous = Some(Secret::new(PREVIOUS));
    })
    .await
    .unwrap();
    let body = r#"{"event_type":"rotated"}"#;
    accepted(app.deliver_signed(PREVIOUS, body).await).await;
    accepted(
        app.deliver_signed(SECRET, r#"{"event_type":"current"}"#)
            .await,
    )
    .await;
    assert_eq!(
        rejected(app.deliver_signed("someone else", body).await).await,
        "Signature mismatch."
    );
    assert_eq!(app.event_count().await, 2);

    // Rotation finished: the old secret is no longer accepted.
    let app = spawn(backend).await;
    assert_eq!(
        rejected(app.deliver_signed(PREVIOUS, body).await).await,
        "Signature mismatch."
    );
}

async fn unset_secret_refuses_every_delivery(app: TestApp) {
    let body = r#"{"event_type":"x"}"#;
    for secret in [SECRET, "", "anything"] {
        let detail = rejected(app.deliver_signed(secret, body).await).await;
        assert_eq!(detail, "Webhook secret is not configured.");
    }
    let detail = rejected(app.deliver(None, body.to_owned()).await).await;
    assert_eq!(detail, "Webhook secret is not configured.");
    assert_eq!(app.event_count().await, 0);
}

async fn blank_secret_refuses_to_start(backend: Backend) {
    let Some(db) = crate::helpers::TestDb::create(backend) else {
        return;
    };
    for blank in ["", "   ", "\t\n"] {
        let mut settings = test_settings(&db);
        settings.webhook_secret = Some(Secret::new(blank));
        let err = Application::build(settings).await.err().expect("refused");
        let line = format!("{err:#}");
        assert!(line.contains("WEBHOOK_SECRET"), "{line}");
        assert!(!line.contains('\n'), "one line: {line}");
    }
    let mut settings = test_settings(&db);
    settings.webhook_secret = Some(Secret::new(SECRET));
    settings.webhook_secret_previous = Some(Secret::new(" "));
    let err = Application::build(settings).await.err().expect("refused");
    assert!(format!("{err:#}").contains("WEBHOOK_SECRET_PREVIOUS"));
}

async fn list_pages_newest_first(backend: Backend) {
    let app = spawn(backend).await;
    let bodies = [
        r#"{"event_type":"a"}"#,
        "{\n  \"event_type\": \"b\",\n  \"emoji\": \"😀\"\n}\n",
        r#"{"event_type":"c","n":[1,2,3]}"#,
    ];
    let mut ids = Vec::new();
    for body in bodies {
        ids.push(accepted(app.deliver_signed(SECRET, body).await).await);
    }
    let list = json(app.get("/webhook/events").await, StatusCode::OK).await;
    assert_eq!(list["total"], 3);
    assert_eq!(
        (list["limit"].as_i64(), list["offset"].as_i64()),
        (Some(20), Some(0))
    );
    let items = list["items"].as_array().unwrap();
    for (item, (id, body)) in items.iter().zip(ids.iter().zip(bodies).rev()) {
        let obj = item.as_object().unwrap();
        let mut keys: Vec<_> = obj.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["delivered_at", "event_type", "id", "payload"]);
        assert_eq!(item["id"], *id);
        assert_eq!(item["payload"], body, "raw text, byte for byte");
        let event_type: Value = serde_json::from_str(body).unwrap();
        assert_eq!(item["event_type"], event_type["event_type"]);
        let at = item["delivered_at"].as_str().unwrap();
        assert_eq!(at.len(), 20, "{at}");
        assert!(at.ends_with('Z') && &at[10..11] == "T", "{at}");
    }
    let page = json(
        app.get("/webhook/events?limit=1&offset=1").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    assert_eq!(page["items"][0]["id"], ids[1]);
    assert_eq!(
        (page["limit"].as_i64(), page["total"].as_i64()),
        (Some(1), Some(3))
    );
    let past = json(app.get("/webhook/events?offset=10").await, StatusCode::OK).await;
    assert_eq!(past["items"], json!([]));
    for query in [
        "limit=0",
        "limit=101",
        "limit=abc",
        "offset=-1",
        "offset=1.5",
    ] {
        let res = app.get(&format!("/webhook/events?{query}")).await;
        problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    }
}

/// Deliveries are JSON: `application/json` and `+json` types are accepted with parameters; any
/// other type, or none, is 415 before the signature is looked at, and nothing is stored.
async fn only_json_content_types_are_accepted(backend: Backend) {
    let app = spawn(backend).await;
    let deliver = |content_type: Option<&'static str>, i: usize| {
        let body = format!(r#"{{"event_type":"ct","i":{i}}}"#);
        let sig = header(SECRET.as_bytes(), now(), body.as_bytes());
        let mut req = app
            .request(Method::POST, "/webhook")
            .header("x-webhook-signature", sig)
            .body(body);
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        req.send()
    };
    for (i, ct) in [
        "application/json; charset=utf-8",
        "application/cloudevents+json",
    ]
    .into_iter()
    .enumerate()
    {
        accepted(deliver(Some(ct), i).await.unwrap()).await;
    }
    for (i, ct) in [
        Some("text/plain"),
        Some("application/octet-stream"),
        Some("application/x-www-form-urlencoded"),
        None,
    ]
    .into_iter()
    .enumerate()
    {
        let res = deliver(ct, 10 + i).await.unwrap();
        problem(
            res,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
        )
        .await;
    }
    assert_eq!(app.event_count().await, 2);
}

async fn nul_in_event_type_is_422(backend: Backend) {
    let app = spawn(backend).await;
    let res = app
        .deliver_signed(SECRET, r#"{"event_type":"a\u0000b"}"#)
        .await;
    let p = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    assert_eq!(p["errors"][0]["field"], "event_type");
    assert_eq!(p["errors"][0]["code"], "invalid");
    // Elsewhere in the payload an escaped NUL is just text.
    accepted(
        app.deliver_signed(SECRET, r#"{"event_type":"a","x":"\u0000"}"#)
            .await,
    )
    .await;
    assert_eq!(app.event_count().await, 1);
}

async fn several_signature_headers_are_malformed(backend: Backend) {
    let app = spawn(backend).await;
    let body = r#"{"event_type":"dup"}"#;
    let sig = header(SECRET.as_bytes(), now(), body.as_bytes());
    let res = app
        .request(Method::POST, "/webhook")
        .header("content-type", "application/json")
        .header("x-webhook-signature", sig.clone())
        .header("x-webhook-signature", sig)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(rejected(res).await, "Malformed X-Webhook-Signature header.");
}

async fn wrong_method_is_405(app: TestApp) {
    let res = app.get("/webhook").await;
    assert_eq!(res.headers()["allow"], "POST");
    problem(res, StatusCode::METHOD_NOT_ALLOWED, "method-not-allowed").await;
    let res = app
        .request(Method::POST, "/webhook/events")
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["allow"], "GET, HEAD");
}

// ---------------------------------------------------------------------------------------------
// Secrets stay secret: never in a response (body or header), never in a log line.

const CANARY: &str = "whsec-canary-6d1f0b-padded-to-32-bytes";

async fn secret_never_appears_in_responses_or_logs(backend: Backend) {
    let capture = crate::helpers::log_capture();
    let previous = format!("{CANARY}-previous");
    let app = TestApp::spawn_with(backend, |s| {
        s.webhook_secret = Some(Secret::new(CANARY));
        s.webhook_secret_previous = Some(Secret::new(previous.clone()));
    })
    .await
    .unwrap();
    let body = r#"{"event_type":"leak.check"}"#;
    let t = now();
    let mut responses = vec![
        app.deliver_signed(CANARY, body).await,
        app.deliver_signed(&previous, r#"{"event_type":"prev"}"#)
            .await,
        app.deliver_signed(CANARY, "not json").await,
        app.deliver_signed("wrong", body).await,
        app.deliver(Some(&format!("t={t},v1={CANARY}")), body.to_owned())
            .await,
        app.deliver(Some(&format!("t={CANARY},v1=00")), body.to_owned())
            .await,
        app.deliver(Some("t=1,v1=00"), body.to_owned()).await,
        app.deliver(None, body.to_owned()).await,
        app.get("/webhook/events").await,
        app.get("/openapi.json").await,
        app.get("/problems/invalid-signature").await,
    ];
    let mut statuses = Vec::new();
    for res in responses.drain(..) {
        statuses.push(res.status().as_u16());
        for (name, value) in res.headers() {
            let value = String::from_utf8_lossy(value.as_bytes());
            assert!(!value.contains("canary-6d1f0b"), "header {name}: {value}");
        }
        let text = res.text().await.unwrap();
        // The only echo allowed is a header value the caller itself sent, and that is never
        // repeated either.
        assert!(
            !text.contains("canary-6d1f0b"),
            "response body leaks: {text}"
        );
    }
    assert_eq!(&statuses[..4], &[202, 202, 400, 401]);
    // Nor is the expected signature ever told to a caller with a wrong one.
    let expected = webhook_verify::sign(CANARY.as_bytes(), t, b"other");
    let res = app
        .deliver(Some(&format!("t={t},v1=00")), "other".to_owned())
        .await;
    assert!(!res.text().await.unwrap().contains(&expected));

    tokio::time::sleep(Duration::from_millis(100)).await;
    let lines = capture.snapshot();
    assert!(
        lines.iter().any(|l| l.contains("/webhook")),
        "the capturing logger saw no access log line"
    );
    let leaked: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("canary-6d1f0b"))
        .collect();
    assert!(leaked.is_empty(), "secret in log lines: {leaked:?}");
}
