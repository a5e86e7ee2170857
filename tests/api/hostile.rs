//! No 5xx, ever: a corpus of hostile inputs sent to every operation of the OpenAPI document
//! (so new routes are covered as soon as they are documented). Every answer must be below 500,
//! carry a request id, and every error must be a well-formed problem document or the token
//! area's `{"error": "..."}` body.

use reqwest::{Method, Response};
use serde_json::{Value, json};

use crate::api_tests;
use crate::helpers::TestApp;

api_tests!(hostile_inputs_never_cause_a_server_error);

const PATH_VALUES: &[&str] = &[
    "abc",
    "-1",
    "0",
    "99999999999999999999",
    "1.5",
    "%00",
    "..%2F..%2Fetc%2Fpasswd",
    "1%27%20OR%201%3D1--",
    "%F0%9F%8E%89",
    "%FF%FE",
    "NaN",
];

const QUERIES: &[&str] = &[
    "limit=NaN&offset=Infinity",
    "limit=1e400",
    "limit=1&limit=abc&offset=2&offset=-2",
    "offset=%00",
    "after=-99999999999999999999",
    "after=%FF",
    "limit=%27%3B%20DROP%20TABLE%20notes%3B--",
    "after_sequence=abc&limit=-1",
];

fn bodies() -> Vec<(String, Vec<u8>)> {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let mut out: Vec<(String, Vec<u8>)> = vec![
        ("wrong types".into(), json!({"title": {}, "body": [], "name": 1, "token": 5, "amount_cents": "x", "event_type": 7, "payload": "x", "scope": [], "account_id": {}, "owner": false, "tags": "x", "content": 1}).to_string().into_bytes()),
        ("huge numbers".into(), br#"{"title": 1e400, "amount_cents": 99999999999999999999999, "expected_sequence": -1e308}"#.to_vec()),
        ("NaN literal".into(), br#"{"title": NaN, "body": Infinity}"#.to_vec()),
        ("deep nesting".into(), deep.into_bytes()),
        ("invalid UTF-8".into(), vec![b'{', b'"', b't', b'"', b':', b'"', 0xff, 0xfe, b'"', b'}']),
        ("NUL bytes".into(), json!({"title": "a\u{0}b", "body": "\u{0}", "name": "\u{0}", "token": "\u{0}", "account_id": "a\u{0}", "owner": "\u{0}"}).to_string().into_bytes()),
        ("SQL metacharacters".into(), json!({"title": "'; DROP TABLE notes; --", "body": "\" OR 1=1 --", "name": "%_\\", "token": "' OR '1'='1", "account_id": "acc'--", "owner": "x", "event_type": "MoneyDeposited'", "payload": {"amount_cents": 1}}).to_string().into_bytes()),
        ("empty".into(), Vec::new()),
        ("scalar".into(), b"42".to_vec()),
        ("array".into(), b"[{\"title\": \"t\"}]".to_vec()),
        ("truncated".into(), b"{\"title\": \"t\", \"body\": ".to_vec()),
        ("duplicate keys".into(), br#"{"title": "a", "title": 5, "body": "b"}"#.to_vec()),
        ("emoji and controls".into(), json!({"title": "🎉\u{7}\u{1b}[31m", "body": "\u{202e}x", "name": "🎉", "owner": "🎉", "account_id": "🎉"}).to_string().into_bytes()),
    ];
    out.push(("10 MB".into(), vec![b'a'; 10 * 1024 * 1024]));
    out
}

async fn check(res: Response, what: &str) {
    let status = res.status();
    assert!(status.as_u16() < 500, "{what}: answered {status}");
    assert!(
        res.headers().contains_key("x-request-id"),
        "{what}: no request id"
    );
    if status.as_u16() >= 400 {
        let ct = res
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let body: Value = res
            .json()
            .await
            .unwrap_or_else(|_| panic!("{what}: {status} without a JSON body"));
        if ct.starts_with("application/problem+json") {
            for member in ["type", "title", "status", "detail"] {
                assert!(
                    body.get(member).is_some(),
                    "{what}: problem without {member}"
                );
            }
            assert_eq!(body["status"], status.as_u16(), "{what}");
        } else {
            assert!(
                body["error"].is_string(),
                "{what}: {status} neither problem nor error body: {body}"
            );
        }
    }
}

fn concrete(path: &str, value: &str) -> String {
    path.split('/')
        .map(|seg| if seg.starts_with('{') { value } else { seg })
        .collect::<Vec<_>>()
        .join("/")
}

async fn hostile_inputs_never_cause_a_server_error(app: TestApp) {
    let doc = server::openapi::generate().await;
    let bodies = bodies();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let Ok(method) = Method::from_bytes(method.to_uppercase().as_bytes()) else {
                continue;
            };
            let has_params = path.contains('{');
            let values: Vec<&str> = if has_params {
                PATH_VALUES.to_vec()
            } else {
                vec![""]
            };
            for value in values {
                let url = concrete(path, value);
                for query in QUERIES {
                    let what = format!("{method} {url}?{query}");
                    let res = app
                        .request(method.clone(), &format!("{url}?{query}"))
                        .header("x-user-id", "1")
                        .send()
                        .await
                        .unwrap();
                    check(res, &what).await;
                }
            }
            if op.get("requestBody").is_some() {
                let url = concrete(path, "1");
                for (name, body) in &bodies {
                    let what = format!("{method} {url} with {name}");
                    let res = app
                        .request(method.clone(), &url)
                        .header("content-type", "application/json")
                        .header("x-user-id", "1")
                        .body(body.clone())
                        .send()
                        .await;
                    match res {
                        Ok(res) => check(res, &what).await,
                        // The server may close the connection after refusing a 10 MB body.
                        Err(e) if name == "10 MB" => eprintln!("{what}: {e}"),
                        Err(e) => panic!("{what}: {e}"),
                    }
                }
            }
        }
    }
}
