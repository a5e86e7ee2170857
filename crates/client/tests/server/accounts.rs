//! Accounts: events, balance, streams, and both kinds of optimistic concurrency.

use client::{
    EventType, EventsRequest, NewEvent, NewTransfer, OpenAccount, PageRequest, Slug, TryStreamExt,
};
use futures_util::StreamExt;

use crate::{Running, connect};

on_both_backends!(
    accounts_events_and_concurrency,
    transfers_move_money_once,
    subscriptions_resume_without_loss_or_repeat => short_streams,
);

/// Streams that end every 300 ms, so that a subscription reconnects many times.
fn short_streams(s: &mut server::Settings) {
    s.event_streams.max_age = std::time::Duration::from_millis(300);
    s.event_streams.heartbeat = std::time::Duration::from_millis(100);
}

async fn subscriptions_resume_without_loss_or_repeat(server: Running) {
    let api = connect(&server);
    let accounts = api.accounts();
    accounts
        .open(&OpenAccount::new("acc-s", "Ann"))
        .await
        .unwrap();
    let mut events = accounts.subscribe("acc-s", None).unwrap();
    let first = events.next().await.unwrap();
    assert_eq!((first.id.as_str(), first.event.sequence), ("1", 1));
    // Appends while the subscription reads, across several of the server's stream ends.
    let writer = {
        let api = api.clone();
        tokio::spawn(async move {
            for _ in 0..20 {
                api.accounts()
                    .append("acc-s", &NewEvent::deposit(1))
                    .await
                    .unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(40)).await;
            }
        })
    };
    let mut sequences = Vec::new();
    for _ in 0..20 {
        sequences.push(events.next().await.unwrap().event.sequence);
    }
    writer.await.unwrap();
    assert_eq!(sequences, (2..=21).collect::<Vec<_>>());
    assert_eq!(events.last_event_id(), Some("21"));

    // The feed of every account, and a new subscription after a position it returned.
    let feed: Vec<_> = accounts
        .subscribe_all(None)
        .into_stream()
        .take(21)
        .try_collect()
        .await
        .unwrap();
    let again = accounts
        .subscribe_all(Some(&feed[4].id))
        .next()
        .await
        .unwrap();
    assert_eq!(again, feed[5]);
    let resumed = accounts
        .subscribe("acc-s", Some(19))
        .unwrap()
        .next()
        .await
        .unwrap();
    assert_eq!(resumed.event.sequence, 20);

    // A refusal is returned at once, typed.
    let err = accounts
        .subscribe("nobody", None)
        .unwrap()
        .next()
        .await
        .unwrap_err();
    assert!(err.is(Slug::NotFound), "{err:?}");
}

async fn accounts_events_and_concurrency(server: Running) {
    let api = connect(&server);
    let accounts = api.accounts();
    let opened = accounts
        .open(&OpenAccount::new("acc-1", "Ann"))
        .await
        .unwrap();
    assert_eq!(
        (opened.event_type, opened.sequence),
        (EventType::AccountOpened, 1)
    );
    assert_eq!(opened.payload["owner"], "Ann");
    accounts
        .open(&OpenAccount::new("acc-0", "Zed"))
        .await
        .unwrap();
    let err = accounts
        .open(&OpenAccount::new("acc-1", "Bob"))
        .await
        .unwrap_err();
    assert!(err.is(Slug::Conflict), "{err:?}");

    let deposit = accounts
        .append("acc-1", &NewEvent::deposit(1_000))
        .await
        .unwrap();
    assert_eq!(
        (deposit.event_type, deposit.sequence),
        (EventType::MoneyDeposited, 2)
    );
    accounts
        .append("acc-1", &NewEvent::withdraw(300).expecting(2))
        .await
        .unwrap();
    let account = accounts.get("acc-1").await.unwrap();
    assert_eq!((account.balance_cents, account.last_sequence), (700, 3));

    // A stale expected_sequence and a withdrawal above the balance: typed, nothing written.
    let err = accounts
        .append("acc-1", &NewEvent::deposit(5).expecting(2))
        .await
        .unwrap_err();
    assert!(err.is(Slug::Conflict), "{err:?}");
    let err = accounts
        .append("acc-1", &NewEvent::withdraw(701))
        .await
        .unwrap_err();
    assert!(err.is(Slug::InsufficientFunds), "{err:?}");
    assert_eq!(accounts.get("acc-1").await.unwrap(), account);

    // If-Match: the account's ETag is its last sequence.
    let tagged = accounts.get_tagged("acc-1").await.unwrap();
    assert_eq!(tagged.etag, account.etag());
    assert_eq!(
        accounts
            .get_if_none_match("acc-1", &tagged.etag)
            .await
            .unwrap(),
        None
    );
    accounts
        .append_if_match("acc-1", &tagged.etag, &NewEvent::deposit(50))
        .await
        .unwrap();
    let err = accounts
        .append_if_match("acc-1", &tagged.etag, &NewEvent::deposit(50))
        .await
        .unwrap_err();
    assert!(err.is(Slug::PreconditionFailed), "{err:?}");
    let now = accounts
        .get_if_none_match("acc-1", &tagged.etag)
        .await
        .unwrap()
        .expect("changed since");
    assert_eq!((now.value.balance_cents, now.value.last_sequence), (750, 4));

    for _ in 0..5 {
        accounts
            .append("acc-1", &NewEvent::deposit(10))
            .await
            .unwrap();
    }
    let page = accounts
        .events(
            "acc-1",
            EventsRequest {
                after_sequence: Some(2),
                limit: Some(3),
            },
        )
        .await
        .unwrap();
    let seqs: Vec<i64> = page.items.iter().map(|e| e.sequence).collect();
    assert_eq!(
        (seqs, page.total, page.next_cursor),
        (vec![3, 4, 5], 9, Some(5))
    );
    let history: Vec<_> = accounts
        .event_stream("acc-1", 2)
        .try_collect()
        .await
        .unwrap();
    let seqs: Vec<i64> = history.iter().map(|e| e.sequence).collect();
    assert_eq!(seqs, (1..=9).collect::<Vec<_>>());
    assert_eq!(history[1], deposit);

    accounts.append("acc-1", &NewEvent::close()).await.unwrap();
    let err = accounts
        .append("acc-1", &NewEvent::deposit(1))
        .await
        .unwrap_err();
    assert!(err.is(Slug::AccountClosed), "{err:?}");

    let list = accounts.list(PageRequest::new(1, 0)).await.unwrap();
    assert_eq!(
        (list.total, list.items[0].account_id.as_str()),
        (2, "acc-0")
    );
    let all: Vec<_> = accounts.stream(1).try_collect().await.unwrap();
    let ids: Vec<_> = all.iter().map(|a| a.account_id.as_str()).collect();
    assert_eq!(ids, ["acc-0", "acc-1"]);
    assert!(!all[1].is_open);
    assert!(accounts.get("acc-9").await.unwrap_err().is(Slug::NotFound));
}

/// A transfer through the client: both events, the balances, a keyed retry answered once, and a
/// refusal typed by its slug.
async fn transfers_move_money_once(server: Running) {
    let api = connect(&server);
    let accounts = api.accounts();
    for id in ["t-a", "t-b"] {
        accounts.open(&OpenAccount::new(id, "Ann")).await.unwrap();
    }
    accounts
        .append("t-a", &NewEvent::deposit(900))
        .await
        .unwrap();
    let key = crate::key("move-300");
    let moved = accounts
        .transfer(&NewTransfer::new("t-a", "t-b", 300), Some(&key))
        .await
        .unwrap();
    assert!(!moved.replayed);
    assert_eq!(moved.value.withdrawn.event_type, EventType::MoneyWithdrawn);
    assert_eq!(
        moved.value.deposited.payload["transfer_id"],
        moved.value.transfer_id.as_str()
    );
    let again = accounts
        .transfer(&NewTransfer::new("t-a", "t-b", 300), Some(&key))
        .await
        .unwrap();
    assert!(again.replayed);
    assert_eq!(again.value, moved.value);
    let balances = (
        accounts.get("t-a").await.unwrap().balance_cents,
        accounts.get("t-b").await.unwrap().balance_cents,
    );
    assert_eq!(balances, (600, 300));
    let err = accounts
        .transfer(&NewTransfer::new("t-b", "t-a", 301), None)
        .await
        .unwrap_err();
    assert!(err.is(Slug::InsufficientFunds), "{err:?}");
}
