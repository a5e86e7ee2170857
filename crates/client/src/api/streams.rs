//! Live event subscriptions (Server-Sent Events) that resume by themselves:
//! [`Accounts::subscribe`](crate::Accounts::subscribe) and
//! [`Accounts::subscribe_all`](crate::Accounts::subscribe_all).

use std::time::Duration;

use futures_util::Stream;

use crate::error::ClientError;
use crate::transport::{Call, Client, Opened};
use crate::types::AccountEvent;

/// An event of a subscription: where it stands in its stream (`id`, what a reconnect sends as
/// `Last-Event-ID`: the sequence on an account's stream, the feed position on the feed of
/// every account) and the event.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamedEvent {
    pub id: String,
    pub event: AccountEvent,
}

/// A live stream of account events that reconnects by itself and resumes after the last event
/// it returned, so that nothing is lost or repeated: when the server ends the stream (its
/// `end` event, at the latest after 15 minutes), when the connection drops or stays silent
/// past [`Subscription::idle_limit`] (the server sends a heartbeat every 15 s), or when the
/// server answers 429 or 5xx. It gives up, returning the error, after the client's
/// [`RetryPolicy`](crate::RetryPolicy) attempts fail in a row; a 4xx (an unknown account, a
/// token without the right) is returned at once.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let mut events = api.accounts().subscribe("acc-1", None)?;
/// loop {
///     let next = events.next().await?;
///     println!("#{} {:?}", next.id, next.event.event_type);
/// }
/// # }
/// ```
pub struct Subscription {
    client: Client,
    op: &'static str,
    path: String,
    last_event_id: Option<String>,
    body: Option<reqwest::Response>,
    /// Bytes received and not yet taken as messages (a chunk may end inside a character).
    buffer: Vec<u8>,
    idle_limit: Duration,
    failures: u32,
}

/// One message of the stream's text.
#[derive(Debug, Default, PartialEq)]
struct Message {
    event: Option<String>,
    id: Option<String>,
    data: String,
}

impl Subscription {
    pub(crate) fn new(
        client: Client,
        op: &'static str,
        path: String,
        after: Option<String>,
    ) -> Subscription {
        Subscription {
            client,
            op,
            path,
            last_event_id: after,
            body: None,
            buffer: Vec::new(),
            idle_limit: Duration::from_secs(45),
            failures: 0,
        }
    }

    /// How long the stream may stay silent (no event, no heartbeat) before it is taken for
    /// dead and opened again: 45 s by default, three of the server's heartbeats.
    pub fn idle_limit(mut self, limit: Duration) -> Self {
        self.idle_limit = limit;
        self
    }

    /// The `id` of the last event returned: where this subscription (or a new one, given it
    /// as `after`) goes on.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The next event, however long it takes to come (see [`Subscription`] for the
    /// reconnects).
    pub async fn next(&mut self) -> Result<StreamedEvent, ClientError> {
        loop {
            if let Some(message) = take_message(&mut self.buffer, self.op)? {
                match message.event.as_deref() {
                    None => return self.event(message),
                    // The server ends every stream in time: go on from the last event.
                    Some("end") => self.body = None,
                    // A failed read on the server's side: again, after a pause.
                    Some("error") => self.failed(None).await?,
                    Some(_) => {}
                }
                continue;
            }
            let Some(body) = self.body.as_mut() else {
                self.connect().await?;
                continue;
            };
            match tokio::time::timeout(self.idle_limit, body.chunk()).await {
                Ok(Ok(Some(chunk))) => {
                    if self.buffer.len() + chunk.len() > MAX_MESSAGE_BYTES {
                        let why = "a stream message exceeds 16 MiB";
                        return Err(ClientError::invalid(self.op, why));
                    }
                    self.buffer.extend_from_slice(&chunk);
                }
                // Ended without its `end` event, broke, or went silent: open it again.
                Ok(Ok(None)) | Ok(Err(_)) | Err(_) => self.failed(None).await?,
            }
        }
    }

    /// The subscription as a [`Stream`] of its events (it ends after the first error).
    pub fn into_stream(self) -> impl Stream<Item = Result<StreamedEvent, ClientError>> {
        futures_util::stream::unfold(Some(self), |state| async move {
            let mut subscription = state?;
            match subscription.next().await {
                Ok(event) => Some((Ok(event), Some(subscription))),
                Err(err) => Some((Err(err), None)),
            }
        })
    }

    fn event(&mut self, message: Message) -> Result<StreamedEvent, ClientError> {
        let id = message
            .id
            .ok_or_else(|| ClientError::invalid(self.op, "an event without an id"))?;
        let event: AccountEvent = serde_json::from_str(&message.data)
            .map_err(|e| ClientError::invalid(self.op, format!("an event's data: {e}")))?;
        self.last_event_id = Some(id.clone());
        self.failures = 0;
        Ok(StreamedEvent { id, event })
    }

    /// Opens the stream after the last event returned.
    async fn connect(&mut self) -> Result<(), ClientError> {
        self.buffer.clear();
        let mut call = Call::new(self.op, reqwest::Method::GET, self.path.clone());
        if let Some(id) = &self.last_event_id {
            call = call.header("last-event-id", id)?;
        }
        // The answer's head within the idle limit too: a server that accepts and says nothing
        // is tried again.
        let opened =
            match tokio::time::timeout(self.idle_limit, self.client.open_stream(&call)).await {
                Ok(opened) => opened,
                Err(_) => return self.failed(None).await,
            };
        match opened {
            Ok(Opened::Stream(body)) => self.body = Some(body),
            Ok(Opened::Refused(reply)) => {
                let status = reply.status.as_u16();
                let error = reply.error();
                if status != 429 && !reply.status.is_server_error() {
                    return Err(error);
                }
                self.failed(Some(error)).await?;
            }
            Err(source) => {
                let error = ClientError::Transport {
                    operation: self.op,
                    source,
                };
                self.failed(Some(error)).await?;
            }
        }
        Ok(())
    }

    /// One more failure in a row: drops the connection and waits the backoff, or gives up
    /// with `error` once the retry policy's attempts are spent.
    async fn failed(&mut self, error: Option<ClientError>) -> Result<(), ClientError> {
        self.body = None;
        self.failures += 1;
        let policy = self.client.retry_policy();
        if self.failures >= policy.max_attempts.max(1) {
            return Err(error.unwrap_or_else(|| {
                ClientError::invalid(self.op, "the stream broke off on every attempt")
            }));
        }
        tokio::time::sleep(policy.backoff(self.failures)).await;
        Ok(())
    }
}

/// The most a subscription holds of one message before it gives up on the stream.
const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// Takes the first whole message (up to a blank line) off `buffer`, skipping comments
/// (heartbeats) and `retry` lines; a whole message that is not UTF-8 is an error.
fn take_message(buffer: &mut Vec<u8>, op: &'static str) -> Result<Option<Message>, ClientError> {
    loop {
        let Some(end) = buffer.windows(2).position(|w| w == b"\n\n") else {
            return Ok(None);
        };
        let block: Vec<u8> = buffer.drain(..end + 2).collect();
        let block = String::from_utf8(block)
            .map_err(|_| ClientError::invalid(op, "a stream message is not UTF-8"))?;
        let mut message = Message::default();
        let mut has_data = false;
        for line in block.lines() {
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => message.event = Some(value.to_owned()),
                "id" => message.id = Some(value.to_owned()),
                "data" => {
                    if has_data {
                        message.data.push('\n');
                    }
                    message.data.push_str(value);
                    has_data = true;
                }
                _ => {}
            }
        }
        if has_data {
            return Ok(Some(message));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_cut_at_blank_lines_and_heartbeats_skipped() {
        let mut buffer = b"retry: 1000\n\n: heartbeat\n\nid: 3\ndata: {\"a\":1}\n\nevent: end\ndata: {}\n\nid: 4\nda"
            .to_vec();
        let first = take_message(&mut buffer, "op").unwrap().unwrap();
        assert_eq!(
            first,
            Message {
                event: None,
                id: Some("3".into()),
                data: "{\"a\":1}".into()
            }
        );
        let end = take_message(&mut buffer, "op").unwrap().unwrap();
        assert_eq!(end.event.as_deref(), Some("end"));
        assert_eq!(
            take_message(&mut buffer, "op").unwrap(),
            None,
            "the last one is not whole yet"
        );
        assert_eq!(buffer, b"id: 4\nda");
    }

    /// A character split between two chunks is whole once both are in.
    #[test]
    fn a_character_split_across_chunks_is_read_whole() {
        let text = "id: 1\ndata: {\"owner\":\"Zoë\"}\n\n".as_bytes();
        let split = text.iter().position(|b| *b >= 0x80).unwrap() + 1;
        let mut buffer = text[..split].to_vec();
        assert_eq!(take_message(&mut buffer, "op").unwrap(), None);
        buffer.extend_from_slice(&text[split..]);
        let message = take_message(&mut buffer, "op").unwrap().unwrap();
        assert_eq!(message.data, "{\"owner\":\"Zoë\"}");
    }
}
