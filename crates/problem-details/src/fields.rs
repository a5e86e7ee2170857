use serde_json::{Map, Value};

/// Machine-readable reason of a [`FieldError`] (`code` member, snake_case on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorCode {
    Required,
    TooLong,
    Invalid,
    OutOfRange,
    InvalidType,
}

impl FieldErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            FieldErrorCode::Required => "required",
            FieldErrorCode::TooLong => "too_long",
            FieldErrorCode::Invalid => "invalid",
            FieldErrorCode::OutOfRange => "out_of_range",
            FieldErrorCode::InvalidType => "invalid_type",
        }
    }
}

/// One entry of a 422's `errors` member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub code: FieldErrorCode,
    pub message: String,
}

impl FieldError {
    pub fn new(field: &str, code: FieldErrorCode, message: impl Into<String>) -> Self {
        FieldError {
            field: field.to_owned(),
            code,
            message: message.into(),
        }
    }

    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "field": self.field,
            "message": self.message,
            "code": self.code.as_str(),
        })
    }
}

/// Reads and validates the members of one JSON object, collecting every error instead of
/// stopping at the first, so a 422 can list all invalid fields at once.
///
/// ```
/// use problem_details::Fields;
/// let body = serde_json::json!({"title": "", "body": 5});
/// let mut f = Fields::new(body.as_object().unwrap());
/// assert_eq!(f.text("title", 500), None);
/// assert_eq!(f.text("body", 500), None);
/// let errors = f.finish().unwrap_err();
/// assert_eq!(errors.len(), 2);
/// ```
pub struct Fields<'a> {
    obj: &'a Map<String, Value>,
    errors: Vec<FieldError>,
}

impl<'a> Fields<'a> {
    pub fn new(obj: &'a Map<String, Value>) -> Self {
        Fields {
            obj,
            errors: Vec::new(),
        }
    }

    pub fn push(&mut self, error: FieldError) {
        self.errors.push(error);
    }

    /// A required string that is not blank after trimming, at most `max_chars` characters and
    /// free of NUL. The returned value is exactly as sent (not trimmed).
    pub fn text(&mut self, name: &str, max_chars: usize) -> Option<String> {
        match self.obj.get(name) {
            None | Some(Value::Null) => {
                self.missing(name);
                None
            }
            Some(Value::String(s)) => self.check_text(name, s, max_chars, true),
            Some(_) => {
                self.type_error(name, "a string");
                None
            }
        }
    }

    /// An optional string (absent or null gives `default`); when present it may be blank but
    /// must respect the length bound and hold no NUL.
    pub fn optional_text(&mut self, name: &str, max_chars: usize, default: &str) -> Option<String> {
        match self.obj.get(name) {
            None | Some(Value::Null) => Some(default.to_owned()),
            Some(Value::String(s)) => self.check_text(name, s, max_chars, false),
            Some(_) => {
                self.type_error(name, "a string");
                None
            }
        }
    }

    /// An optional array of strings (absent or null gives an empty list).
    pub fn string_list(&mut self, name: &str, max_chars: usize) -> Option<Vec<String>> {
        match self.obj.get(name) {
            None | Some(Value::Null) => Some(Vec::new()),
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let field = format!("{name}[{i}]");
                    match item {
                        Value::String(s) => out.push(self.check_text(&field, s, max_chars, false)?),
                        _ => {
                            self.type_error(&field, "a string");
                            return None;
                        }
                    }
                }
                Some(out)
            }
            Some(_) => {
                self.type_error(name, "an array of strings");
                None
            }
        }
    }

    /// A required integer within `range`.
    pub fn integer(&mut self, name: &str, range: std::ops::RangeInclusive<i64>) -> Option<i64> {
        match self.obj.get(name) {
            None | Some(Value::Null) => {
                self.missing(name);
                None
            }
            Some(Value::Number(n)) => match n.as_i64() {
                Some(v) if range.contains(&v) => Some(v),
                _ if n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0) => {
                    self.push(FieldError::new(
                        name,
                        FieldErrorCode::OutOfRange,
                        format!(
                            "{name} must be between {} and {}",
                            range.start(),
                            range.end()
                        ),
                    ));
                    None
                }
                _ => {
                    self.type_error(name, "an integer");
                    None
                }
            },
            Some(_) => {
                self.type_error(name, "an integer");
                None
            }
        }
    }

    /// The collected value, or every error found.
    pub fn finish(self) -> Result<(), Vec<FieldError>> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(self.errors)
        }
    }

    fn missing(&mut self, name: &str) {
        self.push(FieldError::new(
            name,
            FieldErrorCode::Required,
            format!("{name} is required"),
        ));
    }

    fn type_error(&mut self, name: &str, expected: &str) {
        self.push(FieldError::new(
            name,
            FieldErrorCode::InvalidType,
            format!("{name} must be {expected}"),
        ));
    }

    fn check_text(
        &mut self,
        name: &str,
        s: &str,
        max_chars: usize,
        non_blank: bool,
    ) -> Option<String> {
        if non_blank && s.trim().is_empty() {
            self.push(FieldError::new(
                name,
                FieldErrorCode::Required,
                format!("{name} must not be blank"),
            ));
            return None;
        }
        if s.contains('\0') {
            self.push(FieldError::new(
                name,
                FieldErrorCode::Invalid,
                format!("{name} must not contain NUL characters"),
            ));
            return None;
        }
        if s.chars().count() > max_chars {
            self.push(FieldError::new(
                name,
                FieldErrorCode::TooLong,
                format!("{name} must be at most {max_chars} characters"),
            ));
            return None;
        }
        Some(s.to_owned())
    }
}

/// Checks a free-standing string value by the same rules as [`Fields::text`]
/// (non-blank, bounded, no NUL).
pub fn check_text(name: &str, value: &str, max_chars: usize) -> Result<(), FieldError> {
    let obj = Map::new();
    let mut f = Fields::new(&obj);
    f.check_text(name, value, max_chars, true);
    f.finish().map_err(|mut e| e.remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn text_rules() {
        let o = obj(json!({"a": "ok", "b": "  ", "c": "x\u{0}y", "d": "héllo", "e": 3, "n": null}));
        let mut f = Fields::new(&o);
        assert_eq!(f.text("a", 10).as_deref(), Some("ok"));
        assert_eq!(f.text("b", 10), None);
        assert_eq!(f.text("c", 10), None);
        assert_eq!(f.text("d", 5).as_deref(), Some("héllo"));
        assert_eq!(f.text("d", 4), None);
        assert_eq!(f.text("e", 10), None);
        assert_eq!(f.text("missing", 10), None);
        assert_eq!(f.text("n", 10), None);
        let errs = f.finish().unwrap_err();
        let codes: Vec<_> = errs.iter().map(|e| (e.field.as_str(), e.code)).collect();
        assert_eq!(
            codes,
            vec![
                ("b", FieldErrorCode::Required),
                ("c", FieldErrorCode::Invalid),
                ("d", FieldErrorCode::TooLong),
                ("e", FieldErrorCode::InvalidType),
                ("missing", FieldErrorCode::Required),
                ("n", FieldErrorCode::Required),
            ]
        );
    }

    #[test]
    fn text_is_kept_as_sent() {
        let o = obj(json!({"a": "  padded 🎉 "}));
        let mut f = Fields::new(&o);
        assert_eq!(f.text("a", 100).as_deref(), Some("  padded 🎉 "));
        assert!(f.finish().is_ok());
    }

    #[test]
    fn optional_and_lists() {
        let o = obj(json!({"label": "", "tags": ["a", "a", "b"], "bad": ["a", 1], "no": "x"}));
        let mut f = Fields::new(&o);
        assert_eq!(f.optional_text("label", 5, "d").as_deref(), Some(""));
        assert_eq!(f.optional_text("absent", 5, "d").as_deref(), Some("d"));
        assert_eq!(
            f.string_list("tags", 10),
            Some(vec!["a".into(), "a".into(), "b".into()])
        );
        assert_eq!(f.string_list("absent", 10), Some(vec![]));
        assert_eq!(f.string_list("bad", 10), None);
        assert_eq!(f.string_list("no", 10), None);
        let errs = f.finish().unwrap_err();
        assert_eq!(errs[0].field, "bad[1]");
        assert_eq!(errs[1].field, "no");
    }

    #[test]
    fn integers() {
        let o = obj(
            json!({"a": 5, "b": 0, "c": 1.5, "d": "5", "e": 1e300, "f": 18446744073709551615u64}),
        );
        let mut f = Fields::new(&o);
        assert_eq!(f.integer("a", 1..=10), Some(5));
        assert_eq!(f.integer("b", 1..=10), None);
        assert_eq!(f.integer("c", 1..=10), None);
        assert_eq!(f.integer("d", 1..=10), None);
        assert_eq!(f.integer("e", 1..=10), None);
        assert_eq!(f.integer("f", 1..=10), None);
        let codes: Vec<_> = f.finish().unwrap_err().iter().map(|e| e.code).collect();
        assert_eq!(
            codes,
            vec![
                FieldErrorCode::OutOfRange,
                FieldErrorCode::InvalidType,
                FieldErrorCode::InvalidType,
                FieldErrorCode::OutOfRange,
                FieldErrorCode::OutOfRange,
            ]
        );
    }

    #[test]
    fn check_text_standalone() {
        assert!(check_text("q", "fine", 10).is_ok());
        assert_eq!(
            check_text("q", "", 10).unwrap_err().code,
            FieldErrorCode::Required
        );
    }
}
