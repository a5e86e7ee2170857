//! Who may call a path, declared beside each route: a list of [`Rule`]s (a path pattern, one or
//! every method, and what it needs) that the app's guard consults. What a rule grants (its
//! access kind) is the app's; how a pattern covers a path is decided here, once.
//!
//! `{name}` in a pattern matches one segment; a [`Rule::tree`] also covers every path under
//! its pattern. A public rule opens the pattern exactly as written; the others also cover it
//! with a trailing `/` (deny by default: a spelling never opens more than the route). A rule
//! also says whether the rate limit counts the path ([`Rule::unmetered`]).

use actix_web::dev::ServiceRequest;
use actix_web::http::Method;

/// What a rule grants: the app's own kinds, of which one opens a path to everyone.
pub trait AccessKind: Copy + Eq + std::fmt::Debug {
    /// Whether this kind opens a path to every caller.
    fn is_public(self) -> bool;
}

/// What one method (or every method) of a path pattern needs.
#[derive(Debug, Clone)]
pub struct Rule<A> {
    method: Option<Method>,
    pattern: &'static str,
    below: bool,
    access: A,
    metered: bool,
}

impl<A: AccessKind> Rule<A> {
    const fn new(
        method: Option<Method>,
        pattern: &'static str,
        access: A,
        below: bool,
        metered: bool,
    ) -> Rule<A> {
        Rule {
            method,
            pattern,
            below,
            access,
            metered,
        }
    }

    /// Every method of `pattern`.
    pub const fn any(pattern: &'static str, access: A) -> Rule<A> {
        Rule::new(None, pattern, access, false, true)
    }

    /// Only `method` of `pattern`: another method falls to the default, or to the router's
    /// 405 when no route serves it.
    pub const fn only(method: Method, pattern: &'static str, access: A) -> Rule<A> {
        Rule::new(Some(method), pattern, access, false, true)
    }

    /// Every method of `pattern` and of every path under it.
    pub const fn tree(pattern: &'static str, access: A) -> Rule<A> {
        Rule::new(None, pattern, access, true, true)
    }

    /// [`Rule::any`] that the rate limit never counts.
    pub const fn unmetered(pattern: &'static str, access: A) -> Rule<A> {
        Rule::new(None, pattern, access, false, false)
    }

    /// [`Rule::tree`] that the rate limit never counts.
    pub const fn unmetered_tree(pattern: &'static str, access: A) -> Rule<A> {
        Rule::new(None, pattern, access, true, false)
    }

    /// The values of the pattern's `{parameters}` when `path` is covered (method aside).
    fn covers<'p>(&self, path: &'p str) -> Option<Vec<&'p str>> {
        let path = match self.access.is_public() {
            true => path,
            false if path.len() > 1 => path.trim_end_matches('/'),
            false => path,
        };
        let mut wanted = self.pattern.split('/');
        let mut given = path.split('/');
        let mut values = Vec::new();
        loop {
            match (wanted.next(), given.next()) {
                (None, None) => return Some(values),
                (None, Some(_)) if self.below && self.pattern != "/" => return Some(values),
                (Some(w), Some(g)) if w.starts_with('{') && w.ends_with('}') => values.push(g),
                (Some(w), Some(g)) if w == g => {}
                _ => return None,
            }
        }
    }

    fn serves(&self, method: &Method) -> bool {
        self.method.as_ref().is_none_or(|m| m == method)
    }
}

/// Every route module's rules, in registration order: the first that covers a request decides.
#[derive(Debug, Clone)]
pub struct Rules<A>(Vec<Rule<A>>);

impl<A> Default for Rules<A> {
    fn default() -> Self {
        Rules(Vec::new())
    }
}

impl<A: AccessKind> Rules<A> {
    pub fn new<'a>(lists: impl IntoIterator<Item = &'a [Rule<A>]>) -> Rules<A>
    where
        A: 'a,
    {
        Rules(lists.into_iter().flatten().cloned().collect())
    }

    /// The access declared for `method` on `path`, with the values of the pattern's
    /// `{parameters}`, if a rule covers it.
    pub fn declared<'p>(&self, method: &Method, path: &'p str) -> Option<(A, Vec<&'p str>)> {
        self.0
            .iter()
            .filter(|r| r.serves(method))
            .find_map(|rule| Some((rule.access, rule.covers(path)?)))
    }

    /// Whether the rate limit counts `path`: everything but what an unmetered rule covers.
    pub fn metered(&self, path: &str) -> bool {
        !self
            .0
            .iter()
            .any(|rule| !rule.metered && rule.covers(path).is_some())
    }

    /// A method no route serves on a path a public rule opens for another method (`TRACE
    /// /webhook`): the router's 405 with `Allow` is the honest answer, and it opens nothing.
    pub fn opened_for_another_method(&self, req: &ServiceRequest) -> bool {
        let path = req.path();
        self.0.iter().any(|rule| {
            rule.method.is_some() && rule.access.is_public() && rule.covers(path).is_some()
        }) && crate::Edge::of(req.request())
            .is_ok_and(|edge| !edge.routes.serves(path, req.method()))
    }
}
