//! Live event streams (Server-Sent Events): an account's (`/accounts/{id}/events/stream`, by
//! sequence) and every account's (`/events/stream`, commit order): catch-up then live,
//! resumed by `Last-Event-ID` without loss or repeat, woken by another server on the same
//! database, bounded per client, and ended with a clear last event.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{Backend, TestApp, problem, test_settings};
use crate::{api_tests, backend_tests};

api_tests!(
    an_account_stream_catches_up_then_follows_live,
    a_reconnect_resumes_after_its_last_event_id,
    the_feed_serves_every_event_once_in_commit_order_under_concurrent_writes,
    bad_positions_and_unknown_accounts_are_refused_before_streaming,
);

backend_tests!(
    a_second_server_on_the_same_database_wakes_the_stream,
    a_caught_up_stream_is_handed_each_event_and_reads_only_what_it_missed,
    another_servers_burst_of_many_batches_arrives_within_three_polls,
    a_client_holds_at_most_its_share_of_streams,
    an_idle_stream_beats_and_ends_with_its_last_event_id,
);

/// One message of a stream: its `event` name (`None` for an event of the stream itself), its
/// `id` and its `data` as JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub event: Option<String>,
    pub id: Option<String>,
    pub data: Value,
}

/// A stream being read, message by message, each within a deadline.
pub struct Sse {
    res: Response,
    buffer: String,
    /// Heartbeat comments seen so far.
    pub heartbeats: usize,
}

impl Sse {
    pub async fn open(app: &TestApp, path: &str, last_event_id: Option<&str>) -> Sse {
        let mut req = app.client.get(app.url(path));
        if let Some(id) = last_event_id {
            req = req.header("Last-Event-ID", id);
        }
        let res = req.send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{path}");
        assert_eq!(res.headers()["content-type"], "text/event-stream");
        Sse {
            res,
            buffer: String::new(),
            heartbeats: 0,
        }
    }

    /// The next message, or `None` when the stream ends first.
    pub async fn next(&mut self) -> Option<Message> {
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut message = Message {
                    event: None,
                    id: None,
                    data: Value::Null,
                };
                let mut has_data = false;
                for line in block.lines() {
                    if line.starts_with(':') {
                        self.heartbeats += 1;
                    } else if let Some(v) = line.strip_prefix("event: ") {
                        message.event = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("id: ") {
                        message.id = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        message.data = serde_json::from_str(v).expect("data is JSON");
                        has_data = true;
                    }
                }
                if has_data {
                    return Some(message);
                }
            }
            let chunk = tokio::time::timeout(Duration::from_secs(15), self.res.chunk())
                .await
                .expect("a message within 15 s")
                .expect("the stream reads");
            match chunk {
                Some(bytes) => self.buffer.push_str(std::str::from_utf8(&bytes).unwrap()),
                None => return None,
            }
        }
    }

    /// The next `n` events (not `end` or `error`).
    pub async fn events(&mut self, n: usize) -> Vec<Message> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let m = self.next().await.expect("the stream goes on");
            assert_eq!(m.event, None, "an event, not {m:?}");
            out.push(m);
        }
        out
    }
}

fn sequences(messages: &[Message]) -> Vec<i64> {
    messages
        .iter()
        .map(|m| m.data["sequence"].as_i64().unwrap())
        .collect()
}

async fn an_account_stream_catches_up_then_follows_live(app: TestApp) {
    app.open_account("ann", "Ann").await;
    app.deposit("ann", 100).await;
    app.deposit("ann", 200).await;
    let mut stream = Sse::open(&app, "/accounts/ann/events/stream", None).await;
    let caught_up = stream.events(3).await;
    assert_eq!(sequences(&caught_up), [1, 2, 3]);
    // Each event is the one the list serves, its id its sequence.
    let listed = app.all_events("ann").await;
    for (message, event) in caught_up.iter().zip(&listed) {
        assert_eq!(&message.data, event);
        assert_eq!(message.id.as_deref(), Some(&*event["sequence"].to_string()));
    }
    // Then live: events committed after it opened, and none of another account.
    app.open_account("bob", "Bob").await;
    app.deposit("bob", 5).await;
    app.deposit("ann", 300).await;
    let live = stream.events(1).await;
    assert_eq!(sequences(&live), [4]);
    assert_eq!(live[0].data["payload"], json!({"amount_cents": 300}));
}

async fn a_reconnect_resumes_after_its_last_event_id(app: TestApp) {
    app.open_account("ann", "Ann").await;
    for amount in 1..=5 {
        app.deposit("ann", amount).await;
    }
    // Last-Event-ID wins over the query, as on an EventSource's reconnect.
    let path = "/accounts/ann/events/stream?after_sequence=1";
    let mut resumed = Sse::open(&app, path, Some("4")).await;
    assert_eq!(sequences(&resumed.events(2).await), [5, 6]);
    let mut from_query = Sse::open(&app, path, None).await;
    assert_eq!(sequences(&from_query.events(5).await), [2, 3, 4, 5, 6]);

    // The feed resumes after a position it sent.
    let mut feed = Sse::open(&app, "/events/stream", None).await;
    let all = feed.events(6).await;
    let third = all[2].id.clone().unwrap();
    let mut again = Sse::open(&app, "/events/stream", Some(&third)).await;
    assert_eq!(again.events(3).await, all[3..]);
    let query = format!("/events/stream?after={third}");
    let mut again = Sse::open(&app, &query, None).await;
    assert_eq!(again.events(3).await, all[3..]);
}

/// Transfers and openings in parallel transactions (on PostgreSQL they commit in any order of
/// their ids): the feed, read while they run and once more from the start afterwards, serves
/// every event exactly once, each account's in sequence order, positions ascending; money is
/// conserved.
async fn the_feed_serves_every_event_once_in_commit_order_under_concurrent_writes(app: TestApp) {
    const ACCOUNTS: usize = 6;
    const TRANSFERS: usize = 60;
    for i in 0..ACCOUNTS {
        app.open_account(&format!("acc-{i}"), "Owner").await;
        app.deposit(&format!("acc-{i}"), 1_000).await;
    }
    let mut live = Sse::open(&app, "/events/stream", None).await;
    let writes = (0..TRANSFERS).map(|n| {
        let (from, to) = (n % ACCOUNTS, (n * 5 + 1) % ACCOUNTS);
        let to = if to == from { (to + 1) % ACCOUNTS } else { to };
        let body =
            json!({"from": format!("acc-{from}"), "to": format!("acc-{to}"), "amount_cents": 7});
        let app = &app;
        Box::pin(async move {
            let res = app.post_json("/transfers", &body).await;
            assert_eq!(res.status(), StatusCode::CREATED);
        }) as std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>>
    });
    let opens = (0..10).map(|n| {
        let app = &app;
        Box::pin(async move {
            app.open_account(&format!("late-{n}"), "Late").await;
        }) as std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>>
    });
    let reader = live.events(ACCOUNTS * 2 + TRANSFERS * 2 + 10);
    // Eight requests at a time: in parallel, within a client's connection cap.
    let writes = futures_util::stream::iter(writes.chain(opens)).buffer_unordered(8);
    let (seen, ()) = tokio::join!(reader, writes.for_each(|()| async {}));
    check_feed(&seen);
    let mut again = Sse::open(&app, "/events/stream", None).await;
    let replayed = again.events(seen.len()).await;
    let ids = |m: &[Message]| -> HashSet<i64> {
        m.iter().map(|m| m.data["id"].as_i64().unwrap()).collect()
    };
    assert_eq!(
        ids(&replayed),
        ids(&seen),
        "the same events, read live or afterwards"
    );
    check_feed(&replayed);
    let mut total = 0;
    for i in 0..ACCOUNTS {
        total += app.account(&format!("acc-{i}")).await["balance_cents"]
            .as_i64()
            .unwrap();
    }
    assert_eq!(total, 1_000 * ACCOUNTS as i64, "money is conserved");
}

fn check_feed(messages: &[Message]) {
    let mut positions = Vec::new();
    let mut last_sequence: BTreeMap<String, i64> = BTreeMap::new();
    let mut ids = HashSet::new();
    for m in messages {
        let (tx, id) = m.id.as_deref().unwrap().split_once('-').unwrap();
        positions.push((tx.parse::<i64>().unwrap(), id.parse::<i64>().unwrap()));
        assert!(
            ids.insert(m.data["id"].as_i64().unwrap()),
            "repeated: {m:?}"
        );
        let account = m.data["aggregate_id"].as_str().unwrap().to_owned();
        let sequence = m.data["sequence"].as_i64().unwrap();
        let before = last_sequence.insert(account, sequence).unwrap_or(0);
        assert_eq!(
            sequence,
            before + 1,
            "an account's events in order, none missing: {m:?}"
        );
    }
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
}

async fn bad_positions_and_unknown_accounts_are_refused_before_streaming(app: TestApp) {
    app.open_account("ann", "Ann").await;
    let get = |path: &str, last: Option<&str>| {
        let mut req = app.client.get(app.url(path));
        if let Some(id) = last {
            req = req.header("Last-Event-ID", id);
        }
        req.send()
    };
    let res = get("/accounts/nobody/events/stream", None).await.unwrap();
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
    for (path, last) in [
        ("/accounts/ann/events/stream?after_sequence=-1", None),
        ("/accounts/ann/events/stream", Some("x")),
        ("/events/stream?after=1-x", None),
        ("/events/stream", Some("1-2-3")),
    ] {
        let res = get(path, last).await.unwrap();
        problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    }
}

/// A test app whose streams poll every `poll`, and a second server on its database: its base
/// URL and its handle (to stop it). `None` when the backend cannot be had.
async fn two_servers(
    backend: Backend,
    poll: Duration,
) -> Option<(TestApp, String, actix_web::dev::ServerHandle)> {
    let app = TestApp::spawn_with(backend, move |s| s.event_streams.poll = poll).await?;
    let other = server::Application::build(test_settings(&app.db))
        .await
        .unwrap();
    let base = format!("http://127.0.0.1:{}", other.port());
    let handle = other.handle();
    tokio::spawn(other.run_until_stopped());
    Some((app, base, handle))
}

/// Deposits `amount_cents` to `account` through the server at `base`.
async fn deposit_at(app: &TestApp, base: &str, account: &str, amount_cents: i64) {
    let res = app
        .client
        .post(format!("{base}/accounts/{account}/events"))
        .json(&json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": amount_cents}}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
}

/// Two servers on one database: a stream on the first follows events committed through the
/// second, which wakes nobody here (the poll finds them).
async fn a_second_server_on_the_same_database_wakes_the_stream(backend: Backend) {
    let Some((app, other_base, handle)) = two_servers(backend, Duration::from_millis(100)).await
    else {
        return eprintln!("TEST_POSTGRES_URL not set: skipped");
    };
    app.open_account("ann", "Ann").await;
    let mut stream = Sse::open(&app, "/accounts/ann/events/stream", None).await;
    let mut feed = Sse::open(&app, "/events/stream", None).await;
    assert_eq!(sequences(&stream.events(1).await), [1]);
    feed.events(1).await;
    deposit_at(&app, &other_base, "ann", 9).await;
    assert_eq!(sequences(&stream.events(1).await), [2]);
    assert_eq!(sequences(&feed.events(1).await), [2]);
    handle.stop(false).await;
}

/// Events sent by the streams, by where they found them (`event_stream_events_total`).
async fn sent(app: &TestApp) -> (f64, f64) {
    let (_, _, text) = crate::metrics::metrics(app, None).await;
    let sent =
        |source| crate::metrics::sample(&text, "event_stream_events_total", &[("source", source)]);
    (sent("handed"), sent("database"))
}

/// A caught-up stream sends each event this server commits as the commit hands it over (no
/// read), and reads the database only for what was not handed over in order: another server's
/// event, or events whose hand-overs crossed. What it sends is what the database holds, byte
/// for byte, every event once and in order. The poll is a minute, so nothing here is polled.
async fn a_caught_up_stream_is_handed_each_event_and_reads_only_what_it_missed(backend: Backend) {
    let Some((app, other_base, handle)) = two_servers(backend, Duration::from_secs(60)).await
    else {
        return eprintln!("TEST_POSTGRES_URL not set: skipped");
    };
    app.open_account("ann", "Ann").await;
    let mut stream = Sse::open(&app, "/accounts/ann/events/stream", None).await;
    let mut live = stream.events(1).await;
    let (handed, read) = sent(&app).await;
    assert_eq!((handed, read), (0.0, 1.0), "the catch-up is read");

    for amount in 1..=10 {
        app.deposit("ann", amount).await;
    }
    live.extend(stream.events(10).await);
    assert_eq!(
        sent(&app).await,
        (handed + 10.0, read),
        "handed over, none read"
    );

    // Another server's event is never handed over here: the next one here shows the gap.
    deposit_at(&app, &other_base, "ann", 9).await;
    app.deposit("ann", 11).await;
    live.extend(stream.events(2).await);
    assert!(
        sent(&app).await.1 > read,
        "the gap is read from the database"
    );

    // Concurrent appends hand over in any order.
    let deposits = (0..30).map(|n| app.deposit("ann", 100 + n));
    let writes = futures_util::stream::iter(deposits).buffer_unordered(8);
    let (more, ()) = tokio::join!(stream.events(30), writes.for_each(|_| async {}));
    live.extend(more);

    let listed = app.all_events("ann").await;
    assert_eq!(sequences(&live), (1..=43).collect::<Vec<_>>());
    assert_eq!(
        live.iter().map(|m| &m.data).collect::<Vec<_>>(),
        listed.iter().collect::<Vec<_>>()
    );
    for message in &live {
        assert_eq!(
            message.id.as_deref(),
            Some(&*message.data["sequence"].to_string())
        );
    }
    handle.stop(false).await;
}

/// A caught-up stream finds another server's commits at its poll, and that poll reads them all,
/// batch after batch (`STREAM_BATCH` events each) until a read finds none, rather than one
/// batch per poll: a burst of five batches arrives within three polls of its last commit. (The
/// read-on after a gap that a hand-over shows is tested beside the stream, `http_edge::sse`.)
async fn another_servers_burst_of_many_batches_arrives_within_three_polls(backend: Backend) {
    const POLL: Duration = Duration::from_secs(2);
    let Some((app, other_base, handle)) = two_servers(backend, POLL).await else {
        return eprintln!("TEST_POSTGRES_URL not set: skipped");
    };
    app.open_account("ann", "Ann").await;
    let mut stream = Sse::open(&app, "/accounts/ann/events/stream", None).await;
    assert_eq!(sequences(&stream.events(1).await), [1]);
    // Handed over here: the stream is caught up and waits for hand-overs and its poll.
    app.deposit("ann", 1).await;
    assert_eq!(sequences(&stream.events(1).await), [2]);

    let burst = 5 * usize::try_from(ledger::service::STREAM_BATCH).unwrap();
    let deposits = (0..burst).map(|n| deposit_at(&app, &other_base, "ann", 10 + n as i64));
    futures_util::stream::iter(deposits)
        .buffer_unordered(8)
        .for_each(|()| async {})
        .await;
    let written = tokio::time::Instant::now();
    let burst_seen = stream.events(burst).await;
    let took = written.elapsed();
    let last = i64::try_from(burst).unwrap() + 2;
    assert_eq!(sequences(&burst_seen), (3..=last).collect::<Vec<_>>());
    assert!(
        took < 3 * POLL,
        "the burst's last event came {took:?} after its commit, polls every {POLL:?}"
    );
    handle.stop(false).await;
}

async fn a_client_holds_at_most_its_share_of_streams(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, |s| {
        s.event_streams.per_client = 2;
        // A write to the closed connection tells the server its reader went away.
        s.event_streams.heartbeat = Duration::from_millis(100);
    })
    .await
    else {
        return eprintln!("TEST_POSTGRES_URL not set: skipped");
    };
    app.open_account("ann", "Ann").await;
    let first = Sse::open(&app, "/accounts/ann/events/stream", None).await;
    let _second = Sse::open(&app, "/events/stream", None).await;
    let res = app.get("/accounts/ann/events/stream").await;
    let refused = problem(res, StatusCode::TOO_MANY_REQUESTS, "too-many-requests").await;
    assert!(
        refused["detail"]
            .as_str()
            .unwrap()
            .contains("2 open event streams")
    );
    // A stream whose reader went away gives its place back.
    drop(first);
    let mut reopened = None;
    for _ in 0..100 {
        let res = app.get("/accounts/ann/events/stream").await;
        if res.status() == StatusCode::OK {
            reopened = Some(res);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        reopened.is_some(),
        "the closed stream's place was given back"
    );

    // The server's own cap: past it, 503 with Retry-After, whoever asks.
    let Some(full) = TestApp::spawn_with(backend, |s| s.event_streams.total = 1).await else {
        return;
    };
    full.open_account("ann", "Ann").await;
    let _only = Sse::open(&full, "/events/stream", None).await;
    let res = full.get("/accounts/ann/events/stream").await;
    assert_eq!(res.headers()["retry-after"], "5");
    problem(res, StatusCode::SERVICE_UNAVAILABLE, "service-unavailable").await;
}

async fn an_idle_stream_beats_and_ends_with_its_last_event_id(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, |s| {
        s.event_streams.heartbeat = Duration::from_millis(200);
        s.event_streams.max_age = Duration::from_secs(2);
    })
    .await
    else {
        return eprintln!("TEST_POSTGRES_URL not set: skipped");
    };
    app.open_account("ann", "Ann").await;
    app.deposit("ann", 1).await;
    let mut stream = Sse::open(&app, "/accounts/ann/events/stream", None).await;
    assert_eq!(sequences(&stream.events(2).await), [1, 2]);
    let end = stream.next().await.expect("an end event");
    assert_eq!(end.event.as_deref(), Some("end"));
    assert_eq!(end.data, json!({"reason": "max-age", "last_event_id": "2"}));
    assert!(stream.heartbeats >= 3, "{} heartbeats", stream.heartbeats);
    assert_eq!(stream.next().await, None, "and the stream is over");
}
