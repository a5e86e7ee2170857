#![doc = include_str!("../README.md")]

use problem_details::{FieldError, FieldErrorCode};
use serde::Serialize;

pub const DEFAULT_LIMIT: i64 = 20;
pub const MAX_LIMIT: i64 = 100;

/// An effective `limit` and `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub limit: i64,
    pub offset: i64,
}

impl Default for Page {
    fn default() -> Self {
        Page {
            limit: DEFAULT_LIMIT,
            offset: 0,
        }
    }
}

/// Parses one integer query value. `Ok(None)` when absent; an error naming `name` when the
/// text is not a 64-bit integer.
pub fn parse_int(name: &str, raw: Option<&str>) -> Result<Option<i64>, FieldError> {
    match raw {
        None => Ok(None),
        Some(text) => text.trim().parse::<i64>().map(Some).map_err(|_| {
            FieldError::new(
                name,
                FieldErrorCode::Invalid,
                format!("{name} must be an integer"),
            )
        }),
    }
}

impl Page {
    /// Strict rules: out-of-range and non-integer values are errors (all of them reported).
    pub fn strict(limit: Option<&str>, offset: Option<&str>) -> Result<Page, Vec<FieldError>> {
        let mut errors = Vec::new();
        let limit = match parse_int("limit", limit) {
            Ok(Some(l)) if !(1..=MAX_LIMIT).contains(&l) => {
                errors.push(FieldError::new(
                    "limit",
                    FieldErrorCode::OutOfRange,
                    format!("limit must be between 1 and {MAX_LIMIT}"),
                ));
                DEFAULT_LIMIT
            }
            Ok(l) => l.unwrap_or(DEFAULT_LIMIT),
            Err(e) => {
                errors.push(e);
                DEFAULT_LIMIT
            }
        };
        let offset = match parse_int("offset", offset) {
            Ok(Some(o)) if o < 0 => {
                errors.push(FieldError::new(
                    "offset",
                    FieldErrorCode::OutOfRange,
                    "offset must be at least 0",
                ));
                0
            }
            Ok(o) => o.unwrap_or(0),
            Err(e) => {
                errors.push(e);
                0
            }
        };
        if errors.is_empty() {
            Ok(Page { limit, offset })
        } else {
            Err(errors)
        }
    }

    /// Clamping rules: non-integers are errors; integers are clamped into range.
    pub fn clamped(limit: Option<&str>, offset: Option<&str>) -> Result<Page, Vec<FieldError>> {
        let limit = parse_int("limit", limit);
        let offset = parse_int("offset", offset);
        match (limit, offset) {
            (Ok(l), Ok(o)) => Ok(Page {
                limit: clamp_limit(l),
                offset: o.unwrap_or(0).max(0),
            }),
            (l, o) => Err([l.err(), o.err()].into_iter().flatten().collect()),
        }
    }

    /// `offset + limit`, saturating: huge offsets must never overflow.
    pub fn end(&self) -> i64 {
        self.offset.saturating_add(self.limit)
    }
}

/// Clamps an optional limit into 1..=100, defaulting to 20.
pub fn clamp_limit(limit: Option<i64>) -> i64 {
    limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT)
}

/// The list envelope `{items, limit, offset, total}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListEnvelope<T> {
    pub items: Vec<T>,
    pub limit: i64,
    pub offset: i64,
    pub total: i64,
}

impl<T> ListEnvelope<T> {
    pub fn new(items: Vec<T>, page: Page, total: i64) -> Self {
        ListEnvelope {
            items,
            limit: page.limit,
            offset: page.offset,
            total,
        }
    }

    pub fn map<U>(self, f: impl FnMut(T) -> U) -> ListEnvelope<U> {
        ListEnvelope {
            items: self.items.into_iter().map(f).collect(),
            limit: self.limit,
            offset: self.offset,
            total: self.total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn strict_defaults() {
        assert_eq!(Page::strict(None, None).unwrap(), Page::default());
    }

    #[test]
    fn strict_reports_every_error() {
        let errs = Page::strict(Some("abc"), Some("-1")).unwrap_err();
        assert_eq!(errs.len(), 2);
        assert_eq!(errs[0].field, "limit");
        assert_eq!(errs[0].code, FieldErrorCode::Invalid);
        assert_eq!(errs[1].field, "offset");
        assert_eq!(errs[1].code, FieldErrorCode::OutOfRange);
    }

    #[test]
    fn strict_bounds() {
        assert!(Page::strict(Some("0"), None).is_err());
        assert!(Page::strict(Some("1"), None).is_ok());
        assert!(Page::strict(Some("100"), None).is_ok());
        assert_eq!(
            Page::strict(Some("101"), None).unwrap_err()[0].code,
            FieldErrorCode::OutOfRange
        );
        assert!(Page::strict(None, Some("0")).is_ok());
        assert!(Page::strict(Some("1.5"), None).is_err());
        assert!(Page::strict(Some(""), None).is_err());
        assert!(Page::strict(None, Some("99999999999999999999")).is_err());
    }

    #[test]
    fn clamped_rules() {
        assert_eq!(Page::clamped(None, None).unwrap(), Page::default());
        assert_eq!(Page::clamped(Some("0"), None).unwrap().limit, 1);
        assert_eq!(Page::clamped(Some("-50"), None).unwrap().limit, 1);
        assert_eq!(Page::clamped(Some("1000"), None).unwrap().limit, 100);
        assert_eq!(Page::clamped(None, Some("-3")).unwrap().offset, 0);
        let errs = Page::clamped(Some("x"), Some("y")).unwrap_err();
        assert_eq!(errs.len(), 2);
    }

    #[test]
    fn envelope_serializes() {
        let env = ListEnvelope::new(vec![1, 2], Page::default(), 7);
        let json = serde_json::to_value(&env).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"items": [1, 2], "limit": 20, "offset": 0, "total": 7})
        );
        assert_eq!(env.map(|x| x * 2).items, vec![2, 4]);
    }

    #[test]
    fn end_saturates() {
        let p = Page {
            limit: 100,
            offset: i64::MAX,
        };
        assert_eq!(p.end(), i64::MAX);
    }

    proptest! {
        #[test]
        fn clamped_is_always_in_range(l in any::<i64>(), o in any::<i64>()) {
            let p = Page::clamped(Some(&l.to_string()), Some(&o.to_string())).unwrap();
            prop_assert!((1..=MAX_LIMIT).contains(&p.limit));
            prop_assert!(p.offset >= 0);
            prop_assert_eq!(p.limit, l.clamp(1, MAX_LIMIT));
        }

        #[test]
        fn strict_accepts_exactly_the_valid_range(l in any::<i64>(), o in any::<i64>()) {
            let r = Page::strict(Some(&l.to_string()), Some(&o.to_string()));
            let valid = (1..=MAX_LIMIT).contains(&l) && o >= 0;
            prop_assert_eq!(r.is_ok(), valid);
            if let Ok(p) = r {
                prop_assert_eq!((p.limit, p.offset), (l, o));
            }
        }

        #[test]
        fn arbitrary_text_never_panics(l in ".*", o in ".*") {
            let _ = Page::strict(Some(&l), Some(&o));
            let _ = Page::clamped(Some(&l), Some(&o));
        }
    }
}
