//! Trace context and the access record: an incoming W3C `traceparent` is continued (the answer's
//! `traceresponse` names the trace and the span that answered), one is started when absent or
//! invalid, and the access record carries the route template, method, status, duration,
//! request id, trace, and the user and token ids (never the token).

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{Backend, TestApp, log_capture};
use crate::tokens::{OPERATOR_KEY, create_user, issue, tokens_mode};
use crate::{api_tests, backend_tests};

api_tests!(a_traceparent_is_continued_and_a_trace_started_without_one);
backend_tests!(the_access_record_names_route_status_trace_and_actor);

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// A GET that continues the trace [`PARENT`].
async fn get_in_trace(app: &TestApp, path: &str) -> reqwest::Response {
    app.request(Method::GET, path)
        .header("traceparent", PARENT)
        .send()
        .await
        .unwrap()
}

/// The `traceresponse` of an answer: (trace id, span id, flags).
fn trace_of(res: &reqwest::Response) -> (String, String, String) {
    let value = res.headers()["traceresponse"].to_str().unwrap();
    let parts: Vec<&str> = value.split('-').collect();
    assert_eq!(parts.len(), 4, "{value}");
    assert_eq!(parts[0], "00");
    assert_eq!((parts[1].len(), parts[2].len()), (32, 16), "{value}");
    (parts[1].into(), parts[2].into(), parts[3].into())
}

async fn a_traceparent_is_continued_and_a_trace_started_without_one(app: TestApp) {
    let continued = get_in_trace(&app, "/notes/424242").await;
    assert_eq!(continued.status(), StatusCode::NOT_FOUND);
    let (trace, span, flags) = trace_of(&continued);
    assert_eq!(trace, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_ne!(span, "00f067aa0ba902b7", "the answer names its own span");
    assert_eq!(flags, "01", "the caller's sampling decision is kept");

    let started = trace_of(&app.get("/health").await);
    let again = trace_of(&app.get("/health").await);
    assert_ne!(
        started.0, again.0,
        "each request without a parent starts a trace"
    );
    assert_eq!(started.2, "00");
    for invalid in [
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "garbage",
    ] {
        let res = app
            .request(Method::GET, "/health")
            .header("traceparent", invalid)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "an invalid parent is ignored");
        assert_ne!(trace_of(&res).0, "4bf92f3577b34da6a3ce929d0e0e4736");
    }
}

/// The access records of this test's requests, found by their request id.
async fn access_record(request_id: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let found = log_capture().snapshot().into_iter().find_map(|line| {
            let record: Value = serde_json::from_str(&line).ok()?;
            (record["target"] == "access" && record["request_id"] == request_id).then_some(record)
        });
        if let Some(record) = found {
            return record;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no access record for {request_id}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn the_access_record_names_route_status_trace_and_actor(backend: Backend) {
    log_capture();
    let app = tokens_mode(backend).await;
    let ann = create_user(&app, "ann").await;
    let token = issue(&app, ann, json!({"scope": "read"})).await;
    let raw = token["token"].as_str().unwrap().to_owned();
    let request_id = format!("logs-{}-{backend:?}", std::process::id());
    let res = app
        .request(Method::GET, "/notes/424242?limit=1")
        .header("Authorization", format!("Bearer {raw}"))
        .header("X-Request-Id", &request_id)
        .header("traceparent", PARENT)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let (_, span, _) = trace_of(&res);
    let record = access_record(&request_id).await;
    assert_eq!(record["level"], "INFO");
    assert_eq!(record["method"], "GET");
    assert_eq!(
        record["route"], "/notes/{note_id}",
        "the template, never the path"
    );
    assert_eq!(record["status"], 404);
    assert_eq!(record["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(record["span_id"], span.as_str());
    assert_eq!(record["user_id"], ann);
    assert_eq!(record["token_id"], token["id"]);
    assert!(record["duration_ms"].as_f64().unwrap() >= 0.0);
    assert!(record["client"].as_str().unwrap().starts_with("127.0.0.1"));
    let line = record.to_string();
    assert!(!line.contains(&raw), "the token never reaches the log");

    // The operator: no user, no token; the key never appears either.
    let operator_request = format!("{request_id}-operator");
    app.request(Method::POST, "/users")
        .json(&json!({"name": "bob"}))
        .header("X-API-Key", OPERATOR_KEY)
        .header("X-Request-Id", &operator_request)
        .send()
        .await
        .unwrap();
    let record = access_record(&operator_request).await;
    assert_eq!(record["actor"], "operator");
    assert!(record.get("user_id").is_none() && record.get("token_id").is_none());
    assert!(!record.to_string().contains(OPERATOR_KEY));
}

/// What a collector received: each request's content type and body, as it came.
type Received = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<u8>)>>>;

/// A local OTLP/HTTP receiver.
struct Collector {
    base: String,
    received: Received,
    handle: actix_web::dev::ServerHandle,
}

impl Collector {
    fn start() -> Collector {
        use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
        let received = Received::default();
        let store = received.clone();
        let server = HttpServer::new(move || {
            let store = store.clone();
            App::new().route(
                "/v1/traces",
                web::post().to(move |req: HttpRequest, body: web::Bytes| {
                    let kind = req
                        .headers()
                        .get("content-type")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    store.lock().unwrap().push((kind, body.to_vec()));
                    async { HttpResponse::Ok().finish() }
                }),
            )
        })
        .workers(1)
        .bind("127.0.0.1:0")
        .unwrap();
        let base = format!("http://{}", server.addrs()[0]);
        let server = server.run();
        let handle = server.handle();
        tokio::spawn(server);
        Collector {
            base,
            received,
            handle,
        }
    }

    /// The bodies received so far, waiting up to 20 s for the first (spans go out in batches).
    async fn bodies(&self, want: impl Fn(&[(String, Vec<u8>)]) -> bool) -> Vec<(String, Vec<u8>)> {
        for _ in 0..200 {
            let got = self.received.lock().unwrap().clone();
            if want(&got) {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.received.lock().unwrap().clone()
    }
}

async fn exporting(collector: &Collector, protocol: &str) -> TestApp {
    let (base, protocol) = (collector.base.clone(), protocol.to_owned());
    TestApp::spawn_with(Backend::Sqlite, move |s| {
        s.otlp = server::Settings::from_lookup(|k| match k {
            "OTEL_EXPORTER_OTLP_ENDPOINT" => Some(base.clone()),
            "OTEL_EXPORTER_OTLP_PROTOCOL" => Some(protocol.clone()),
            "SERVICE_NAME" => Some("otlp-test".to_owned()),
            _ => None,
        })
        .unwrap()
        .otlp;
    })
    .await
    .unwrap()
}

/// `OTEL_EXPORTER_OTLP_ENDPOINT` set: each request reaches the collector as a server span with
/// the ids the answer named (`traceresponse`), the caller's span as parent, the route template
/// as name and the HTTP attributes; a trace the service starts is sampled and exported; a
/// caller's unsampled trace is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_reach_an_otlp_collector_as_json() {
    let collector = Collector::start();
    let app = exporting(&collector, "http/json").await;
    let continued = get_in_trace(&app, "/notes/424242").await;
    let (trace, span, _) = trace_of(&continued);
    let started = app
        .post_json("/notes", &json!({"title": "t", "body": "b"}))
        .await;
    let (started_trace, started_span, flags) = trace_of(&started);
    assert_eq!(flags, "01", "a trace started while exporting is sampled");
    let unsampled = "00-4bf92f3577b34da6a3ce929d0e0e4799-00f067aa0ba902b7-00";
    app.request(Method::GET, "/health")
        .header("traceparent", unsampled)
        .send()
        .await
        .unwrap();

    let spans_of = |bodies: &[(String, Vec<u8>)]| -> Vec<Value> {
        bodies
            .iter()
            .filter_map(|(_, body)| serde_json::from_slice::<Value>(body).ok())
            .flat_map(|doc| {
                let mut spans = Vec::new();
                for rs in doc["resourceSpans"].as_array().cloned().unwrap_or_default() {
                    let service = rs["resource"]["attributes"].clone();
                    for ss in rs["scopeSpans"].as_array().cloned().unwrap_or_default() {
                        for mut s in ss["spans"].as_array().cloned().unwrap_or_default() {
                            s["resourceAttributes"] = service.clone();
                            spans.push(s);
                        }
                    }
                }
                spans
            })
            .collect()
    };
    let bodies = collector.bodies(|b| spans_of(b).len() >= 2).await;
    assert!(
        bodies
            .iter()
            .all(|(kind, _)| kind.starts_with("application/json"))
    );
    let spans = spans_of(&bodies);
    let find = |span_id: &str| {
        spans
            .iter()
            .find(|s| s["spanId"].as_str() == Some(span_id))
            .unwrap_or_else(|| panic!("span {span_id} not exported: {spans:?}"))
            .clone()
    };
    let get = find(&span);
    assert_eq!(get["traceId"], trace);
    assert_eq!(get["parentSpanId"], "00f067aa0ba902b7");
    assert_eq!(get["name"], "GET /notes/{note_id}");
    assert_eq!(get["kind"], 2, "SPAN_KIND_SERVER");
    let attribute = |span: &Value, key: &str| {
        span["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["key"] == key)
            .map(|a| a["value"].clone())
    };
    assert_eq!(
        attribute(&get, "http.route"),
        Some(json!({"stringValue": "/notes/{note_id}"}))
    );
    assert_eq!(
        attribute(&get, "http.response.status_code"),
        Some(json!({"intValue": "404"}))
    );
    assert!(
        get["resourceAttributes"]
            .to_string()
            .contains("\"otlp-test\""),
        "service.name: {get}"
    );
    let post = find(&started_span);
    assert_eq!(post["traceId"], started_trace);
    assert_eq!(post["name"], "POST /notes");
    assert!(post.get("parentSpanId").is_none_or(|p| p == ""), "{post}");
    assert!(
        !spans
            .iter()
            .any(|s| s["traceId"] == "4bf92f3577b34da6a3ce929d0e0e4799"),
        "an unsampled caller's trace is not exported"
    );
    collector.handle.stop(false).await;
}

/// The default encoding is OTLP's protobuf: the collector gets `application/x-protobuf` bodies
/// that carry the request's trace and span ids as their raw bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_reach_an_otlp_collector_as_protobuf() {
    let collector = Collector::start();
    let app = exporting(&collector, "http/protobuf").await;
    let res = get_in_trace(&app, "/health").await;
    let (trace, span, _) = trace_of(&res);
    let (trace, span) = (hex_bytes(&trace), hex_bytes(&span));
    let contains = |body: &[u8], part: &[u8]| body.windows(part.len()).any(|w| w == part);
    let bodies = collector
        .bodies(|b| b.iter().any(|(_, body)| contains(body, &span)))
        .await;
    let (kind, body) = bodies
        .iter()
        .find(|(_, body)| contains(body, &span))
        .expect("the request's span reached the collector");
    assert_eq!(kind, "application/x-protobuf");
    assert!(contains(body, &trace));
    assert!(contains(body, b"GET /health"));
    collector.handle.stop(false).await;
}

fn hex_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// A collector address that is not an http(s) URL stops start-up with one line naming it.
#[test]
fn a_malformed_collector_address_is_refused_at_start() {
    let err = server::Settings::from_lookup(|k| {
        (k == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "collector:4318".to_owned())
    })
    .unwrap_err();
    assert_eq!(err.variable, "OTEL_EXPORTER_OTLP_ENDPOINT");
    let err = server::Settings::from_lookup(|k| {
        (k == "OTEL_EXPORTER_OTLP_PROTOCOL").then(|| "grpc".to_owned())
    })
    .unwrap_err();
    assert_eq!(err.variable, "OTEL_EXPORTER_OTLP_PROTOCOL");
}
