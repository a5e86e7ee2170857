//! Notes, tags and comments (area A) and the versioned notes of `/v1` and `/v2` (area C).

use serde::{Deserialize, Serialize};

/// A note (schema `NoteDto`).
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let note: client::Note = api.notes().get(1).await?;
/// println!("{}: {}", note.title, note.body);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Note {
    pub id: i64,
    pub title: String,
    pub body: String,
}

/// Create or replace a note (schema `NoteBody`): both non-blank.
///
/// ```
/// let input = client::NoteInput::new("Groceries", "milk, eggs");
/// assert_eq!(input.title, "Groceries");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NoteInput {
    pub title: String,
    pub body: String,
}

impl NoteInput {
    /// A note with this title and body.
    ///
    /// ```
    /// assert_eq!(client::NoteInput::new("t", "b").body, "b");
    /// ```
    pub fn new(title: impl Into<String>, body: impl Into<String>) -> Self {
        NoteInput {
            title: title.into(),
            body: body.into(),
        }
    }
}

/// A tag (schema `TagDto`).
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let tag: client::Tag = api.tags().create(&client::TagInput::new("rust")).await?;
/// assert_eq!(tag.name, "rust");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Tag {
    pub id: i64,
    pub name: String,
}

/// Create or rename a tag (schema `TagBody`): a unique, non-blank name.
///
/// ```
/// assert_eq!(client::TagInput::new("rust").name, "rust");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TagInput {
    pub name: String,
}

impl TagInput {
    /// A tag named `name`.
    ///
    /// ```
    /// let _ = client::TagInput::new("go");
    /// ```
    pub fn new(name: impl Into<String>) -> Self {
        TagInput { name: name.into() }
    }
}

/// A comment on a note (schema `CommentDto`).
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let comment: client::Comment = api.comments(1).get(2).await?;
/// assert_eq!(comment.note_id, 1);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Comment {
    pub id: i64,
    pub note_id: i64,
    pub body: String,
}

/// Create or replace a comment (schema `CommentBody`).
///
/// ```
/// assert_eq!(client::CommentInput::new("nice").body, "nice");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommentInput {
    pub body: String,
}

impl CommentInput {
    /// A comment saying `body`.
    ///
    /// ```
    /// let _ = client::CommentInput::new("first!");
    /// ```
    pub fn new(body: impl Into<String>) -> Self {
        CommentInput { body: body.into() }
    }
}

/// A V1 note (`/v1/notes`, deprecated): the body text is called `content`.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let note: client::NoteV1 = api.v1_notes().get(1).await?.value;
/// println!("{} ({})", note.content, note.created_at);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NoteV1 {
    pub id: i64,
    pub title: String,
    pub content: String,
    pub created_at: String,
}

/// Create a V1 note (schema `NoteV1Body`); `content` absent means `""`.
///
/// ```
/// let input = client::NoteV1Input::new("old").content("style");
/// assert_eq!(input.content.as_deref(), Some("style"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NoteV1Input {
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

impl NoteV1Input {
    /// A V1 note with this title and no content.
    ///
    /// ```
    /// assert_eq!(client::NoteV1Input::new("t").content, None);
    /// ```
    pub fn new(title: impl Into<String>) -> Self {
        NoteV1Input {
            title: title.into(),
            content: None,
        }
    }

    /// With this content.
    ///
    /// ```
    /// let _ = client::NoteV1Input::new("t").content("c");
    /// ```
    pub fn content(mut self, content: impl Into<String>) -> Self {
        self.content = Some(content.into());
        self
    }
}

/// `GET /v1/notes`: `{"notes": [...]}`, id descending.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let list: client::NoteV1List = api.v1_notes().list(Default::default()).await?.value;
/// println!("{} notes", list.notes.len());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NoteV1List {
    pub notes: Vec<NoteV1>,
}

/// A V2 note (schema `NoteV2`; the service wraps it in `{"data": …}`, the client unwraps it).
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let note: client::NoteV2 = api.v2_notes().get(1).await?;
/// println!("{} {:?} {}", note.title, note.tags, note.updated_at);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NoteV2 {
    pub id: i64,
    pub title: String,
    pub body: String,
    /// In the order given, duplicates kept.
    pub tags: Vec<String>,
    pub updated_at: String,
    pub created_at: String,
}

/// Create a V2 note (schema `NoteV2Body`): `body` absent means `""`, `tags` absent means `[]`.
///
/// ```
/// let input = client::NoteV2Input::new("t").body("b").tags(["x", "y"]);
/// assert_eq!(input.tags, Some(vec!["x".to_owned(), "y".to_owned()]));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NoteV2Input {
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
}

impl NoteV2Input {
    /// A V2 note with this title, no body and no tags.
    ///
    /// ```
    /// assert_eq!(client::NoteV2Input::new("t").body, None);
    /// ```
    pub fn new(title: impl Into<String>) -> Self {
        NoteV2Input {
            title: title.into(),
            body: None,
            tags: None,
        }
    }

    /// With this body.
    ///
    /// ```
    /// let _ = client::NoteV2Input::new("t").body("b");
    /// ```
    pub fn body(mut self, body: impl Into<String>) -> Self {
        self.body = Some(body.into());
        self
    }

    /// With these tags, in this order.
    ///
    /// ```
    /// let _ = client::NoteV2Input::new("t").tags(["a", "a"]);
    /// ```
    pub fn tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> Self {
        self.tags = Some(tags.into_iter().map(Into::into).collect());
        self
    }
}

/// Paging of a V2 list: the effective (clamped) `limit` and `offset`, and the `total`.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let meta: client::NoteV2Meta = api.v2_notes().list(Default::default()).await?.meta;
/// println!("{} notes", meta.total);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NoteV2Meta {
    pub limit: i64,
    pub offset: i64,
    pub total: i64,
}

/// `GET /v2/notes`: `{"data": [...], "meta": {limit, offset, total}}`, id descending.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let list: client::NoteV2List = api.v2_notes().list(client::PageRequest::new(10, 0)).await?;
/// for note in list.data { println!("{}", note.title); }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NoteV2List {
    pub data: Vec<NoteV2>,
    pub meta: NoteV2Meta,
}

/// `{"data": …}`: how V2 sends a single note.
#[derive(Deserialize)]
pub(crate) struct Envelope<T> {
    pub data: T,
}
