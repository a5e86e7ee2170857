//! Signed webhook deliveries and the list of accepted events.

use client::{PageRequest, Slug, TryStreamExt};

use crate::{Running, WEBHOOK_SECRET, connect};

on_both_backends!(webhook_deliveries,);

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
