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

/// Parses one integer query value that must lie in `range`: `Ok(None)` when absent; an error
/// naming `name` when the text is not an integer (`invalid`) or is out of range
/// (`out_of_range`: "must be between a and b", or "must be at least a" when unbounded above).
pub fn parse_in(
    name: &str,
    raw: Option<&str>,
    range: std::ops::RangeInclusive<i64>,
) -> Result<Option<i64>, FieldError> {
    match parse_int(name, raw)? {
        Some(v) if !range.contains(&v) => Err(FieldError::new(
            name,
            FieldErrorCode::OutOfRange,
            match *range.end() {
                i64::MAX => format!("{name} must be at least {}", range.start()),
                end => format!("{name} must be between {} and {end}", range.start()),
            },
        )),
        v => Ok(v),
    }
}

/// Reports every invalid value of a query at once: each `parse_in` result goes in, its value
/// (or `default` when absent or invalid) comes out, and `finish` says whether any failed.
#[derive(Debug, Default)]
pub struct Params {
    errors: Vec<FieldError>,
}

impl Params {
    pub fn new() -> Self {
        Params::default()
    }

    /// The value of `parsed`, else `default` (and an invalid one is remembered).
    pub fn take(&mut self, parsed: Result<Option<i64>, FieldError>, default: i64) -> i64 {
        self.optional(parsed).unwrap_or(default)
    }

    /// [`Params::take`] for a value without a default.
    pub fn optional(&mut self, parsed: Result<Option<i64>, FieldError>) -> Option<i64> {
        parsed.unwrap_or_else(|e| {
            self.errors.push(e);
            None
        })
    }

    /// `Ok(value)` when every value was valid, else every error.
    pub fn finish<T>(self, value: T) -> Result<T, Vec<FieldError>> {
        if self.errors.is_empty() {
            Ok(value)
        } else {
            Err(self.errors)
        }
    }
}

impl Page {
    /// Strict rules: out-of-range and non-integer values are errors (all of them reported).
    pub fn strict(limit: Option<&str>, offset: Option<&str>) -> Result<Page, Vec<FieldError>> {
        let mut params = Params::new();
        let limit = params.take(parse_in("limit", limit, 1..=MAX_LIMIT), DEFAULT_LIMIT);
        let offset = params.take(parse_in("offset", offset, 0..=i64::MAX), 0);
        params.finish(Page { limit, offset })
    }

    /// Clamping rules: non-integers are errors; integers are clamped into range.
    pub fn clamped(limit: Option<&str>, offset: Option<&str>) -> Result<Page, Vec<FieldError>> {
        let (limit, offset) = parse_both(("limit", limit), ("offset", offset))?;
        Ok(Page {
            limit: clamp_limit(limit),
            offset: offset.unwrap_or(0).max(0),
        })
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

/// Parses two integer query values, reporting both errors when both are bad.
fn parse_both(
    a: (&str, Option<&str>),
    b: (&str, Option<&str>),
) -> Result<(Option<i64>, Option<i64>), Vec<FieldError>> {
    match (parse_int(a.0, a.1), parse_int(b.0, b.1)) {
        (Ok(a), Ok(b)) => Ok((a, b)),
        (a, b) => Err([a.err(), b.err()].into_iter().flatten().collect()),
    }
}

/// Keyset ("cursor") paging parameters: an effective `limit` and the optional id to page
/// below (`after`: only rows with a smaller id are returned).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub limit: i64,
    pub after: Option<i64>,
}

impl Cursor {
    /// Clamping rules: non-integers are errors (both reported); `limit` is clamped into
    /// 1..=100 (default 20); `after` is kept as given (`after <= 0` simply matches no row when
    /// ids are positive).
    pub fn clamped(limit: Option<&str>, after: Option<&str>) -> Result<Cursor, Vec<FieldError>> {
        let (limit, after) = parse_both(("limit", limit), ("after", after))?;
        Ok(Cursor {
            limit: clamp_limit(limit),
            after,
        })
    }

    /// How many rows to fetch: one more than `limit`, so a further page can be detected
    /// without counting.
    pub fn fetch(&self) -> i64 {
        self.limit + 1
    }
}

/// The offset page envelope `{items, limit, offset, total, has_more, next_offset}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OffsetPage<T> {
    pub items: Vec<T>,
    pub limit: i64,
    pub offset: i64,
    pub total: i64,
    /// `offset + limit < total`
    pub has_more: bool,
    /// `offset + limit` when `has_more`, else `None`
    pub next_offset: Option<i64>,
}

impl<T> OffsetPage<T> {
    pub fn new(items: Vec<T>, page: Page, total: i64) -> Self {
        let end = page.end();
        let has_more = end < total;
        OffsetPage {
            items,
            limit: page.limit,
            offset: page.offset,
            total,
            has_more,
            next_offset: has_more.then_some(end),
        }
    }

    pub fn map<U>(self, f: impl FnMut(T) -> U) -> OffsetPage<U> {
        OffsetPage {
            items: self.items.into_iter().map(f).collect(),
            limit: self.limit,
            offset: self.offset,
            total: self.total,
            has_more: self.has_more,
            next_offset: self.next_offset,
        }
    }
}

/// How many of `items`, from the first, fit in `budget` bytes as `size` counts them; at least
/// one, so that a page always makes progress.
pub fn fitting<T>(items: &[T], budget: usize, size: impl Fn(&T) -> usize) -> usize {
    let mut used = 0usize;
    items
        .iter()
        .take_while(|item| {
            used = used.saturating_add(size(item));
            used <= budget
        })
        .count()
        .max(1)
}

/// The cursor page envelope `{items, limit, has_more, next_cursor}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CursorPage<T> {
    pub items: Vec<T>,
    pub limit: i64,
    /// More rows exist beyond this page.
    pub has_more: bool,
    /// The id of the last item when `has_more`, else `None`.
    pub next_cursor: Option<i64>,
}

impl<T> CursorPage<T> {
    /// Builds the page from up to `cursor.fetch()` rows in page order: when more than `limit`
    /// came back, the extra row only proves that a further page exists and is dropped.
    pub fn from_rows(mut rows: Vec<T>, cursor: Cursor, id: impl Fn(&T) -> i64) -> Self {
        let limit = usize::try_from(cursor.limit).unwrap_or(usize::MAX);
        let has_more = rows.len() > limit;
        rows.truncate(limit);
        let next_cursor = if has_more { rows.last().map(id) } else { None };
        CursorPage {
            items: rows,
            limit: cursor.limit,
            has_more,
            next_cursor,
        }
    }

    /// Ends the page before its items pass `budget` bytes (as `size` counts them), keeping at
    /// least one item, so a page of large items is bounded in memory as well as in count. A
    /// shortened page says `has_more`, and its `next_cursor` leads to the rest.
    pub fn within_bytes(
        mut self,
        budget: usize,
        size: impl Fn(&T) -> usize,
        id: impl Fn(&T) -> i64,
    ) -> Self {
        let fits = fitting(&self.items, budget, size);
        if fits < self.items.len() {
            self.items.truncate(fits);
            self.has_more = true;
            self.next_cursor = self.items.last().map(id);
        }
        self
    }

    pub fn map<U>(self, f: impl FnMut(T) -> U) -> CursorPage<U> {
        CursorPage {
            items: self.items.into_iter().map(f).collect(),
            limit: self.limit,
            has_more: self.has_more,
            next_cursor: self.next_cursor,
        }
    }
}

/// The list envelope `{items, limit, offset, total, next_offset}`. `next_offset` is where the
/// next page starts (this page's offset plus its items) while items remain, else `None`: a page
/// may end before `limit` when its items are large ([`fitting`]), so `offset + limit` is not
/// always the next page.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListEnvelope<T> {
    pub items: Vec<T>,
    pub limit: i64,
    pub offset: i64,
    pub total: i64,
    pub next_offset: Option<i64>,
}

impl<T> ListEnvelope<T> {
    pub fn new(items: Vec<T>, page: Page, total: i64) -> Self {
        let mut envelope = ListEnvelope {
            items,
            limit: page.limit,
            offset: page.offset,
            total,
            next_offset: None,
        };
        envelope.next_offset = envelope.following();
        envelope
    }

    fn following(&self) -> Option<i64> {
        let end = self
            .offset
            .saturating_add(i64::try_from(self.items.len()).unwrap_or(i64::MAX));
        (!self.items.is_empty() && end < self.total).then_some(end)
    }

    pub fn map<U>(self, f: impl FnMut(T) -> U) -> ListEnvelope<U> {
        ListEnvelope {
            items: self.items.into_iter().map(f).collect(),
            limit: self.limit,
            offset: self.offset,
            total: self.total,
            next_offset: self.next_offset,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_list_says_where_its_next_page_starts() {
        let page = Page {
            limit: 3,
            offset: 3,
        };
        let env = ListEnvelope::new(vec![4, 5, 6], page, 10);
        assert_eq!(env.next_offset, Some(6));
        assert_eq!(ListEnvelope::new(vec![9, 10], page, 5).next_offset, None);
        assert_eq!(
            ListEnvelope::new(Vec::<i64>::new(), page, 2).next_offset,
            None
        );
        // A page that ended early (large items) goes on right after its last item.
        let short = ListEnvelope::new(vec![4], page, 10);
        assert_eq!(short.next_offset, Some(4));
    }

    #[test]
    fn a_page_of_large_items_stops_at_its_byte_budget() {
        let cursor = Cursor {
            limit: 10,
            after: None,
        };
        let rows: Vec<i64> = (1..=11).collect();
        let page = CursorPage::from_rows(rows.clone(), cursor, |r| *r);
        let size = |_: &i64| 100;
        // 10 items of 100 bytes in 350: three fit; the page says where to go on.
        let cut = page.clone().within_bytes(350, size, |r| *r);
        assert_eq!(cut.items, vec![1, 2, 3]);
        assert!(cut.has_more);
        assert_eq!(cut.next_cursor, Some(3));
        // One item is always served, however large.
        let one = page.clone().within_bytes(10, size, |r| *r);
        assert_eq!((one.items, one.next_cursor), (vec![1], Some(1)));
        // Within budget: unchanged.
        assert_eq!(page.clone().within_bytes(10_000, size, |r| *r), page);
        let last =
            CursorPage::from_rows(vec![1, 2], cursor, |r| *r).within_bytes(10_000, size, |r| *r);
        assert!(!last.has_more);
    }

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
    fn cursor_rules() {
        assert_eq!(
            Cursor::clamped(None, None).unwrap(),
            Cursor {
                limit: 20,
                after: None
            }
        );
        let c = Cursor::clamped(Some("500"), Some("-7")).unwrap();
        assert_eq!((c.limit, c.after, c.fetch()), (100, Some(-7), 101));
        assert_eq!(Cursor::clamped(Some("0"), Some("9")).unwrap().limit, 1);
        let errs = Cursor::clamped(Some("1.5"), Some("x")).unwrap_err();
        let fields: Vec<_> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["limit", "after"]);
        assert_eq!(
            Cursor::clamped(None, Some("")).unwrap_err()[0].field,
            "after"
        );
    }

    #[test]
    fn offset_page_envelope() {
        let page = Page {
            limit: 2,
            offset: 4,
        };
        let p = OffsetPage::new(vec![5, 6], page, 7);
        assert_eq!((p.has_more, p.next_offset), (true, Some(6)));
        let json = serde_json::to_value(OffsetPage::new(vec![1], page, 6)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"items": [1], "limit": 2, "offset": 4, "total": 6,
                               "has_more": false, "next_offset": null})
        );
        let empty = OffsetPage::<i32>::new(vec![], Page::default(), 0);
        assert_eq!((empty.has_more, empty.next_offset), (false, None));
        let far = OffsetPage::<i32>::new(
            vec![],
            Page {
                limit: 100,
                offset: i64::MAX,
            },
            3,
        );
        assert!(!far.has_more);
        assert_eq!(far.map(|x| x).next_offset, None);
    }

    #[test]
    fn cursor_page_drops_the_probe_row() {
        let cursor = Cursor {
            limit: 2,
            after: None,
        };
        let p = CursorPage::from_rows(vec![9, 8, 7], cursor, |x| *x);
        assert_eq!(p.items, vec![9, 8]);
        assert_eq!((p.has_more, p.next_cursor), (true, Some(8)));
        let last = CursorPage::from_rows(vec![9, 8], cursor, |x| *x);
        assert_eq!((last.has_more, last.next_cursor), (false, None));
        let json =
            serde_json::to_value(CursorPage::from_rows(Vec::<i64>::new(), cursor, |x| *x)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"items": [], "limit": 2, "has_more": false, "next_cursor": null})
        );
        assert_eq!(p.map(|x| x * 10).items, vec![90, 80]);
    }

    #[test]
    fn envelope_serializes() {
        let env = ListEnvelope::new(vec![1, 2], Page::default(), 7);
        let json = serde_json::to_value(&env).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"items": [1, 2], "limit": 20, "offset": 0, "total": 7, "next_offset": 2})
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
            let _ = Cursor::clamped(Some(&l), Some(&o));
        }

        /// Walking a descending id list with `from_rows` + `next_cursor` yields every id once,
        /// in order, exactly like offset pages of the same limit.
        #[test]
        fn cursor_walk_equals_offset_walk(n in 0usize..120, limit in 1i64..=100) {
            let ids: Vec<i64> = (1..=n as i64).rev().collect();
            let cursor_pages = {
                let mut out = Vec::new();
                let mut after = None;
                loop {
                    let rows: Vec<i64> = ids.iter().copied()
                        .filter(|id| after.is_none_or(|a| *id < a))
                        .take((limit + 1) as usize).collect();
                    let page = CursorPage::from_rows(rows, Cursor { limit, after }, |x| *x);
                    prop_assert!(page.items.len() as i64 <= limit);
                    out.push(page.items.clone());
                    match page.next_cursor {
                        Some(c) => after = Some(c),
                        None => break,
                    }
                }
                out
            };
            let mut offset_pages = Vec::new();
            let mut offset = 0;
            loop {
                let page = Page { limit, offset };
                let items: Vec<i64> = ids.iter().copied()
                    .skip(offset as usize).take(limit as usize).collect();
                let env = OffsetPage::new(items, page, n as i64);
                offset_pages.push(env.items.clone());
                match env.next_offset {
                    Some(o) => offset = o,
                    None => break,
                }
            }
            prop_assert_eq!(&cursor_pages, &offset_pages);
            prop_assert_eq!(cursor_pages.concat(), ids);
        }
    }
}
