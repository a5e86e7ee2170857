use problem_details::Fields;
use serde_json::{Map, Value};

use crate::Error;

pub const NOTE_TITLE_MAX: usize = 500;
pub const NOTE_BODY_MAX: usize = 10_000;
pub const TAG_NAME_MAX: usize = 200;
pub const COMMENT_BODY_MAX: usize = 5_000;

/// Fields in table order: the repository selects `all_columns` into it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "db", derive(diesel::Queryable))]
pub struct Note {
    pub id: i64,
    pub title: String,
    pub body: String,
    /// The user that created it (`None`: the operator, authentication off, or older).
    pub owner_id: Option<i64>,
}

/// Fields in table order: the repository selects `all_columns` into it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "db", derive(diesel::Queryable))]
pub struct Tag {
    pub id: i64,
    pub name: String,
    pub owner_id: Option<i64>,
}

/// Fields in table order: the repository selects `all_columns` into it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "db", derive(diesel::Queryable))]
pub struct Comment {
    pub id: i64,
    pub note_id: i64,
    pub body: String,
    pub owner_id: Option<i64>,
}

impl ownership::Owned for Note {
    const KIND: &'static str = "Note";
    fn owner_id(&self) -> Option<i64> {
        self.owner_id
    }
    fn key(&self) -> String {
        self.id.to_string()
    }
}

impl ownership::Owned for Tag {
    const KIND: &'static str = "Tag";
    fn owner_id(&self) -> Option<i64> {
        self.owner_id
    }
    fn key(&self) -> String {
        self.id.to_string()
    }
}

impl ownership::Owned for Comment {
    const KIND: &'static str = "Comment";
    fn owner_id(&self) -> Option<i64> {
        self.owner_id
    }
    fn key(&self) -> String {
        self.id.to_string()
    }
}

/// A valid note title and body (create and update take the same input).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteInput {
    pub(crate) title: String,
    pub(crate) body: String,
}

/// A valid tag name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagInput {
    pub(crate) name: String,
}

/// A valid comment body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentInput {
    pub(crate) body: String,
}

impl NoteInput {
    pub fn from_json(obj: &Map<String, Value>) -> Result<Self, Error> {
        let mut f = Fields::new(obj);
        let title = f.text("title", NOTE_TITLE_MAX);
        let body = f.text("body", NOTE_BODY_MAX);
        f.finish().map_err(Error::Validation)?;
        match (title, body) {
            (Some(title), Some(body)) => Ok(NoteInput { title, body }),
            _ => Err(Error::Validation(Vec::new())),
        }
    }

    pub fn title(&self) -> &str {
        &self.title
    }

    pub fn body(&self) -> &str {
        &self.body
    }
}

impl TagInput {
    pub fn from_json(obj: &Map<String, Value>) -> Result<Self, Error> {
        let mut f = Fields::new(obj);
        let name = f.text("name", TAG_NAME_MAX);
        f.finish().map_err(Error::Validation)?;
        name.map(|name| TagInput { name })
            .ok_or(Error::Validation(Vec::new()))
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl CommentInput {
    pub fn from_json(obj: &Map<String, Value>) -> Result<Self, Error> {
        let mut f = Fields::new(obj);
        let body = f.text("body", COMMENT_BODY_MAX);
        f.finish().map_err(Error::Validation)?;
        body.map(|body| CommentInput { body })
            .ok_or(Error::Validation(Vec::new()))
    }

    pub fn body(&self) -> &str {
        &self.body
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use problem_details::testing::{field_codes as fields, object as obj};
    use serde_json::json;

    #[test]
    fn note_valid_and_kept_as_sent() {
        let n = NoteInput::from_json(&obj(json!({"title": " T ", "body": "b", "x": 1}))).unwrap();
        assert_eq!(n.title(), " T ");
        assert_eq!(n.body(), "b");
    }

    #[test]
    fn note_reports_all_fields() {
        let err = NoteInput::from_json(&obj(json!({"title": "", "body": 1}))).unwrap_err();
        assert_eq!(
            fields(err),
            vec![
                ("title".into(), "required"),
                ("body".into(), "invalid_type")
            ]
        );
    }

    #[test]
    fn note_lengths() {
        let long = "x".repeat(NOTE_TITLE_MAX + 1);
        let ok = "é".repeat(NOTE_TITLE_MAX);
        assert!(NoteInput::from_json(&obj(json!({"title": ok, "body": "b"}))).is_ok());
        let err = NoteInput::from_json(&obj(json!({"title": long, "body": "b"}))).unwrap_err();
        assert_eq!(fields(err), vec![("title".into(), "too_long")]);
        let body = "x".repeat(NOTE_BODY_MAX + 1);
        let err = NoteInput::from_json(&obj(json!({"title": "t", "body": body}))).unwrap_err();
        assert_eq!(fields(err), vec![("body".into(), "too_long")]);
    }

    #[test]
    fn nul_is_invalid() {
        let err = TagInput::from_json(&obj(json!({"name": "a\u{0}"}))).unwrap_err();
        assert_eq!(fields(err), vec![("name".into(), "invalid")]);
    }

    #[test]
    fn tag_and_comment_bounds() {
        assert!(TagInput::from_json(&obj(json!({"name": "x".repeat(TAG_NAME_MAX)}))).is_ok());
        assert!(TagInput::from_json(&obj(json!({"name": "x".repeat(TAG_NAME_MAX + 1)}))).is_err());
        assert!(
            CommentInput::from_json(&obj(json!({"body": "x".repeat(COMMENT_BODY_MAX)}))).is_ok()
        );
        assert!(
            CommentInput::from_json(&obj(json!({"body": "x".repeat(COMMENT_BODY_MAX + 1)})))
                .is_err()
        );
        assert!(CommentInput::from_json(&obj(json!({}))).is_err());
    }
}
