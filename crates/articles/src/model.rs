use problem_details::Fields;
use serde_json::{Map, Value};

use crate::Error;

pub const ARTICLE_TITLE_MAX: usize = 500;
pub const ARTICLE_AUTHOR_MAX: usize = 200;
pub const ARTICLE_CATEGORY_MAX: usize = 100;

/// Fields in table order: the repository selects `all_columns` into it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "db", derive(diesel::Queryable))]
pub struct Article {
    /// The ordering key of both list routes (descending).
    pub id: i64,
    pub title: String,
    pub author: String,
    pub category: Option<String>,
    /// RFC 3339, UTC, second precision.
    pub created_at: String,
    /// The user that created it (`None`: the operator, authentication off, seeded or older).
    pub owner_id: Option<i64>,
}

/// A valid new article: `title` and `author` required and non-blank, `category` optional.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArticleInput {
    pub(crate) title: String,
    pub(crate) author: String,
    pub(crate) category: Option<String>,
}

impl ArticleInput {
    /// Validates a JSON object, reporting every invalid field at once. Unknown members are
    /// ignored; `category` absent or `null` means no category.
    pub fn from_json(obj: &Map<String, Value>) -> Result<Self, Error> {
        let mut f = Fields::new(obj);
        let title = f.text("title", ARTICLE_TITLE_MAX);
        let author = f.text("author", ARTICLE_AUTHOR_MAX);
        let category = match obj.get("category") {
            None | Some(Value::Null) => Some(None),
            Some(_) => f.text("category", ARTICLE_CATEGORY_MAX).map(Some),
        };
        f.finish().map_err(Error::Validation)?;
        match (title, author, category) {
            (Some(title), Some(author), Some(category)) => Ok(ArticleInput {
                title,
                author,
                category,
            }),
            _ => Err(Error::Validation(Vec::new())),
        }
    }

    pub fn title(&self) -> &str {
        &self.title
    }

    pub fn author(&self) -> &str {
        &self.author
    }

    pub fn category(&self) -> Option<&str> {
        self.category.as_deref()
    }
}

/// One row to insert (the insert struct of the `articles` table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewArticle {
    pub(crate) title: String,
    pub(crate) author: String,
    pub(crate) category: Option<String>,
    pub(crate) created_at: String,
}

impl NewArticle {
    pub fn new(input: ArticleInput, created_at: String) -> Self {
        NewArticle {
            title: input.title,
            author: input.author,
            category: input.category,
            created_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use problem_details::testing::field_codes as fields;
    use serde_json::json;

    fn input(v: Value) -> Result<ArticleInput, Error> {
        ArticleInput::from_json(v.as_object().unwrap())
    }

    #[test]
    fn valid_input_is_kept_as_sent() {
        let a = input(json!({"title": " T ", "author": "Ann", "x": 1})).unwrap();
        assert_eq!((a.title(), a.author(), a.category()), (" T ", "Ann", None));
        let a = input(json!({"title": "T", "author": "A", "category": "rust"})).unwrap();
        assert_eq!(a.category(), Some("rust"));
        let a = input(json!({"title": "T", "author": "A", "category": null})).unwrap();
        assert_eq!(a.category(), None);
    }

    #[test]
    fn every_invalid_field_is_reported() {
        let err = input(json!({"title": "  ", "category": 5})).unwrap_err();
        assert_eq!(
            fields(err),
            vec![
                ("title".into(), "required"),
                ("author".into(), "required"),
                ("category".into(), "invalid_type"),
            ]
        );
        let err = input(json!({"title": "t", "author": "a", "category": ""})).unwrap_err();
        assert_eq!(fields(err), vec![("category".into(), "required")]);
    }

    #[test]
    fn bounds_and_nul() {
        let ok = json!({
            "title": "é".repeat(ARTICLE_TITLE_MAX),
            "author": "a".repeat(ARTICLE_AUTHOR_MAX),
            "category": "c".repeat(ARTICLE_CATEGORY_MAX),
        });
        assert!(input(ok).is_ok());
        let err = input(json!({
            "title": "t".repeat(ARTICLE_TITLE_MAX + 1),
            "author": "a".repeat(ARTICLE_AUTHOR_MAX + 1),
            "category": "c".repeat(ARTICLE_CATEGORY_MAX + 1),
        }))
        .unwrap_err();
        assert_eq!(
            fields(err),
            vec![
                ("title".into(), "too_long"),
                ("author".into(), "too_long"),
                ("category".into(), "too_long"),
            ]
        );
        let err = input(json!({"title": "a\u{0}", "author": "b"})).unwrap_err();
        assert_eq!(fields(err), vec![("title".into(), "invalid")]);
    }
}
