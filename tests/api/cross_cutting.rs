use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::{Backend, TestApp, json, problem};
use crate::{api_tests, backend_tests};

api_tests!(
    unknown_routes_are_404_problems,
    wrong_method_is_405_with_allow,
    request_ids_are_echoed_or_generated,
    security_headers_on_every_response,
    problem_types_resolve,
    root_describes_the_service,
    docs_are_served_offline,
    head_is_answered_wherever_get_is,
);

backend_tests!(
    oversized_bodies_are_413,
    chunked_oversized_bodies_are_413,
    chunked_framing_counts_against_the_body_cap,
    pipelined_answers_wait_for_a_reading_peer,
    rate_limit_answers_429_with_headers,
    configured_problem_base_url_is_used,
);

async fn unknown_routes_are_404_problems(app: TestApp) {
    for path in [
        "/nope",
        "/v3/notes",
        "/notes/1/extra/deep",
        "/NOTES",
        "/../etc/passwd",
    ] {
        let p = problem(app.get(path).await, StatusCode::NOT_FOUND, "not-found").await;
        assert!(
            p["detail"]
                .as_str()
                .unwrap()
                .starts_with("No resource exists at")
        );
    }
    problem(
        app.post_json("/nope", &json!({})).await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
}

async fn wrong_method_is_405_with_allow(app: TestApp) {
    for (method, path, allow) in [
        (Method::PATCH, "/notes/1", "GET, HEAD, PUT, DELETE"),
        (Method::DELETE, "/notes", "GET, HEAD, POST"),
        (Method::PUT, "/tags", "GET, HEAD, POST"),
        (Method::POST, "/health", "GET, HEAD"),
        (
            Method::PATCH,
            "/notes/1/comments/2",
            "GET, HEAD, PUT, DELETE",
        ),
        (Method::GET, "/webhook", "POST"),
    ] {
        let res = app.request(method.clone(), path).send().await.unwrap();
        let mut got: Vec<String> = res.headers()["allow"]
            .to_str()
            .unwrap()
            .split(", ")
            .map(str::to_owned)
            .collect();
        got.sort();
        let mut want: Vec<&str> = allow.split(", ").collect();
        want.sort();
        assert_eq!(got, want, "{method} {path}");
        problem(res, StatusCode::METHOD_NOT_ALLOWED, "method-not-allowed").await;
    }
}

async fn request_ids_are_echoed_or_generated(app: TestApp) {
    let res = app
        .request(Method::GET, "/notes")
        .header("x-request-id", "abc-123_X.y")
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-request-id"], "abc-123_X.y");
    for bad in ["has space", &"a".repeat(129), "semi;colon"] {
        let res = app
            .request(Method::GET, "/notes/999")
            .header("x-request-id", bad)
            .send()
            .await
            .unwrap();
        let id = res.headers()["x-request-id"].to_str().unwrap().to_owned();
        assert_ne!(id, bad);
        assert!(uuid::Uuid::parse_str(&id).is_ok());
    }
    let a = app.get("/nope").await.headers()["x-request-id"].clone();
    let b = app.get("/nope").await.headers()["x-request-id"].clone();
    assert_ne!(a, b);
}

async fn security_headers_on_every_response(app: TestApp) {
    for res in [
        app.get("/notes").await,
        app.get("/nope").await,
        app.get("/health").await,
    ] {
        let h = res.headers();
        assert_eq!(h["x-content-type-options"], "nosniff");
        assert_eq!(h["x-frame-options"], "DENY");
        assert_eq!(h["referrer-policy"], "no-referrer");
        assert_eq!(h["cache-control"], "no-store");
    }
    let asset = app.get("/docs/swagger-ui.css").await;
    assert_eq!(asset.status(), StatusCode::OK);
    assert_eq!(asset.headers()["x-content-type-options"], "nosniff");
    assert_ne!(
        asset
            .headers()
            .get("cache-control")
            .map(|v| v.to_str().unwrap()),
        Some("no-store")
    );
}

async fn problem_types_resolve(app: TestApp) {
    let p = problem(
        app.get("/notes/999").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    let ty = p["type"].as_str().unwrap();
    assert_eq!(ty, format!("{}/problems/not-found", app.address));
    let doc = json(app.get("/problems/not-found").await, StatusCode::OK).await;
    assert_eq!(doc["status"], 404);
    assert_eq!(doc["slug"], "not-found");
    for slug in [
        "bad-request",
        "invalid-body",
        "unauthorized",
        "invalid-signature",
        "forbidden",
        "method-not-allowed",
        "conflict",
        "payload-too-large",
        "unsupported-media-type",
        "validation-failed",
        "insufficient-funds",
        "account-closed",
        "too-many-requests",
        "internal-server-error",
    ] {
        let doc = json(app.get(&format!("/problems/{slug}")).await, StatusCode::OK).await;
        assert!(doc["description"].as_str().unwrap().len() > 10);
    }
    let html = app
        .request(Method::GET, "/problems/conflict")
        .header("accept", "text/html")
        .send()
        .await
        .unwrap();
    assert!(
        html.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(html.text().await.unwrap().contains("Conflict."));
    problem(
        app.get("/problems/teapot").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
}

async fn root_describes_the_service(app: TestApp) {
    let info = json(app.get("/").await, StatusCode::OK).await;
    assert_eq!(info["name"], "notes-service");
    assert_eq!(info["status"], "ok");
    assert!(info["version"].is_string());
    assert!(info["description"].is_string());
}

async fn docs_are_served_offline(app: TestApp) {
    let res = app.get("/docs").await;
    assert!(res.status().is_redirection());
    let page = app.get("/docs/").await;
    assert_eq!(page.status(), StatusCode::OK);
    let html = page.text().await.unwrap();
    assert!(html.contains("swagger-ui"));
    assert!(html.contains("/openapi.json"));
    assert!(
        !html.contains("https://"),
        "no asset is loaded from the internet"
    );
    let js = app.get("/docs/swagger-ui-bundle.js").await;
    assert_eq!(js.status(), StatusCode::OK);
}

async fn oversized_bodies_are_413(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.max_body_bytes = 1024)
        .await
        .unwrap();
    let big = json!({"title": "t", "body": "x".repeat(2000)});
    let p = problem(
        app.post_json("/notes", &big).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload-too-large",
    )
    .await;
    assert_eq!(p["max_bytes"], 1024);
    // Also on routes that do not read a body, and for any method.
    let res = app
        .request(Method::GET, "/notes")
        .body(vec![b'x'; 4096])
        .send()
        .await
        .unwrap();
    problem(res, StatusCode::PAYLOAD_TOO_LARGE, "payload-too-large").await;
    // Just under the cap is fine.
    let ok = json!({"title": "t", "body": "x".repeat(900)});
    assert_eq!(
        app.post_json("/notes", &ok).await.status(),
        StatusCode::CREATED
    );
    let list = json(app.get("/notes").await, StatusCode::OK).await;
    assert_eq!(list["total"], 1, "the refused body stored nothing");
}

async fn chunked_oversized_bodies_are_413(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.max_body_bytes = 1024)
        .await
        .unwrap();
    let addr = app.address.trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let mut request = format!(
        "POST /notes HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    .into_bytes();
    let payload = format!("{{\"title\":\"t\",\"body\":\"{}\"}}", "y".repeat(4000));
    for chunk in payload.as_bytes().chunks(500) {
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
    let list = json(app.get("/notes").await, StatusCode::OK).await;
    assert_eq!(list["total"], 0);
}

async fn rate_limit_answers_429_with_headers(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.rate_limit_per_minute = Some(3))
        .await
        .unwrap();
    for remaining in ["2", "1", "0"] {
        let res = app.get("/notes").await;
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.headers()["ratelimit-limit"], "3");
        assert_eq!(res.headers()["ratelimit-remaining"], remaining);
    }
    let res = app.get("/notes").await;
    let retry: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry));
    assert_eq!(res.headers()["ratelimit-remaining"], "0");
    assert!(res.headers().contains_key("ratelimit-reset"));
    problem(res, StatusCode::TOO_MANY_REQUESTS, "too-many-requests").await;
    // Writes are refused too, and nothing is stored.
    let res = app
        .post_json("/notes", &json!({"title": "t", "body": "b"}))
        .await;
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    // /health is never limited.
    for _ in 0..5 {
        assert_eq!(app.get("/health").await.status(), StatusCode::OK);
    }
}

async fn configured_problem_base_url_is_used(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| {
        s.problem_base_url = Some("https://errors.example.com/p".to_owned());
    })
    .await
    .unwrap();
    let p = problem(
        app.get("/notes/5").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    assert_eq!(p["type"], "https://errors.example.com/p/not-found");
}

backend_tests!(cors_allows_only_configured_origins);

async fn cors_allows_only_configured_origins(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| {
        s.cors_origins = vec!["https://app.example".to_owned()]
    })
    .await
    .unwrap();
    let res = app
        .request(Method::OPTIONS, "/notes")
        .header("origin", "https://app.example")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success());
    assert_eq!(
        res.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    let res = app
        .request(Method::GET, "/notes")
        .header("origin", "https://app.example")
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    let exposed = res.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_lowercase();
    assert!(exposed.contains("x-request-id"));
    let res = app
        .request(Method::GET, "/notes")
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert!(res.headers().get("access-control-allow-origin").is_none());
}

api_tests!(storage_failures_are_500_problems_without_internals);

/// A table vanishing under the service (an operator's mistake) is a 500 whose body says nothing
/// of the cause; the log line has it.
async fn storage_failures_are_500_problems_without_internals(app: TestApp) {
    let note = app.create_note("n", "b").await["id"].as_i64().unwrap();
    let url = app.db.url.clone();
    tokio::task::spawn_blocking(move || {
        use storage::diesel::RunQueryDsl;
        let mut conn = storage::Database::parse(&url).unwrap().establish().unwrap();
        storage::diesel::sql_query("DROP TABLE comments")
            .execute(&mut conn)
            .unwrap();
    })
    .await
    .unwrap();
    let res = app.get(&format!("/notes/{note}/comments")).await;
    let body = problem(
        res,
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal-server-error",
    )
    .await;
    assert_eq!(body["detail"], "The server failed to process the request.");
    let text = body.to_string().to_lowercase();
    for internal in ["comments", "table", "sql", "diesel", "relation", "/"] {
        if internal == "/" {
            // Only the type URI may contain a slash.
            assert!(!body["detail"].as_str().unwrap().contains('/'));
        } else {
            assert!(!text.contains(internal), "{internal} leaked: {text}");
        }
    }
    // The rest of the service keeps working.
    assert_eq!(
        app.get(&format!("/notes/{note}")).await.status(),
        StatusCode::OK
    );
}

/// RFC 9110 §9.3.2: every GET route answers HEAD with the GET's status and headers and no
/// body: each GET operation of the document (on resources that exist, and on ones that do
/// not), the document itself and the docs page.
async fn head_is_answered_wherever_get_is(app: TestApp) {
    let note = app.create_note("n", "b").await;
    assert_eq!(note["id"], 1);
    for (path, body) in [
        ("/notes/1/comments", json!({"body": "c"})),
        ("/tags", json!({"name": "t"})),
        ("/v1/notes", json!({"title": "t"})),
        ("/accounts", json!({"account_id": "1", "owner": "o"})),
        ("/users", json!({"name": "u"})),
    ] {
        assert_eq!(
            app.post_json(path, &body).await.status(),
            StatusCode::CREATED
        );
    }
    let doc = json(app.get("/openapi.json").await, StatusCode::OK).await;
    let mut paths: Vec<String> = vec!["/openapi.json".into(), "/docs/".into(), "/docs".into()];
    for (path, item) in doc["paths"].as_object().unwrap() {
        if item.get("get").is_some() {
            let concrete = path
                .replace("{slug}", "not-found")
                .split('/')
                .map(|s| if s.starts_with('{') { "1" } else { s })
                .collect::<Vec<_>>()
                .join("/");
            paths.push(concrete.clone());
            paths.push(concrete.replace("/1", "/987654"));
        }
    }
    assert!(paths.len() > 40, "{paths:?}");
    for path in paths {
        let send = |method: Method| {
            app.request(method, &path)
                .header("X-User-Id", "1")
                .header("X-Request-Id", "head-check")
                .send()
        };
        let get = send(Method::GET).await.unwrap();
        let head = send(Method::HEAD).await.unwrap();
        assert_eq!(head.status(), get.status(), "{path}");
        assert_ne!(head.status(), StatusCode::METHOD_NOT_ALLOWED, "{path}");
        // The metrics change with every request, their length with them.
        let changing = path == "/metrics";
        let headers = |res: &reqwest::Response| {
            let mut h: Vec<(String, String)> = res
                .headers()
                .iter()
                // Each request is its own span of a trace of its own.
                .filter(|(name, _)| *name != "date" && *name != "traceresponse")
                .filter(|(name, _)| !(changing && *name == "content-length"))
                .map(|(n, v)| (n.to_string(), v.to_str().unwrap_or("").to_owned()))
                .collect();
            h.sort();
            h
        };
        assert_eq!(headers(&head), headers(&get), "{path}");
        assert!(
            head.bytes().await.unwrap().is_empty(),
            "{path}: HEAD has no body"
        );
    }
}

/// Chunk extensions, size padding and trailers carry no body bytes but cost reading: a body
/// whose framing takes the connection well past `MAX_BODY_BYTES` (a megabyte here, against a
/// 4 KiB cap; what was buffered with the head, at most 128 KiB, is not charged) is 413 and
/// nothing is stored, while the same small body in plain chunks is created.
async fn chunked_framing_counts_against_the_body_cap(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.max_body_bytes = 4096)
        .await
        .unwrap();
    let addr = app.address.trim_start_matches("http://").to_owned();
    let body = br#"{"title":"t","body":"b"}"#;
    let head = format!(
        "POST /notes HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    let framed = |size_line: String, trailer: &str| {
        let mut request = head.clone().into_bytes();
        request.extend_from_slice(size_line.as_bytes());
        request.extend_from_slice(body);
        request.extend_from_slice(b"\r\n0\r\n");
        request.extend_from_slice(trailer.as_bytes());
        request.extend_from_slice(b"\r\n");
        request
    };
    let plain = framed(format!("{:x}\r\n", body.len()), "");
    let attacks = [
        // A megabyte of chunk extension.
        framed(
            format!("{:x};x={}\r\n", body.len(), "e".repeat(1 << 20)),
            "",
        ),
        // A megabyte of zeros padding the chunk size.
        framed(format!("{}{:x}\r\n", "0".repeat(1 << 20), body.len()), ""),
        // A megabyte of trailer fields.
        framed(
            format!("{:x}\r\n", body.len()),
            &"X-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n".repeat(20_000),
        ),
    ];
    for (i, request) in attacks.iter().enumerate() {
        let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let _ = stream.write_all(request).await;
        let mut response = Vec::new();
        let _ =
            tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response)).await;
        let text = String::from_utf8_lossy(&response);
        assert!(text.starts_with("HTTP/1.1 413"), "attack {i}: {text}");
        assert!(text.contains("payload-too-large"), "attack {i}");
    }
    let list = json(app.get("/notes").await, StatusCode::OK).await;
    assert_eq!(list["total"], 0, "nothing stored");
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    stream.write_all(&plain).await.unwrap();
    let mut response = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response)).await;
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with("HTTP/1.1 201"), "{text}");
}

/// A client that pipelines and reads nothing gets no answers made for it beyond what its
/// socket takes: requests wait before their handlers while its answers wait, and the
/// connection is closed when it has read nothing for `connection::STALL_LIMIT`; another
/// client is served meanwhile.
async fn pipelined_answers_wait_for_a_reading_peer(backend: Backend) {
    let app = TestApp::spawn(backend).await.unwrap();
    let addr = app.address.trim_start_matches("http://").to_owned();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(addr.parse().unwrap()).await.unwrap();
    let request = format!("GET / HTTP/1.1\r\nHost: {addr}\r\n\r\n").repeat(256);
    let started = std::time::Instant::now();
    let mut sent = 0usize;
    // Write until the server stops reading (its socket and ours fill up) or it closes.
    loop {
        match tokio::time::timeout(Duration::from_secs(2), stream.write_all(request.as_bytes()))
            .await
        {
            Ok(Ok(())) => sent += request.len(),
            Ok(Err(_)) | Err(_) => break,
        }
        assert!(
            sent < 200 * 1024 * 1024,
            "the server read 200 MiB of requests"
        );
        if started.elapsed() > Duration::from_secs(30) {
            panic!("the server kept reading for 30 s");
        }
    }
    assert_eq!(
        app.get("/").await.status(),
        StatusCode::OK,
        "others are served"
    );
    // The stalled connection ends within the limit (plus the time to notice).
    let closed = tokio::time::timeout(Duration::from_secs(30), async {
        let mut sink = vec![0u8; 1 << 16];
        loop {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "the connection of a peer that reads nothing is closed"
    );
}
