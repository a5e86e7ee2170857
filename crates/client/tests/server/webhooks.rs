//! Signed webhook deliveries and the list of accepted events.

use client::{PageRequest, Slug, TryStreamExt};

use crate::{Running, WEBHOOK_SECRET, connect};

on_both_backends!(
    webhook_deliveries,
    outbound_endpoints_and_their_log => outbound,
);

/// Outbound webhooks on, to this machine, with quick retries.
fn outbound(s: &mut server::Settings) {
    let o = &mut s.outbound_webhooks;
    o.key =
        outbound_webhooks::SigningKey::new(b"client-test-webhook-signing-key-0123456789".to_vec());
    o.allow = outbound_webhooks::Allow::parse("127.0.0.1").unwrap();
    o.retry_base = std::time::Duration::from_millis(100);
    o.poll = std::time::Duration::from_millis(100);
}

/// Every endpoint call against the real service: the endpoint is the service's own intake,
/// which refuses the deliveries (unsigned for it), so the log fills with failed attempts.
async fn outbound_endpoints_and_their_log(server: Running) {
    let api = connect(&server);
    let endpoints = api.webhook_endpoints();
    let url = format!("{}/webhook", server.base);
    let made = endpoints
        .create(&client::NewEndpoint::new(&url).only(&["AccountOpened"]))
        .await
        .unwrap();
    assert!(made.secret.starts_with("whsec_"));
    assert_eq!(made.endpoint.event_types, ["AccountOpened"]);
    let id = made.endpoint.id;
    assert_eq!(endpoints.get(id).await.unwrap(), made.endpoint);
    assert_eq!(
        endpoints.list(PageRequest::new(10, 0)).await.unwrap().total,
        1
    );
    api.accounts()
        .open(&client::OpenAccount::new("acc-w", "Ann"))
        .await
        .unwrap();
    let mut log = endpoints
        .deliveries(id, PageRequest::new(10, 0))
        .await
        .unwrap();
    for _ in 0..100 {
        if log.total > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        log = endpoints
            .deliveries(id, PageRequest::new(10, 0))
            .await
            .unwrap();
    }
    let first = log.items.last().unwrap().clone();
    assert_eq!(
        (first.outcome.as_str(), first.response_status),
        ("failed", Some(401))
    );
    let again = endpoints.redeliver(id, first.id).await.unwrap();
    assert!(
        again.manual && again.message_id == first.message_id,
        "{again:?}"
    );
    let rotated = endpoints.rotate_secret(id).await.unwrap();
    assert_ne!(rotated.secret, made.secret);
    let change = client::EndpointChange {
        enabled: Some(false),
        ..Default::default()
    };
    assert!(!endpoints.update(id, &change).await.unwrap().enabled);
    endpoints.delete(id).await.unwrap();
    let err = endpoints.get(id).await.unwrap_err();
    assert!(err.is(Slug::NotFound), "{err:?}");
    let err = endpoints
        .create(&client::NewEndpoint::new("http://10.0.0.1/x"))
        .await
        .unwrap_err();
    assert!(err.is(Slug::ValidationFailed), "{err:?}");
}

async fn webhook_deliveries(server: Running) {
    let api = connect(&server);
    let hooks = api.webhooks();
    let mut receipts = Vec::new();
    for i in 0..3 {
        let body = format!(r#"{{"event_type":"note.created","data":{{"id":{i}}}}}"#);
        receipts.push(
            hooks
                .deliver(WEBHOOK_SECRET.as_bytes(), body.as_bytes())
                .await
                .unwrap(),
        );
    }
    let page = hooks.list(PageRequest::new(2, 0)).await.unwrap();
    assert_eq!(page.total, 3);
    assert_eq!(page.items[0].id, receipts[2].id, "newest first");
    assert_eq!(page.items[0].event_type, "note.created");
    assert_eq!(
        page.items[0].payload,
        r#"{"event_type":"note.created","data":{"id":2}}"#
    );
    let all: Vec<_> = hooks.stream(2).try_collect().await.unwrap();
    let ids: Vec<i64> = all.iter().map(|e| e.id).collect();
    assert_eq!(ids, receipts.iter().rev().map(|r| r.id).collect::<Vec<_>>());

    let err = hooks
        .deliver(b"another secret", br#"{"event_type":"x"}"#)
        .await
        .unwrap_err();
    assert!(err.is(Slug::InvalidSignature), "{err:?}");
    let err = hooks
        .deliver(WEBHOOK_SECRET.as_bytes(), br#"{"no_type":1}"#)
        .await
        .unwrap_err();
    assert!(err.is(Slug::InvalidBody), "{err:?}");
    assert_eq!(hooks.list(PageRequest::default()).await.unwrap().total, 3);
}
