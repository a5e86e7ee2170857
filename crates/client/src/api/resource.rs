//! One generic handle for the five-operation collections (notes, tags, comments and their
//! `/examples` aliases): list, create, get, replace, delete, with their conditional and
//! idempotent variants.

use std::marker::PhantomData;

use futures_util::Stream;
use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::conditional::{ETag, Tagged};
use crate::error::ClientError;
use crate::idempotency::{Created, IdempotencyKey};
use crate::transport::{Call, Client};
use crate::types::{Comment, CommentInput, Note, NoteInput, Page, PageRequest, Tag, TagInput};

/// The `operationId`s of one resource's five operations.
///
/// ```no_run
/// # fn run(api: client::Client) {
/// println!("{:?}", api.notes()); // shows the operation ids it calls
/// # }
/// ```
#[derive(Debug)]
pub struct Operations {
    pub list: &'static str,
    pub create: &'static str,
    pub get: &'static str,
    pub update: &'static str,
    pub delete: &'static str,
}

const NOTES: Operations = Operations {
    list: "list_notes",
    create: "create_note",
    get: "get_note",
    update: "update_note",
    delete: "delete_note",
};
const EXAMPLE_NOTES: Operations = Operations {
    list: "example_list_notes",
    create: "example_create_note",
    get: "example_get_note",
    update: "example_update_note",
    delete: "example_delete_note",
};
const TAGS: Operations = Operations {
    list: "list_tags",
    create: "create_tag",
    get: "get_tag",
    update: "update_tag",
    delete: "delete_tag",
};
const EXAMPLE_TAGS: Operations = Operations {
    list: "example_list_tags",
    create: "example_create_tag",
    get: "example_get_tag",
    update: "example_update_tag",
    delete: "example_delete_tag",
};
const COMMENTS: Operations = Operations {
    list: "list_comments",
    create: "create_comment",
    get: "get_comment",
    update: "update_comment",
    delete: "delete_comment",
};

/// A collection with list, create, get, update and delete: `T` is the resource, `I` its
/// input. Made by [`Client::notes`], [`Client::tags`], [`Client::comments`] and the
/// `example_*` variants.
///
/// ```no_run
/// use client::{NoteInput, PageRequest};
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let notes = api.notes();
/// let note = notes.create(&NoteInput::new("t", "b")).await?;
/// let page = notes.list(PageRequest::new(10, 0)).await?;
/// notes.delete(note.id).await?;
/// # let _ = page; Ok(()) }
/// ```
#[derive(Debug)]
pub struct Resource<'a, T, I> {
    client: &'a Client,
    path: String,
    ops: &'static Operations,
    _types: PhantomData<fn() -> (T, I)>,
}

/// `/notes` (or `/examples/notes`).
///
/// ```no_run
/// # fn run(api: client::Client) {
/// let notes: client::Notes<'_> = api.notes();
/// # let _ = notes; }
/// ```
pub type Notes<'a> = Resource<'a, Note, NoteInput>;
/// `/tags` (or `/examples/tags`).
///
/// ```no_run
/// # fn run(api: client::Client) {
/// let tags: client::Tags<'_> = api.example_tags();
/// # let _ = tags; }
/// ```
pub type Tags<'a> = Resource<'a, Tag, TagInput>;
/// `/notes/{note_id}/comments`.
///
/// ```no_run
/// # fn run(api: client::Client) {
/// let comments: client::Comments<'_> = api.comments(1);
/// # let _ = comments; }
/// ```
pub type Comments<'a> = Resource<'a, Comment, CommentInput>;

impl<T: DeserializeOwned + Send + 'static, I: Serialize> Resource<'_, T, I> {
    fn item(&self, op: &'static str, method: Method, id: i64) -> Call {
        Call::new(op, method, format!("{}/{id}", self.path))
    }

    /// One page of the collection, by id ascending.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let page = api.tags().list(client::PageRequest::new(100, 0)).await?;
    /// # let _ = page; Ok(()) }
    /// ```
    pub async fn list(&self, page: PageRequest) -> Result<Page<T>, ClientError> {
        let call = Call::new(self.ops.list, Method::GET, &self.path).query(page.query());
        Ok(self.client.fetch(call, StatusCode::OK).await?.0)
    }

    /// Every item, by id ascending, read `limit` (1 to 100) at a time, following `next_offset`.
    ///
    /// ```no_run
    /// use client::TryStreamExt;
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let every_tag: Vec<client::Tag> = api.tags().stream(100).try_collect().await?;
    /// # let _ = every_tag; Ok(()) }
    /// ```
    pub fn stream(
        &self,
        limit: u32,
    ) -> impl Stream<Item = Result<T, ClientError>> + Send + 'static {
        self.client
            .offset_stream(self.ops.list, self.path.clone(), limit)
    }

    /// Creates an item (201) under a fresh random `Idempotency-Key`, so that it is retried
    /// safely: the service writes it once however many attempts reach it.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let tag = api.tags().create(&client::TagInput::new("rust")).await?;
    /// # let _ = tag; Ok(()) }
    /// ```
    pub async fn create(&self, input: &I) -> Result<T, ClientError> {
        Ok(self.created(input, None).await?.value)
    }

    /// Creates an item under the caller's `key`: the same key and body again answer the
    /// first item ([`Created::replayed`]); another body is 422 `idempotency-key-reused`.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let key = client::IdempotencyKey::new("tag-rust")?;
    /// let made = api.tags().create_with_key(&client::TagInput::new("rust"), &key).await?;
    /// println!("replayed: {}, etag: {:?}", made.replayed, made.etag);
    /// # Ok(()) }
    /// ```
    pub async fn create_with_key(
        &self,
        input: &I,
        key: &IdempotencyKey,
    ) -> Result<Created<T>, ClientError> {
        self.created(input, Some(key)).await
    }

    async fn created(
        &self,
        input: &I,
        key: Option<&IdempotencyKey>,
    ) -> Result<Created<T>, ClientError> {
        let call = Call::new(self.ops.create, Method::POST, &self.path).json(input)?;
        self.client.create(call, key).await
    }

    /// One item.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let note = api.notes().get(1).await?;
    /// # let _ = note; Ok(()) }
    /// ```
    pub async fn get(&self, id: i64) -> Result<T, ClientError> {
        let call = self.item(self.ops.get, Method::GET, id);
        Ok(self.client.fetch(call, StatusCode::OK).await?.0)
    }

    /// One item with its `ETag`, for a later conditional write.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let tagged = api.notes().get_tagged(1).await?;
    /// println!("{}", tagged.etag);
    /// # Ok(()) }
    /// ```
    pub async fn get_tagged(&self, id: i64) -> Result<Tagged<T>, ClientError> {
        let call = self.item(self.ops.get, Method::GET, id);
        self.client.fetch_tagged(call, StatusCode::OK).await
    }

    /// The item only if it changed since `etag`: `None` when the service answers 304.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let cached = api.notes().get_tagged(1).await?;
    /// match api.notes().get_if_none_match(1, &cached.etag).await? {
    ///     None => println!("unchanged"),
    ///     Some(fresh) => println!("now {}", fresh.value.title),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn get_if_none_match(
        &self,
        id: i64,
        etag: &ETag,
    ) -> Result<Option<Tagged<T>>, ClientError> {
        let call = self.item(self.ops.get, Method::GET, id);
        self.client.fetch_if_none_match(call, etag).await
    }

    /// Replaces an item (200), whatever its current state.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// api.notes().update(1, &client::NoteInput::new("t2", "b2")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn update(&self, id: i64, input: &I) -> Result<T, ClientError> {
        let call = self.item(self.ops.update, Method::PUT, id).json(input)?;
        Ok(self.client.fetch(call, StatusCode::OK).await?.0)
    }

    /// Replaces an item only while it is still at `etag`; otherwise 412
    /// `precondition-failed` and nothing is written (someone else edited it: read it again).
    /// Answers the new state and its tag. A retry after a lost answer can meet its own write
    /// and report 412: read the item to see whether the edit is there.
    ///
    /// ```no_run
    /// use client::{NoteInput, Slug};
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let seen = api.notes().get_tagged(1).await?;
    /// match api.notes().update_if_match(1, &seen.etag, &NoteInput::new("t", "b")).await {
    ///     Err(e) if e.is(Slug::PreconditionFailed) => println!("changed meanwhile"),
    ///     other => { other?; }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn update_if_match(
        &self,
        id: i64,
        etag: &ETag,
        input: &I,
    ) -> Result<Tagged<T>, ClientError> {
        let call = self
            .item(self.ops.update, Method::PUT, id)
            .if_match(etag)?
            .json(input)?;
        self.client.fetch_tagged(call, StatusCode::OK).await
    }

    /// Deletes an item (204).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// api.tags().delete(3).await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete(&self, id: i64) -> Result<(), ClientError> {
        let call = self.item(self.ops.delete, Method::DELETE, id);
        self.client.fetch_empty(call, StatusCode::NO_CONTENT).await
    }

    /// Deletes an item only while it is still at `etag` (else 412 `precondition-failed`).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let seen = api.tags().get_tagged(3).await?;
    /// api.tags().delete_if_match(3, &seen.etag).await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete_if_match(&self, id: i64, etag: &ETag) -> Result<(), ClientError> {
        let call = self
            .item(self.ops.delete, Method::DELETE, id)
            .if_match(etag)?;
        self.client.fetch_empty(call, StatusCode::NO_CONTENT).await
    }
}

impl Client {
    fn resource<T, I>(&self, path: String, ops: &'static Operations) -> Resource<'_, T, I> {
        Resource {
            client: self,
            path,
            ops,
            _types: PhantomData,
        }
    }

    /// `/notes`.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let note = api.notes().create(&client::NoteInput::new("t", "b")).await?;
    /// # let _ = note; Ok(()) }
    /// ```
    pub fn notes(&self) -> Notes<'_> {
        self.resource("/notes".to_owned(), &NOTES)
    }

    /// `/examples/notes`: the same store as [`Client::notes`].
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let note = api.example_notes().get(1).await?;
    /// # let _ = note; Ok(()) }
    /// ```
    pub fn example_notes(&self) -> Notes<'_> {
        self.resource("/examples/notes".to_owned(), &EXAMPLE_NOTES)
    }

    /// `/tags`.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let tag = api.tags().get(1).await?;
    /// # let _ = tag; Ok(()) }
    /// ```
    pub fn tags(&self) -> Tags<'_> {
        self.resource("/tags".to_owned(), &TAGS)
    }

    /// `/examples/tags`: the same store as [`Client::tags`].
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let tags = api.example_tags().list(Default::default()).await?;
    /// # let _ = tags; Ok(()) }
    /// ```
    pub fn example_tags(&self) -> Tags<'_> {
        self.resource("/examples/tags".to_owned(), &EXAMPLE_TAGS)
    }

    /// `/notes/{note_id}/comments`.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let comment = api.comments(1).create(&client::CommentInput::new("nice")).await?;
    /// # let _ = comment; Ok(()) }
    /// ```
    pub fn comments(&self, note_id: i64) -> Comments<'_> {
        self.resource(format!("/notes/{note_id}/comments"), &COMMENTS)
    }
}
