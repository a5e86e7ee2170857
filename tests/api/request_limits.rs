//! No single client can exhaust the server: what one request may cost (media type, encoding,
//! deadline, connections per client), what one response may carry (bytes per page), and who is
//! counted and limited (after authentication, by an address the client cannot forge). The
//! memory side of these runs in `just hostile` (scripts/hostile.sh), which measures the server
//! process from outside.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use http_edge::middleware::client::TrustedProxies;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use server::auth::ApiAuth;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::backend_tests;
use crate::helpers::{Backend, TestApp, json, problem};

backend_tests!(
    compressed_bodies_are_refused_unread,
    bodies_without_a_json_type_are_refused_and_store_nothing,
    a_body_that_stops_arriving_gets_408_and_the_connection_closes,
    connections_beyond_the_per_client_cap_are_refused,
    unauthenticated_v1_calls_are_not_counted,
    rate_limited_v1_calls_are_not_counted,
    an_encoded_v1_path_is_still_v1,
    the_leftmost_forwarded_hop_cannot_dodge_the_limit,
    problem_types_never_take_a_scheme_or_host_from_the_client,
    event_pages_are_bounded_in_bytes_and_lead_to_every_event,
    every_operation_documents_the_body_refusals_it_answers,
);

async fn note_count(app: &TestApp) -> i64 {
    json(app.get("/notes").await, StatusCode::OK).await["total"]
        .as_i64()
        .unwrap()
}

/// Reads one whole response (or until the server closes), with a generous hang catcher.
async fn read_response(stream: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let text = String::from_utf8_lossy(&buf).to_string();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().to_owned())
                })
                .and_then(|v| v.parse::<usize>().ok());
            if length.is_some_and(|n| body.len() >= n) {
                return text;
            }
        }
        match tokio::time::timeout(Duration::from_secs(15), stream.read(&mut chunk)).await {
            Ok(Ok(0)) | Err(_) | Ok(Err(_)) => return text,
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// True once the server has closed the connection (reads end), within the hang catcher.
async fn closed(stream: &mut TcpStream) -> bool {
    let mut rest = Vec::new();
    matches!(
        tokio::time::timeout(Duration::from_secs(15), stream.read_to_end(&mut rest)).await,
        Ok(Ok(_))
    )
}

fn host(app: &TestApp) -> String {
    app.address.trim_start_matches("http://").to_owned()
}

async fn compressed_bodies_are_refused_unread(backend: Backend) {
    let app = TestApp::spawn(backend).await.unwrap();
    for (path, encoding) in [
        ("/notes", "gzip"),
        ("/users", "zstd"),
        ("/webhook", "br"),
        ("/tokens/verify", "deflate"),
        ("/notes", "identity, gzip"),
    ] {
        let res = app
            .request(Method::POST, path)
            .header("content-type", "application/json")
            .header("content-encoding", encoding)
            .body(vec![0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00])
            .send()
            .await
            .unwrap();
        let p = problem(
            res,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
        )
        .await;
        assert!(
            p["detail"].as_str().unwrap().contains("Content-Encoding"),
            "{p}"
        );
    }
    // `identity` is no encoding at all.
    let res = app
        .request(Method::POST, "/notes")
        .header("content-type", "application/json")
        .header("content-encoding", "identity")
        .body(r#"{"title":"plain","body":"b"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    assert_eq!(note_count(&app).await, 1);
}

/// Browsers send form and `text/plain` bodies cross-site without a CORS preflight: without a
/// JSON content type, a body never reaches a handler.
async fn bodies_without_a_json_type_are_refused_and_store_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await.unwrap();
    app.open_account("acc", "A").await;
    let cases = [
        ("/notes", r#"{"title":"csrf"}"#),
        (
            "/accounts/acc/events",
            r#"{"event_type":"MoneyDeposited","payload":{"amount_cents":5}}"#,
        ),
    ];
    for (path, body) in cases {
        for content_type in [
            None,
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
        ] {
            let mut req = app
                .request(Method::POST, path)
                .header("origin", "https://evil.example")
                .body(body);
            if let Some(ct) = content_type {
                req = req.header("content-type", ct);
            }
            let res = req.send().await.unwrap();
            problem(
                res,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported-media-type",
            )
            .await;
        }
    }
    assert_eq!(note_count(&app).await, 0);
    assert_eq!(app.account("acc").await["balance_cents"], 0);
    // A request without a body needs no content type.
    let res = app
        .request(Method::DELETE, "/notes/1")
        .send()
        .await
        .unwrap();
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
}

async fn a_body_that_stops_arriving_gets_408_and_the_connection_closes(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.request_timeout = Duration::from_secs(1))
        .await
        .unwrap();
    let mut stream = TcpStream::connect(host(&app)).await.unwrap();
    let head = format!(
        "POST /notes HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n{{\"title\":",
        host(&app)
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let response = read_response(&mut stream).await;
    assert!(response.starts_with("HTTP/1.1 408"), "{response}");
    assert!(response.contains("request-timeout"), "{response}");
    assert!(
        response.to_ascii_lowercase().contains("connection: close"),
        "{response}"
    );
    assert!(
        closed(&mut stream).await,
        "the server closed the connection"
    );
    assert_eq!(note_count(&app).await, 0);
}

async fn connections_beyond_the_per_client_cap_are_refused(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.max_connections_per_client = 2)
        .await
        .unwrap();
    let request = format!("GET /health HTTP/1.1\r\nHost: {}\r\n\r\n", host(&app));
    let mut open = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(host(&app)).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let response = read_response(&mut stream).await;
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        open.push(stream);
    }
    // The third is shut as it is accepted: no answer, the connection ends.
    let mut third = TcpStream::connect(host(&app)).await.unwrap();
    let _ = third.write_all(request.as_bytes()).await;
    let response = read_response(&mut third).await;
    assert!(
        response.is_empty() || response.starts_with("HTTP/1.1 429"),
        "{response}"
    );
    assert!(closed(&mut third).await);
    // Another client is not affected (the whole of 127.0.0.0/8 is loopback).
    let other = reqwest::Client::builder()
        .local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)))
        .build()
        .unwrap();
    let res = other.get(app.url("/health")).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    // A closed connection frees its slot (the server notices the close asynchronously).
    drop(open.pop());
    let mut freed = false;
    for _ in 0..100 {
        let mut stream = TcpStream::connect(host(&app)).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        if read_response(&mut stream).await.starts_with("HTTP/1.1 200") {
            freed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(freed, "a slot was freed when a connection closed");
}

/// The V1 usage list; `auth` is the credential header to send (operator data: in tokens mode
/// the operator key).
async fn usage(app: &TestApp, auth: Option<(&str, &str)>) -> Vec<(String, i64)> {
    // From another loopback address, so the reading is never limited with the calls it counts.
    let other = reqwest::Client::builder()
        .local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3)))
        .build()
        .unwrap();
    let mut req = other.get(app.url("/metrics/v1-usage?limit=100"));
    if let Some((name, value)) = auth {
        req = req.header(name, value);
    }
    let body = json(req.send().await.unwrap(), StatusCode::OK).await;
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["caller"].as_str().unwrap().to_owned(),
                r["calls"].as_i64().unwrap(),
            )
        })
        .collect()
}

async fn unauthenticated_v1_calls_are_not_counted(backend: Backend) {
    let key = "operator-key-of-the-request-limit-tests-0123";
    let app = TestApp::spawn_with(backend, |s| {
        s.api_auth = ApiAuth::Tokens;
        s.api_keys = vec![server::Secret::new(key)];
    })
    .await
    .unwrap();
    let user = json(
        app.request(Method::POST, "/users")
            .header("x-api-key", key)
            .json(&json!({"name": "ann"}))
            .send()
            .await
            .unwrap(),
        StatusCode::CREATED,
    )
    .await["id"]
        .as_i64()
        .unwrap();
    let token = json(
        app.request(Method::POST, &format!("/users/{user}/tokens"))
            .header("x-api-key", key)
            .json(&json!({"scope": "read"}))
            .send()
            .await
            .unwrap(),
        StatusCode::CREATED,
    )
    .await;
    let bearer = format!("Bearer {}", token["token"].as_str().unwrap());
    for forged in ["mallory", "1", "eve"] {
        let res = app
            .request(Method::GET, "/v1/notes")
            .header("x-user-id", forged)
            .send()
            .await
            .unwrap();
        assert_eq!(
            res.headers()["deprecation"],
            "true",
            "refused V1 answers are still V1"
        );
        problem(res, StatusCode::UNAUTHORIZED, "unauthorized").await;
    }
    let res = app
        .request(Method::GET, "/v1/notes")
        .header("authorization", &bearer)
        .header("x-user-id", "mallory")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let refused = app
        .request(Method::GET, "/metrics/v1-usage")
        .header("authorization", &bearer)
        .send()
        .await
        .unwrap();
    problem(refused, StatusCode::FORBIDDEN, "forbidden").await;
    assert_eq!(
        usage(&app, Some(("x-api-key", key))).await,
        [(format!("user:{user}"), 1)],
        "only the authenticated call counts, under the token's user, not X-User-Id"
    );
}

async fn rate_limited_v1_calls_are_not_counted(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.rate_limit_per_minute = Some(2))
        .await
        .unwrap();
    let mut statuses = Vec::new();
    for _ in 0..5 {
        let res = app
            .request(Method::GET, "/v1/notes")
            .header("x-user-id", "eve")
            .send()
            .await
            .unwrap();
        assert_eq!(res.headers()["deprecation"], "true");
        statuses.push(res.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 429, 429, 429]);
    assert_eq!(usage(&app, None).await, [("user:eve".to_owned(), 2)]);
}

async fn an_encoded_v1_path_is_still_v1(backend: Backend) {
    let app = TestApp::spawn(backend).await.unwrap();
    let plain = app.get("/v1/notes").await;
    for path in ["/%761/notes", "/v%31/notes", "/%76%31/%6Eotes"] {
        let res = app.get(path).await;
        assert_eq!(res.status(), StatusCode::OK, "{path}");
        for header in ["deprecation", "sunset", "link"] {
            assert_eq!(
                res.headers().get(header),
                plain.headers().get(header),
                "{path} {header}"
            );
        }
    }
    assert_eq!(usage(&app, None).await, [("ip:127.0.0.1".to_owned(), 4)]);
}

async fn the_leftmost_forwarded_hop_cannot_dodge_the_limit(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| {
        s.rate_limit_per_minute = Some(3);
        s.trusted_proxies = TrustedProxies(1);
    })
    .await
    .unwrap();
    let send = |forwarded: String| {
        app.request(Method::GET, "/notes")
            .header("x-forwarded-for", forwarded)
            .send()
    };
    let mut allowed = 0;
    for i in 0..10 {
        // The client writes the leftmost entry; our one proxy appended the rightmost.
        let res = send(format!("10.0.{i}.1, 203.0.113.7")).await.unwrap();
        allowed += usize::from(res.status() == StatusCode::OK);
    }
    assert_eq!(
        allowed, 3,
        "rotating the client-written hop changes nothing"
    );
    // Another client, as the proxy saw it, has its own budget.
    let res = send("10.0.0.1, 203.0.113.8".to_owned()).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
}

async fn problem_types_never_take_a_scheme_or_host_from_the_client(backend: Backend) {
    let app = TestApp::spawn(backend).await.unwrap();
    let res = app
        .request(Method::GET, "/nowhere")
        .header("x-forwarded-proto", "javascript")
        .header("x-forwarded-host", "evil.example")
        .header("forwarded", "proto=javascript;host=evil.example")
        .send()
        .await
        .unwrap();
    let p = problem(res, StatusCode::NOT_FOUND, "not-found").await;
    assert_eq!(p["type"], format!("{}/problems/not-found", app.address));
    // A Host that is not a plain host[:port]: a relative type, never the header's text.
    let mut stream = TcpStream::connect(host(&app)).await.unwrap();
    stream
        .write_all(b"GET /nowhere HTTP/1.1\r\nHost: evil.example/x?y=\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let response = read_response(&mut stream).await;
    let body: Value = serde_json::from_str(response.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(body["type"], "/problems/not-found", "{response}");
}

async fn event_pages_are_bounded_in_bytes_and_lead_to_every_event(backend: Backend) {
    let app = TestApp::spawn(backend).await.unwrap();
    app.open_account("big", "B").await;
    let note = "x".repeat(4_000);
    let deposits = 260;
    for _ in 0..deposits {
        let res = app
            .append(
                "big",
                &json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 1, "note": note}}),
            )
            .await;
        assert_eq!(res.status(), StatusCode::CREATED);
    }
    // Extras beyond the documented 4 KiB are refused.
    let res = app
        .append(
            "big",
            &json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 1, "note": "x".repeat(4_097)}}),
        )
        .await;
    let p = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    assert_eq!(p["errors"][0]["field"], "payload");
    assert_eq!(p["errors"][0]["code"], "too_long");
    // Pages stop at about 1 MiB; following next_cursor reaches every event once.
    let mut sequences = Vec::new();
    let mut after = 0;
    loop {
        let res = app
            .get(&format!(
                "/accounts/big/events?limit=1000&after_sequence={after}"
            ))
            .await;
        let bytes = res.bytes().await.unwrap();
        assert!(bytes.len() <= 1_100_000, "a page of {} bytes", bytes.len());
        let page: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(page["total"], deposits + 1);
        sequences.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["sequence"].as_i64().unwrap()),
        );
        if !page["has_more"].as_bool().unwrap() {
            assert!(page["next_cursor"].is_null());
            break;
        }
        after = page["next_cursor"].as_i64().unwrap();
        assert_eq!(Some(&after), sequences.last());
    }
    assert_eq!(sequences, (1..=deposits + 1).collect::<Vec<i64>>());
}

/// The limits layer answers before any route: every operation of the served document must
/// list the 413 and the 415 the server really answers on it, and nothing is stored.
async fn every_operation_documents_the_body_refusals_it_answers(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.max_body_bytes = 1024)
        .await
        .unwrap();
    let doc = json(app.get("/openapi.json").await, StatusCode::OK).await;
    let mut checked = 0;
    for (template, item) in doc["paths"].as_object().unwrap() {
        let path = template
            .split('/')
            .map(|s| if s.starts_with('{') { "1" } else { s })
            .collect::<Vec<_>>()
            .join("/");
        for (method, op) in item.as_object().unwrap() {
            let Ok(m) = Method::from_bytes(method.to_uppercase().as_bytes()) else {
                continue;
            };
            let documented = &op["responses"];
            let compressed = app
                .request(m.clone(), &path)
                .header("content-type", "application/json")
                .header("content-encoding", "gzip")
                .body("{}")
                .send()
                .await
                .unwrap();
            assert_eq!(
                compressed.status(),
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "{m} {path}"
            );
            assert!(
                documented.get("415").is_some(),
                "{m} {template} answers 415 undocumented"
            );
            let oversized = app
                .request(m.clone(), &path)
                .header("content-type", "application/json")
                .body(vec![b' '; 4096])
                .send()
                .await
                .unwrap();
            assert_eq!(
                oversized.status(),
                StatusCode::PAYLOAD_TOO_LARGE,
                "{m} {path}"
            );
            assert!(
                documented.get("413").is_some(),
                "{m} {template} answers 413 undocumented"
            );
            checked += 1;
        }
    }
    assert!(checked > 40, "{checked} operations checked");
    assert_eq!(note_count(&app).await, 0);
}
