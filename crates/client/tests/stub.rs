//! The client against a local stub that answers crafted raw HTTP responses: every malformed
//! answer must become a `ClientError` (never a panic, never a value), and retries must follow
//! the policy.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use client::{
    Client, ClientError, DegradedPolicy, ETag, Health, IdempotencyKey, IssueToken, NoteInput,
    PageRequest, ProblemKind, RawToken, RetryPolicy, Slug, TagInput, TryStreamExt,
};

/// A server on a random port answering the `i`-th request with `responses[i]` (the last one
/// repeats), one connection per request.
struct Stub {
    base: String,
    hits: Arc<AtomicUsize>,
    /// The head (request line and headers) of every request, in order.
    heads: Arc<Mutex<Vec<String>>>,
}

impl Stub {
    /// The value of header `name` in each request received so far.
    fn header_values(&self, name: &str) -> Vec<Option<String>> {
        let prefix = format!("{}:", name.to_ascii_lowercase());
        self.heads
            .lock()
            .unwrap()
            .iter()
            .map(|head| {
                head.lines().find_map(|line| {
                    let lower = line.to_ascii_lowercase();
                    lower
                        .starts_with(&prefix)
                        .then(|| line[prefix.len()..].trim().to_owned())
                })
            })
            .collect()
    }
}

fn stub(responses: Vec<Vec<u8>>) -> Stub {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let heads = Arc::new(Mutex::new(Vec::new()));
    let (counter, seen) = (hits.clone(), heads.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            seen.lock().unwrap().push(head);
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let i = counter.fetch_add(1, Ordering::SeqCst);
            let response = &responses[i.min(responses.len() - 1)];
            let _ = stream.write_all(response);
            let _ = stream.flush();
        }
    });
    Stub { base, hits, heads }
}

fn raw(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-length"))
    {
        out.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

fn json(status: &str, body: &str) -> Vec<u8> {
    raw(
        status,
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    )
}

fn problem(status: &str, body: &str) -> Vec<u8> {
    raw(
        status,
        &[("Content-Type", "application/problem+json")],
        body.as_bytes(),
    )
}

fn fast(stub: &Stub) -> Client {
    Client::builder(&stub.base)
        .retry(RetryPolicy {
            max_attempts: 3,
            base_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(200),
        })
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap()
}

enum Call {
    GetNote,
    ListNotes,
    DeleteNote,
    Health,
    Ping,
    Machine,
    Protected,
}

async fn run(call: &Call, api: &Client) -> Result<String, ClientError> {
    Ok(match call {
        Call::GetNote => format!("{:?}", api.notes().get(1).await?),
        Call::ListNotes => format!("{:?}", api.notes().list(PageRequest::default()).await?),
        Call::DeleteNote => format!("{:?}", api.notes().delete(1).await?),
        Call::Health => format!("{:?}", api.health(DegradedPolicy::Accept).await?),
        Call::Ping => format!("{:?}", api.ping().await?),
        Call::Machine => format!("{:?}", api.machine_health().await?),
        Call::Protected => format!("{:?}", api.protected().await?),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_responses_are_invalid_response_errors() {
    let note = r#"{"id":1,"title":"t","body":"b"}"#;
    let deep = "[".repeat(100_000);
    let cases: Vec<(&str, Call, Vec<u8>)> = vec![
        (
            "html page",
            Call::GetNote,
            raw(
                "200 OK",
                &[("Content-Type", "text/html")],
                b"<html><body>hi</body></html>",
            ),
        ),
        (
            "html labelled json",
            Call::GetNote,
            json("200 OK", "<!doctype html><html></html>"),
        ),
        (
            "plain text",
            Call::GetNote,
            raw("200 OK", &[("Content-Type", "text/plain")], b"hello"),
        ),
        (
            "text without content type",
            Call::GetNote,
            raw("200 OK", &[], b"hello"),
        ),
        ("empty body", Call::GetNote, json("200 OK", "")),
        (
            "truncated json",
            Call::GetNote,
            json("200 OK", r#"{"id":1,"title":"t""#),
        ),
        (
            "id is a string",
            Call::GetNote,
            json("200 OK", r#"{"id":"1","title":"t","body":"b"}"#),
        ),
        (
            "missing field",
            Call::GetNote,
            json("200 OK", r#"{"id":1,"title":"t"}"#),
        ),
        (
            "extra nesting",
            Call::GetNote,
            json("200 OK", &format!(r#"{{"data":{note}}}"#)),
        ),
        ("null", Call::GetNote, json("200 OK", "null")),
        (
            "array instead of object",
            Call::GetNote,
            json("200 OK", &format!("[{note}]")),
        ),
        (
            "trailing garbage",
            Call::GetNote,
            json("200 OK", &format!("{note} trailing")),
        ),
        (
            "invalid utf-8",
            Call::GetNote,
            raw(
                "200 OK",
                &[("Content-Type", "application/json")],
                b"{\"id\":1,\"title\":\"\xff\xfe\",\"body\":\"b\"}",
            ),
        ),
        (
            "id overflows i64",
            Call::GetNote,
            json(
                "200 OK",
                r#"{"id":99999999999999999999,"title":"t","body":"b"}"#,
            ),
        ),
        (
            "fractional id",
            Call::GetNote,
            json("200 OK", r#"{"id":1.5,"title":"t","body":"b"}"#),
        ),
        (
            "unexpected success status",
            Call::GetNote,
            json("201 Created", note),
        ),
        (
            "body shorter than content-length",
            Call::GetNote,
            raw(
                "200 OK",
                &[
                    ("Content-Type", "application/json"),
                    ("Content-Length", "500"),
                ],
                note.as_bytes(),
            ),
        ),
        ("deeply nested", Call::GetNote, json("200 OK", &deep)),
        (
            "page limit 0",
            Call::ListNotes,
            json("200 OK", r#"{"items":[],"limit":0,"offset":0,"total":0}"#),
        ),
        (
            "page over-full",
            Call::ListNotes,
            json(
                "200 OK",
                &format!(r#"{{"items":[{note},{note}],"limit":1,"offset":0,"total":2}}"#),
            ),
        ),
        (
            "page item of wrong type",
            Call::ListNotes,
            json(
                "200 OK",
                r#"{"items":[{"id":1,"title":5,"body":"b"}],"limit":20,"offset":0,"total":1}"#,
            ),
        ),
        (
            "page negative total",
            Call::ListNotes,
            json("200 OK", r#"{"items":[],"limit":20,"offset":0,"total":-1}"#),
        ),
        (
            "delete answers 200 with a body",
            Call::DeleteNote,
            json("200 OK", "{}"),
        ),
        (
            "problem without title",
            Call::GetNote,
            problem(
                "404 Not Found",
                r#"{"type":"/problems/not-found","status":404,"detail":"x"}"#,
            ),
        ),
        (
            "problem status mismatch",
            Call::GetNote,
            problem(
                "404 Not Found",
                r#"{"type":"/problems/not-found","title":"t","status":500,"detail":"x"}"#,
            ),
        ),
        (
            "problem errors of wrong type",
            Call::GetNote,
            problem(
                "422 Unprocessable Entity",
                r#"{"type":"/problems/validation-failed","title":"t","status":422,"detail":"x","errors":[{"field":1}]}"#,
            ),
        ),
        (
            "truncated problem",
            Call::GetNote,
            problem("404 Not Found", r#"{"type":"/problems/not-fo"#),
        ),
        (
            "health status unknown",
            Call::Health,
            json(
                "200 OK",
                r#"{"status":"sideways","db":"ok","service":"s","checks":{"database":"ok"}}"#,
            ),
        ),
        (
            "health ok on a 503",
            Call::Health,
            json(
                "503 Service Unavailable",
                r#"{"status":"ok","db":"ok","service":"s","checks":{"database":"ok"}}"#,
            ),
        ),
        (
            "health checks not an object",
            Call::Health,
            json(
                "200 OK",
                r#"{"status":"ok","db":"ok","service":"s","checks":"ok"}"#,
            ),
        ),
        (
            "ping says ping",
            Call::Ping,
            json("200 OK", r#"{"message":"ping","status":"ok"}"#),
        ),
        (
            "ping status not ok",
            Call::Ping,
            json("200 OK", r#"{"message":"pong","status":"OK"}"#),
        ),
        (
            "unknown credential type",
            Call::Machine,
            json(
                "200 OK",
                r#"{"status":"ok","service":"s","credential_type":"password"}"#,
            ),
        ),
        (
            "claims not an object",
            Call::Protected,
            json("200 OK", r#"{"message":"m","claims":[1,2]}"#),
        ),
    ];
    assert!(cases.len() >= 20);
    for (label, call, response) in cases {
        let stub = stub(vec![response]);
        let result = run(&call, &fast(&stub)).await;
        match result {
            Err(ClientError::InvalidResponse { operation, reason }) => {
                assert!(!operation.is_empty() && !reason.is_empty(), "{label}");
            }
            other => panic!("{label}: expected InvalidResponse, got {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_statuses_without_problem_bodies() {
    let cases = [
        raw(
            "502 Bad Gateway",
            &[("Content-Type", "text/html")],
            b"<h1>bad gateway</h1>",
        ),
        raw("404 Not Found", &[], b""),
        raw("301 Moved Permanently", &[("Location", "/elsewhere")], b""),
    ];
    for response in cases {
        let stub = stub(vec![response]);
        let err = Client::builder(&stub.base)
            .retry(RetryPolicy::none())
            .build()
            .unwrap()
            .notes()
            .get(1)
            .await
            .unwrap_err();
        assert!(
            matches!(err, ClientError::UnexpectedStatus { .. }),
            "{err:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_http_at_all_is_a_transport_error() {
    let stub = stub(vec![b"hello, this is not HTTP\r\n\r\n".to_vec()]);
    let err = fast(&stub).notes().get(1).await.unwrap_err();
    assert!(matches!(err, ClientError::Transport { .. }), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn problems_are_typed_with_unknown_slugs_kept() {
    let stub = stub(vec![raw(
        "418 I'm a teapot",
        &[
            ("Content-Type", "application/problem+json"),
            ("X-Request-Id", "req-1"),
        ],
        br#"{"type":"https://x/problems/teapot","title":"Teapot","status":418,"detail":"short and stout","hint":7}"#,
    )]);
    let err = fast(&stub).notes().get(1).await.unwrap_err();
    let p = err.problem().unwrap();
    assert_eq!(p.kind, ProblemKind::Other("teapot".to_owned()));
    assert_eq!(p.extensions["hint"], 7);
    assert_eq!(p.request_id.as_deref(), Some("req-1"));
    assert_eq!(p.operation, "get_note");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_calls_are_retried_on_503_and_429() {
    let note = r#"{"id":1,"title":"t","body":"b"}"#;
    let stub = stub(vec![
        problem(
            "503 Service Unavailable",
            r#"{"type":"/problems/service-unavailable","title":"t","status":503,"detail":"d"}"#,
        ),
        raw(
            "429 Too Many Requests",
            &[
                ("Content-Type", "application/problem+json"),
                ("Retry-After", "0"),
            ],
            br#"{"type":"/problems/too-many-requests","title":"t","status":429,"detail":"d"}"#,
        ),
        json("200 OK", note),
    ]);
    let got = fast(&stub).notes().get(1).await.unwrap();
    assert_eq!(got.id, 1);
    assert_eq!(stub.hits.load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_are_bounded() {
    let stub = stub(vec![problem(
        "500 Internal Server Error",
        r#"{"type":"/problems/internal-server-error","title":"t","status":500,"detail":"d"}"#,
    )]);
    let err = fast(&stub).notes().delete(1).await.unwrap_err();
    assert!(err.is(Slug::InternalServerError));
    assert_eq!(stub.hits.load(Ordering::SeqCst), 3);
}

const UNAVAILABLE: &str =
    r#"{"type":"/problems/service-unavailable","title":"t","status":503,"detail":"d"}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_is_retried_under_one_idempotency_key() {
    let stub = stub(vec![
        problem("503 Service Unavailable", UNAVAILABLE),
        problem(
            "409 Conflict",
            r#"{"type":"/problems/request-in-progress","title":"t","status":409,"detail":"d"}"#,
        ),
        json("201 Created", r#"{"id":1,"title":"t","body":"b"}"#),
    ]);
    let api = fast(&stub);
    let note = api.notes().create(&NoteInput::new("t", "b")).await.unwrap();
    assert_eq!(note.id, 1);
    assert_eq!(stub.hits.load(Ordering::SeqCst), 3);
    let keys = stub.header_values("Idempotency-Key");
    let first = keys[0].clone().expect("a create carries a key");
    assert_eq!(first.len(), 32);
    assert!(first.bytes().all(|b| b.is_ascii_hexdigit()), "{first}");
    assert_eq!(
        keys,
        vec![Some(first.clone()); 3],
        "one key for every attempt"
    );

    // Another call is another request: a fresh key.
    api.tags().create(&TagInput::new("x")).await.unwrap_err();
    let keys = stub.header_values("Idempotency-Key");
    assert_ne!(keys[3].as_deref(), Some(first.as_str()));

    // The caller's own key is sent as given.
    let key = IdempotencyKey::new("caller-key-1").unwrap();
    let made = api
        .notes()
        .create_with_key(&NoteInput::new("t", "b"), &key)
        .await
        .unwrap();
    assert_eq!((made.key, made.replayed, made.value.id), (key, false, 1));
    assert_eq!(
        stub.header_values("idempotency-key")
            .last()
            .unwrap()
            .as_deref(),
        Some("caller-key-1")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_issue_and_rotate_are_never_retried() {
    let stub = stub(vec![problem("503 Service Unavailable", UNAVAILABLE)]);
    let api = fast(&stub);
    let tokens = api.users().tokens(7);
    let err = tokens.issue(&IssueToken::default()).await.unwrap_err();
    assert_eq!(err.status(), Some(503));
    assert_eq!(stub.hits.load(Ordering::SeqCst), 1);
    let err = tokens.rotate(3).await.unwrap_err();
    assert_eq!(err.status(), Some(503));
    assert_eq!(stub.hits.load(Ordering::SeqCst), 2);
    assert_eq!(
        stub.header_values("idempotency-key"),
        vec![None, None],
        "the service cannot replay an issue: no key is sent"
    );
    assert_eq!(
        stub.header_values("x-user-id"),
        vec![Some("7".to_owned()); 2]
    );
    // Verifying only reads: retried like a GET.
    api.users()
        .verify_token(&RawToken::new("abc"))
        .await
        .unwrap_err();
    assert_eq!(stub.hits.load(Ordering::SeqCst), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_delivery_is_retried_with_one_signature() {
    let stub = stub(vec![
        problem("503 Service Unavailable", UNAVAILABLE),
        json("202 Accepted", r#"{"id":5,"status":"accepted"}"#),
    ]);
    let body = br#"{"event_type":"x"}"#;
    let receipt = fast(&stub).webhooks().deliver(b"s", body).await.unwrap();
    assert_eq!(receipt.id, 5);
    let signatures = stub.header_values("x-webhook-signature");
    assert_eq!(signatures.len(), 2);
    assert_eq!(
        signatures[0], signatures[1],
        "the service dedupes exact replays"
    );
    let signature = signatures[0].clone().unwrap();
    let t: i64 = signature.split(',').next().unwrap()[2..].parse().unwrap();
    assert_eq!(signature, webhook_verify::header(b"s", t, body));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_refusals_are_typed_and_other_bodies_invalid() {
    let revoked = stub(vec![json(
        "409 Conflict",
        r#"{"error":"token already revoked"}"#,
    )]);
    let err = fast(&revoked)
        .users()
        .tokens(1)
        .revoke(2)
        .await
        .unwrap_err();
    match err {
        ClientError::Refused {
            status,
            error,
            operation,
            ..
        } => {
            assert_eq!(
                (status, error.as_str(), operation),
                (409, "token already revoked", "revoke_token")
            );
        }
        other => panic!("{other:?}"),
    }
    // Only the token routes answer that way: elsewhere it is not a problem document.
    let err = fast(&revoked).notes().delete(2).await.unwrap_err();
    assert!(
        matches!(err, ClientError::InvalidResponse { .. }),
        "{err:?}"
    );
    let other = stub(vec![json("404 Not Found", r#"{"message":"nope"}"#)]);
    let err = fast(&other)
        .users()
        .tokens(1)
        .list(PageRequest::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, ClientError::InvalidResponse { .. }),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditional_reads_and_their_tags() {
    let note = r#"{"id":1,"title":"t","body":"b"}"#;
    let stub = stub(vec![
        raw("304 Not Modified", &[("ETag", "\"abc\"")], b""),
        raw(
            "200 OK",
            &[("Content-Type", "application/json"), ("ETag", "\"def\"")],
            note.as_bytes(),
        ),
        json("200 OK", note),
        raw(
            "200 OK",
            &[("Content-Type", "application/json"), ("ETag", "not-quoted")],
            note.as_bytes(),
        ),
    ]);
    let api = fast(&stub);
    let etag = ETag::parse("\"abc\"").unwrap();
    assert_eq!(api.notes().get_if_none_match(1, &etag).await.unwrap(), None);
    let fresh = api
        .notes()
        .get_if_none_match(1, &etag)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(fresh.etag.as_str(), "\"def\"");
    assert_eq!(
        stub.header_values("if-none-match")[..2],
        [Some("\"abc\"".to_owned()), Some("\"abc\"".to_owned())]
    );
    for _ in 0..2 {
        let err = api.notes().get_tagged(1).await.unwrap_err();
        assert!(
            matches!(err, ClientError::InvalidResponse { .. }),
            "{err:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_ends_at_the_first_bad_page() {
    let article = |id: i64| {
        format!(r#"{{"id":{id},"title":"t","author":"a","created_at":"2026-01-01T00:00:00Z"}}"#)
    };
    let stub = stub(vec![
        json(
            "200 OK",
            &format!(
                r#"{{"items":[{}],"limit":1,"has_more":true,"next_cursor":9}}"#,
                article(9)
            ),
        ),
        // The cursor is not the last item's id: the page contradicts itself.
        json(
            "200 OK",
            &format!(
                r#"{{"items":[{}],"limit":1,"has_more":true,"next_cursor":3}}"#,
                article(8)
            ),
        ),
    ]);
    let mut stream = std::pin::pin!(fast(&stub).articles().cursor_stream(1));
    assert_eq!(stream.try_next().await.unwrap().unwrap().id, 9);
    let err = stream.try_next().await.unwrap_err();
    assert!(
        matches!(err, ClientError::InvalidResponse { .. }),
        "{err:?}"
    );
    assert!(stream.try_next().await.unwrap().is_none());
    assert_eq!(
        stub.heads.lock().unwrap()[1].lines().next().unwrap(),
        "GET /articles/cursor?limit=1&after=9 HTTP/1.1"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_retry_after_is_not_waited_for() {
    let stub = stub(vec![raw(
        "429 Too Many Requests",
        &[
            ("Content-Type", "application/problem+json"),
            ("Retry-After", "3600"),
        ],
        br#"{"type":"/problems/too-many-requests","title":"t","status":429,"detail":"d"}"#,
    )]);
    let started = Instant::now();
    let err = fast(&stub).notes().get(1).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(
        err.problem().unwrap().retry_after,
        Some(Duration::from_secs(3600))
    );
    assert_eq!(stub.hits.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_refused_is_retried_then_a_transport_error() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let api = Client::builder(format!("http://127.0.0.1:{port}"))
        .retry(RetryPolicy {
            max_attempts: 2,
            base_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(5),
        })
        .build()
        .unwrap();
    let err = api.ping().await.unwrap_err();
    assert!(matches!(err, ClientError::Transport { .. }), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_server_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let _held: Vec<_> = listener.incoming().collect();
    });
    let api = Client::builder(base)
        .timeout(Duration::from_millis(200))
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let err = api.ping().await.unwrap_err();
    match err {
        ClientError::Transport { source, .. } => assert!(source.is_timeout()),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn degraded_health_only_when_accepted() {
    let body =
        r#"{"status":"degraded","db":"error","service":"svc","checks":{"database":"error"}}"#;
    let stub = stub(vec![json("503 Service Unavailable", body)]);
    let api = fast(&stub);
    match api.health(DegradedPolicy::Accept).await.unwrap() {
        Health::Degraded(report) => assert_eq!(report.service, "svc"),
        other => panic!("{other:?}"),
    }
    let err = api.health(DegradedPolicy::Reject).await.unwrap_err();
    assert!(matches!(err, ClientError::Degraded(_)), "{err:?}");
    // A 503 from /health is an answer: not retried.
    assert_eq!(stub.hits.load(Ordering::SeqCst), 2);
    let strict = Client::builder(&stub.base)
        .expect_service("other")
        .build()
        .unwrap();
    let err = strict.health(DegradedPolicy::Accept).await.unwrap_err();
    assert!(
        matches!(err, ClientError::ServiceMismatch { .. }),
        "{err:?}"
    );
}
