//! Versioned notes (area C): `/v1/notes` (deprecated: every answer comes with its warning) and
//! `/v2/notes`, one store behind both.

use reqwest::{Method, StatusCode};

use crate::conditional::{ETag, Tagged};
use crate::deprecation::Deprecated;
use crate::error::ClientError;
use crate::idempotency::{Created, IdempotencyKey};
use crate::transport::{Call, Client};
use crate::types::{
    Envelope, NoteV1, NoteV1Input, NoteV1List, NoteV2, NoteV2Input, NoteV2List, PageRequest,
};

/// `/v1/notes`, deprecated: every method answers [`Deprecated<T>`], the value plus the warning
/// (`Deprecation`, `Sunset`, the successor) its response carried. Made by [`Client::v1_notes`].
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let made = api.v1_notes().create(&client::NoteV1Input::new("old")).await?;
/// assert!(made.warning.is_some());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct V1Notes<'a> {
    client: &'a Client,
}

impl V1Notes<'_> {
    async fn deprecated<T: serde::de::DeserializeOwned>(
        &self,
        call: Call,
    ) -> Result<Deprecated<T>, ClientError> {
        let (value, reply) = self.client.fetch(call, StatusCode::OK).await?;
        Ok(Deprecated::from_reply(value, &reply))
    }

    /// `GET /v1/notes`: id descending.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let list = api.v1_notes().list(client::PageRequest::new(5, 0)).await?;
    /// println!("{} notes", list.value.notes.len());
    /// # Ok(()) }
    /// ```
    pub async fn list(&self, page: PageRequest) -> Result<Deprecated<NoteV1List>, ClientError> {
        let call = Call::new("list_notes_v1", Method::GET, "/v1/notes").query(page.query());
        self.deprecated(call).await
    }

    /// `POST /v1/notes`, under a fresh random `Idempotency-Key` (so retried safely).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let note = api.v1_notes().create(&client::NoteV1Input::new("t").content("c")).await?.value;
    /// # let _ = note; Ok(()) }
    /// ```
    pub async fn create(&self, input: &NoteV1Input) -> Result<Deprecated<NoteV1>, ClientError> {
        let made = self.created(input, None).await?;
        Ok(Deprecated {
            value: made.value.value,
            warning: made.warning,
        })
    }

    /// `POST /v1/notes` under the caller's `key`.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let key = client::IdempotencyKey::new("v1-import-3")?;
    /// let made = api.v1_notes().create_with_key(&client::NoteV1Input::new("t"), &key).await?;
    /// println!("replayed: {}", made.value.replayed);
    /// # Ok(()) }
    /// ```
    pub async fn create_with_key(
        &self,
        input: &NoteV1Input,
        key: &IdempotencyKey,
    ) -> Result<Deprecated<Created<NoteV1>>, ClientError> {
        self.created(input, Some(key)).await
    }

    async fn created(
        &self,
        input: &NoteV1Input,
        key: Option<&IdempotencyKey>,
    ) -> Result<Deprecated<Created<NoteV1>>, ClientError> {
        let call = Call::new("create_note_v1", Method::POST, "/v1/notes").json(input)?;
        let (made, reply) = self.client.create_reply(call, key).await?;
        Ok(Deprecated::from_reply(made, &reply))
    }

    /// `GET /v1/notes/{id}`.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let note = api.v1_notes().get(1).await?.value;
    /// # let _ = note; Ok(()) }
    /// ```
    pub async fn get(&self, id: i64) -> Result<Deprecated<NoteV1>, ClientError> {
        let call = Call::new("get_note_v1", Method::GET, format!("/v1/notes/{id}"));
        self.deprecated(call).await
    }
}

/// `/v2/notes`: the current API of the versioned notes. Made by [`Client::v2_notes`].
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let note = api.v2_notes().create(&client::NoteV2Input::new("t").tags(["a"])).await?;
/// assert_eq!(api.v2_notes().get(note.id).await?, note);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct V2Notes<'a> {
    client: &'a Client,
}

impl V2Notes<'_> {
    fn item(id: i64) -> Call {
        Call::new("get_note_v2", Method::GET, format!("/v2/notes/{id}"))
    }

    /// `GET /v2/notes`: id descending, with `meta`.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let list = api.v2_notes().list(client::PageRequest::new(10, 0)).await?;
    /// println!("{} of {}", list.data.len(), list.meta.total);
    /// # Ok(()) }
    /// ```
    pub async fn list(&self, page: PageRequest) -> Result<NoteV2List, ClientError> {
        let call = Call::new("list_notes_v2", Method::GET, "/v2/notes").query(page.query());
        Ok(self.client.fetch(call, StatusCode::OK).await?.0)
    }

    /// `POST /v2/notes`, under a fresh random `Idempotency-Key` (so retried safely).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let note = api.v2_notes().create(&client::NoteV2Input::new("t").body("b")).await?;
    /// # let _ = note; Ok(()) }
    /// ```
    pub async fn create(&self, input: &NoteV2Input) -> Result<NoteV2, ClientError> {
        Ok(self.created(input, None).await?.value)
    }

    /// `POST /v2/notes` under the caller's `key`.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let key = client::IdempotencyKey::new("v2-import-3")?;
    /// let made = api.v2_notes().create_with_key(&client::NoteV2Input::new("t"), &key).await?;
    /// # let _ = made; Ok(()) }
    /// ```
    pub async fn create_with_key(
        &self,
        input: &NoteV2Input,
        key: &IdempotencyKey,
    ) -> Result<Created<NoteV2>, ClientError> {
        self.created(input, Some(key)).await
    }

    async fn created(
        &self,
        input: &NoteV2Input,
        key: Option<&IdempotencyKey>,
    ) -> Result<Created<NoteV2>, ClientError> {
        let call = Call::new("create_note_v2", Method::POST, "/v2/notes").json(input)?;
        let made: Created<Envelope<NoteV2>> = self.client.create(call, key).await?;
        Ok(made.map(|e| e.data))
    }

    /// `GET /v2/notes/{id}`.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let note = api.v2_notes().get(1).await?;
    /// # let _ = note; Ok(()) }
    /// ```
    pub async fn get(&self, id: i64) -> Result<NoteV2, ClientError> {
        let (note, _): (Envelope<NoteV2>, _) =
            self.client.fetch(Self::item(id), StatusCode::OK).await?;
        Ok(note.data)
    }

    /// `GET /v2/notes/{id}` with its `ETag`.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let tagged = api.v2_notes().get_tagged(1).await?;
    /// # let _ = tagged; Ok(()) }
    /// ```
    pub async fn get_tagged(&self, id: i64) -> Result<Tagged<NoteV2>, ClientError> {
        let note: Tagged<Envelope<NoteV2>> = self
            .client
            .fetch_tagged(Self::item(id), StatusCode::OK)
            .await?;
        Ok(note.map(|e| e.data))
    }

    /// `GET /v2/notes/{id}` only if it changed since `etag` (`None` on 304).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let seen = api.v2_notes().get_tagged(1).await?;
    /// assert!(api.v2_notes().get_if_none_match(1, &seen.etag).await?.is_none());
    /// # Ok(()) }
    /// ```
    pub async fn get_if_none_match(
        &self,
        id: i64,
        etag: &ETag,
    ) -> Result<Option<Tagged<NoteV2>>, ClientError> {
        let note: Option<Tagged<Envelope<NoteV2>>> = self
            .client
            .fetch_if_none_match(Self::item(id), etag)
            .await?;
        Ok(note.map(|t| t.map(|e| e.data)))
    }
}

impl Client {
    /// `/v1/notes` (deprecated; see [`V1Notes`]).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let note = api.v1_notes().get(1).await?;
    /// # let _ = note; Ok(()) }
    /// ```
    pub fn v1_notes(&self) -> V1Notes<'_> {
        V1Notes { client: self }
    }

    /// `/v2/notes` (see [`V2Notes`]).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let note = api.v2_notes().get(1).await?;
    /// # let _ = note; Ok(()) }
    /// ```
    pub fn v2_notes(&self) -> V2Notes<'_> {
        V2Notes { client: self }
    }
}
