//! Event-sourced accounts (area E): open, read, list, and append events, optionally only at a
//! known version (`If-Match: "N"` or `expected_sequence`).

use futures_util::Stream;
use reqwest::{Method, StatusCode};

use crate::api::segment;
use crate::api::streams::Subscription;
use crate::conditional::{ETag, Tagged};
use crate::error::ClientError;
use crate::idempotency::{Created, IdempotencyKey};
use crate::transport::{Call, Client};
use crate::types::{
    Account, AccountEvent, AccountEventList, EventsRequest, NewEvent, NewTransfer, OpenAccount,
    Page, PageRequest, Transfer,
};
use crate::walk::walk;

const LIST_EVENTS: &str = "list_events";

/// `/accounts`. Made by [`Client::accounts`].
///
/// ```no_run
/// use client::{NewEvent, OpenAccount};
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let accounts = api.accounts();
/// accounts.open(&OpenAccount::new("acc-1", "Ann")).await?;
/// accounts.append("acc-1", &NewEvent::deposit(1_000)).await?;
/// assert_eq!(accounts.get("acc-1").await?.balance_cents, 1_000);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Accounts<'a> {
    client: &'a Client,
}

/// `/accounts/{id}` plus `rest`, the id escaped as a path segment.
fn path(op: &'static str, id: &str, rest: &str) -> Result<String, ClientError> {
    Ok(format!("/accounts/{}{rest}", segment(op, id)?))
}

async fn events_page(
    client: &Client,
    id: &str,
    page: EventsRequest,
) -> Result<AccountEventList, ClientError> {
    let call =
        Call::new(LIST_EVENTS, Method::GET, path(LIST_EVENTS, id, "/events")?).query(page.query());
    Ok(client.fetch(call, StatusCode::OK).await?.0)
}

impl Accounts<'_> {
    /// `POST /accounts` under a fresh random `Idempotency-Key` (so retried safely): answers
    /// the account's first event, `AccountOpened`. An existing id is 409 `conflict`.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let opened = api.accounts().open(&client::OpenAccount::new("acc-1", "Ann")).await?;
    /// assert_eq!(opened.sequence, 1);
    /// # Ok(()) }
    /// ```
    pub async fn open(&self, input: &OpenAccount) -> Result<AccountEvent, ClientError> {
        Ok(self.opened(input, None).await?.value)
    }

    /// `POST /accounts` under the caller's `key`; the same key with another body is 422
    /// `idempotency-key-reused`.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let key = client::IdempotencyKey::new("open-acc-1")?;
    /// let opened = api.accounts().open_with_key(&client::OpenAccount::new("acc-1", "Ann"), &key).await?;
    /// # let _ = opened; Ok(()) }
    /// ```
    pub async fn open_with_key(
        &self,
        input: &OpenAccount,
        key: &IdempotencyKey,
    ) -> Result<Created<AccountEvent>, ClientError> {
        self.opened(input, Some(key)).await
    }

    async fn opened(
        &self,
        input: &OpenAccount,
        key: Option<&IdempotencyKey>,
    ) -> Result<Created<AccountEvent>, ClientError> {
        let call = Call::new("open_account", Method::POST, "/accounts").json(input)?;
        self.client.create(call, key).await
    }

    /// `GET /accounts`: one page, by account id.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let page = api.accounts().list(client::PageRequest::new(50, 0)).await?;
    /// # let _ = page; Ok(()) }
    /// ```
    pub async fn list(&self, page: PageRequest) -> Result<Page<Account>, ClientError> {
        let call = Call::new("list_accounts", Method::GET, "/accounts").query(page.query());
        Ok(self.client.fetch(call, StatusCode::OK).await?.0)
    }

    /// Every account, by account id, read `limit` (1 to 100) at a time.
    ///
    /// ```no_run
    /// use client::TryStreamExt;
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let total: i64 = api.accounts().stream(100).try_fold(0, |sum, a| async move { Ok(sum + a.balance_cents) }).await?;
    /// # let _ = total; Ok(()) }
    /// ```
    pub fn stream(
        &self,
        limit: u32,
    ) -> impl Stream<Item = Result<Account, ClientError>> + Send + 'static {
        self.client
            .offset_stream("list_accounts", "/accounts".to_owned(), limit)
    }

    fn item(id: &str) -> Result<Call, ClientError> {
        Ok(Call::new(
            "get_account",
            Method::GET,
            path("get_account", id, "")?,
        ))
    }

    /// `GET /accounts/{id}`: the current state.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let account = api.accounts().get("acc-1").await?;
    /// # let _ = account; Ok(()) }
    /// ```
    pub async fn get(&self, id: &str) -> Result<Account, ClientError> {
        Ok(self.client.fetch(Self::item(id)?, StatusCode::OK).await?.0)
    }

    /// `GET /accounts/{id}` with its `ETag` (`"N"`, N its last sequence).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let seen = api.accounts().get_tagged("acc-1").await?;
    /// assert_eq!(seen.etag, seen.value.etag());
    /// # Ok(()) }
    /// ```
    pub async fn get_tagged(&self, id: &str) -> Result<Tagged<Account>, ClientError> {
        self.client
            .fetch_tagged(Self::item(id)?, StatusCode::OK)
            .await
    }

    /// `GET /accounts/{id}` only if an event was appended since `etag` (`None` on 304).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let seen = api.accounts().get_tagged("acc-1").await?;
    /// let changed = api.accounts().get_if_none_match("acc-1", &seen.etag).await?;
    /// # let _ = changed; Ok(()) }
    /// ```
    pub async fn get_if_none_match(
        &self,
        id: &str,
        etag: &ETag,
    ) -> Result<Option<Tagged<Account>>, ClientError> {
        self.client.fetch_if_none_match(Self::item(id)?, etag).await
    }

    /// `GET /accounts/{id}/events`: one page, sequence ascending.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let page = api.accounts().events("acc-1", client::EventsRequest { after_sequence: Some(1), limit: Some(10) }).await?;
    /// # let _ = page; Ok(()) }
    /// ```
    pub async fn events(
        &self,
        id: &str,
        page: EventsRequest,
    ) -> Result<AccountEventList, ClientError> {
        events_page(self.client, id, page).await
    }

    /// Every event of the account, sequence ascending, read `limit` (1 to 1,000) at a time
    /// (following `next_cursor`).
    ///
    /// ```no_run
    /// use client::TryStreamExt;
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let history: Vec<client::AccountEvent> = api.accounts().event_stream("acc-1", 1000).try_collect().await?;
    /// # let _ = history; Ok(()) }
    /// ```
    pub fn event_stream(
        &self,
        id: &str,
        limit: u32,
    ) -> impl Stream<Item = Result<AccountEvent, ClientError>> + Send + 'static {
        let (client, id) = (self.client.clone(), id.to_owned());
        walk(LIST_EVENTS, 0i64, move |after| {
            let (client, id) = (client.clone(), id.clone());
            async move {
                let page = EventsRequest {
                    after_sequence: Some(after),
                    limit: Some(limit),
                };
                let page = events_page(&client, &id, page).await?;
                Ok((page.items, page.next_cursor))
            }
        })
    }

    /// `POST /accounts/{id}/events` under a fresh random `Idempotency-Key` (so retried
    /// safely). Refusals: 422 `insufficient-funds`, 409 `account-closed`, and 409 `conflict`
    /// for a stale [`expected_sequence`](NewEvent::expecting); nothing is written then.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let event = api.accounts().append("acc-1", &client::NewEvent::deposit(500)).await?;
    /// # let _ = event; Ok(()) }
    /// ```
    pub async fn append(&self, id: &str, event: &NewEvent) -> Result<AccountEvent, ClientError> {
        let call = self.append_call(id, event)?;
        Ok(self.client.create(call, None).await?.value)
    }

    /// `POST /accounts/{id}/events` under the caller's `key` (the same key with another body
    /// is 422 `idempotency-key-reused`).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let key = client::IdempotencyKey::new("invoice-77")?;
    /// let paid = api.accounts().append_with_key("acc-1", &client::NewEvent::deposit(500), &key).await?;
    /// println!("replayed: {}", paid.replayed);
    /// # Ok(()) }
    /// ```
    pub async fn append_with_key(
        &self,
        id: &str,
        event: &NewEvent,
        key: &IdempotencyKey,
    ) -> Result<Created<AccountEvent>, ClientError> {
        let call = self.append_call(id, event)?;
        self.client.create(call, Some(key)).await
    }

    /// `POST /accounts/{id}/events` only while the account is at `etag` (from
    /// [`get_tagged`](Self::get_tagged) or [`Account::etag`]); otherwise 412
    /// `precondition-failed` and nothing is written.
    ///
    /// ```no_run
    /// use client::{NewEvent, Slug};
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let seen = api.accounts().get_tagged("acc-1").await?;
    /// match api.accounts().append_if_match("acc-1", &seen.etag, &NewEvent::withdraw(100)).await {
    ///     Err(e) if e.is(Slug::PreconditionFailed) => println!("someone else moved money"),
    ///     other => { other?; }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn append_if_match(
        &self,
        id: &str,
        etag: &ETag,
        event: &NewEvent,
    ) -> Result<AccountEvent, ClientError> {
        let call = self.append_call(id, event)?.if_match(etag)?;
        Ok(self.client.create(call, None).await?.value)
    }

    /// `POST /transfers`: both events or neither, once per `key` (a random key when `None`,
    /// so that the client's own retries cannot move the money twice).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let moved = api.accounts().transfer(&client::NewTransfer::new("a", "b", 250), None).await?;
    /// println!("{}: #{} and #{}", moved.value.transfer_id, moved.value.withdrawn.sequence, moved.value.deposited.sequence);
    /// # Ok(()) }
    /// ```
    pub async fn transfer(
        &self,
        transfer: &NewTransfer,
        key: Option<&IdempotencyKey>,
    ) -> Result<Created<Transfer>, ClientError> {
        let call = Call::new("create_transfer", Method::POST, "/transfers").json(transfer)?;
        self.client.create(call, key).await
    }

    /// A live subscription to the account's events (`GET /accounts/{id}/events/stream`):
    /// every event after sequence `after` (all of them without), then each new one as it is
    /// committed; it reconnects and resumes by itself ([`Subscription`]).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let mut events = api.accounts().subscribe("acc-1", Some(2))?;
    /// let third = events.next().await?;
    /// assert_eq!(third.event.sequence, 3);
    /// # Ok(()) }
    /// ```
    pub fn subscribe(&self, id: &str, after: Option<i64>) -> Result<Subscription, ClientError> {
        let op = "stream_account_events";
        let path = path(op, id, "/events/stream")?;
        let after = after.map(|n| n.to_string());
        Ok(Subscription::new(self.client.clone(), op, path, after))
    }

    /// A live subscription to every account's events in commit order (`GET /events/stream`,
    /// the operator's): after `after` (a [`StreamedEvent::id`] it returned before; the
    /// beginning without), then each new one as it is committed.
    pub fn subscribe_all(&self, after: Option<&str>) -> Subscription {
        let (op, path) = ("stream_all_events", "/events/stream".to_owned());
        Subscription::new(self.client.clone(), op, path, after.map(str::to_owned))
    }

    fn append_call(&self, id: &str, event: &NewEvent) -> Result<Call, ClientError> {
        let path = path("append_event", id, "/events")?;
        Call::new("append_event", Method::POST, path).json(event)
    }
}

impl Client {
    /// Accounts (see [`Accounts`]).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let account = api.accounts().get("acc-1").await?;
    /// # let _ = account; Ok(()) }
    /// ```
    pub fn accounts(&self) -> Accounts<'_> {
        Accounts { client: self }
    }
}
