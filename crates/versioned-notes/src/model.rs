use problem_details::{FieldError, FieldErrorCode, Fields};
use serde_json::{Map, Value};

use crate::Error;

pub const NOTE_TITLE_MAX: usize = 500;
pub const NOTE_BODY_MAX: usize = 10_000;
/// Characters per tag.
pub const TAG_MAX: usize = 100;
/// Tags per note.
pub const TAGS_MAX: usize = 100;

/// The stored record both versions show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionedNote {
    pub id: i64,
    pub title: String,
    pub body: String,
    pub tags: Vec<String>,
    /// RFC 3339, UTC, second precision.
    pub created_at: String,
    pub updated_at: String,
    /// The user that created it (`None`: the operator, authentication off, or older).
    pub owner_id: Option<i64>,
}

/// A valid new note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteInput {
    pub(crate) title: String,
    pub(crate) body: String,
    pub(crate) tags: Vec<String>,
}

impl NoteInput {
    /// A V1 body: `title` (required), `content` (the body text, default `""`). V1 knows no
    /// tags: the note is stored with none.
    pub fn from_v1_json(obj: &Map<String, Value>) -> Result<Self, Error> {
        let mut f = Fields::new(obj);
        let title = f.text("title", NOTE_TITLE_MAX);
        let body = f.optional_text("content", NOTE_BODY_MAX, "");
        f.finish().map_err(Error::Validation)?;
        match (title, body) {
            (Some(title), Some(body)) => Ok(NoteInput {
                title,
                body,
                tags: Vec::new(),
            }),
            _ => Err(Error::Validation(Vec::new())),
        }
    }

    /// A V2 body: `title` (required), `body` (default `""`), `tags` (array of strings, default
    /// `[]`, duplicates kept in order).
    pub fn from_v2_json(obj: &Map<String, Value>) -> Result<Self, Error> {
        let mut f = Fields::new(obj);
        let title = f.text("title", NOTE_TITLE_MAX);
        let body = f.optional_text("body", NOTE_BODY_MAX, "");
        let tags = f.string_list("tags", TAG_MAX);
        let tags = match tags {
            Some(tags) if tags.len() > TAGS_MAX => {
                f.push(FieldError::new(
                    "tags",
                    FieldErrorCode::TooLong,
                    format!("tags must hold at most {TAGS_MAX} items"),
                ));
                None
            }
            other => other,
        };
        f.finish().map_err(Error::Validation)?;
        match (title, body, tags) {
            (Some(title), Some(body), Some(tags)) => Ok(NoteInput { title, body, tags }),
            _ => Err(Error::Validation(Vec::new())),
        }
    }

    pub fn title(&self) -> &str {
        &self.title
    }

    pub fn body(&self) -> &str {
        &self.body
    }

    pub fn tags(&self) -> &[String] {
        &self.tags
    }
}

/// How often one caller used V1. Fields in table order: the repository selects `all_columns`
/// into it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "db", derive(diesel::Queryable))]
pub struct CallerUsage {
    /// `user:<X-User-Id>` or `ip:<client address>`.
    pub caller: String,
    pub calls: i64,
    pub first_seen: String,
    pub last_seen: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use problem_details::testing::{field_codes as fields, object as obj};
    use serde_json::json;

    #[test]
    fn v1_takes_content_and_no_tags() {
        let n = NoteInput::from_v1_json(&obj(json!({"title": "T", "content": "c", "tags": ["x"]})))
            .unwrap();
        assert_eq!((n.title(), n.body(), n.tags()), ("T", "c", &[][..]));
        let n = NoteInput::from_v1_json(&obj(json!({"title": "T", "body": "ignored"}))).unwrap();
        assert_eq!(n.body(), "");
        let n = NoteInput::from_v1_json(&obj(json!({"title": "T", "content": null}))).unwrap();
        assert_eq!(n.body(), "");
    }

    #[test]
    fn v2_takes_body_and_tags_in_order() {
        let n = NoteInput::from_v2_json(&obj(
            json!({"title": "T", "body": "b", "tags": ["b", "a", "b"], "content": "x"}),
        ))
        .unwrap();
        assert_eq!(n.body(), "b");
        assert_eq!(n.tags(), ["b", "a", "b"]);
        let n = NoteInput::from_v2_json(&obj(json!({"title": "T"}))).unwrap();
        assert_eq!((n.body(), n.tags()), ("", &[][..]));
    }

    #[test]
    fn titles_are_required_non_blank_strings() {
        for bad in [json!({}), json!({"title": null}), json!({"title": "  \n"})] {
            let err = NoteInput::from_v1_json(&obj(bad.clone())).unwrap_err();
            assert_eq!(fields(err), vec![("title".into(), "required")]);
            let err = NoteInput::from_v2_json(&obj(bad)).unwrap_err();
            assert_eq!(fields(err), vec![("title".into(), "required")]);
        }
        let err = NoteInput::from_v2_json(&obj(json!({"title": 7}))).unwrap_err();
        assert_eq!(fields(err), vec![("title".into(), "invalid_type")]);
    }

    #[test]
    fn every_invalid_field_is_reported() {
        let err = NoteInput::from_v2_json(&obj(json!({"title": 1, "body": [], "tags": "a"})))
            .unwrap_err();
        assert_eq!(
            fields(err),
            vec![
                ("title".into(), "invalid_type"),
                ("body".into(), "invalid_type"),
                ("tags".into(), "invalid_type"),
            ]
        );
        let err =
            NoteInput::from_v2_json(&obj(json!({"title": "t", "tags": ["a", 2]}))).unwrap_err();
        assert_eq!(fields(err), vec![("tags[1]".into(), "invalid_type")]);
        let err = NoteInput::from_v1_json(&obj(json!({"title": "", "content": 3}))).unwrap_err();
        assert_eq!(
            fields(err),
            vec![
                ("title".into(), "required"),
                ("content".into(), "invalid_type")
            ]
        );
    }

    #[test]
    fn bounds() {
        let tags: Vec<String> = (0..TAGS_MAX).map(|i| i.to_string()).collect();
        let ok = json!({
            "title": "é".repeat(NOTE_TITLE_MAX),
            "body": "b".repeat(NOTE_BODY_MAX),
            "tags": tags,
        });
        assert!(NoteInput::from_v2_json(&obj(ok)).is_ok());
        let too_many: Vec<&str> = vec!["a"; TAGS_MAX + 1];
        let err = NoteInput::from_v2_json(&obj(json!({
            "title": "t".repeat(NOTE_TITLE_MAX + 1),
            "body": "b".repeat(NOTE_BODY_MAX + 1),
            "tags": too_many,
        })))
        .unwrap_err();
        assert_eq!(
            fields(err),
            vec![
                ("title".into(), "too_long"),
                ("body".into(), "too_long"),
                ("tags".into(), "too_long"),
            ]
        );
        let err = NoteInput::from_v2_json(&obj(json!({"title": "t", "tags": ["x".repeat(101)]})))
            .unwrap_err();
        assert_eq!(fields(err), vec![("tags[0]".into(), "too_long")]);
        let err =
            NoteInput::from_v1_json(&obj(json!({"title": "t", "content": "\u{0}"}))).unwrap_err();
        assert_eq!(fields(err), vec![("content".into(), "invalid")]);
    }
}
