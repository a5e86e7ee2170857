//! The pure mapping from a tool and a call's JSON arguments to a [`RequestSpec`]. No I/O.

use std::fmt;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Map, Value};

use crate::error::{ArgumentError, BaseUrlError};
use crate::model::{Method, PathPart, PathTemplate, Tool};
use crate::validate::is_dot_segment;

/// Everything but the RFC 3986 unreserved characters `A-Z a-z 0-9 - . _ ~` is percent-encoded,
/// in path values and in query keys and values alike (a space is `%20`, never `+`).
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A checked base URL: `http://` or `https://`, a host, an optional port and path prefix, no
/// query or fragment. Trailing slashes are dropped, so joining never doubles a slash.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BaseUrl(String);

impl BaseUrl {
    pub fn parse(text: &str) -> Result<BaseUrl, BaseUrlError> {
        if text
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '\\')
        {
            return Err(BaseUrlError::InvalidCharacter);
        }
        if text.contains(['?', '#']) {
            return Err(BaseUrlError::QueryOrFragment);
        }
        let rest = strip_prefix_ignore_case(text, "http://")
            .or_else(|| strip_prefix_ignore_case(text, "https://"))
            .ok_or(BaseUrlError::Scheme)?;
        let authority = rest.split('/').next().unwrap_or_default();
        let host_port = authority.rsplit('@').next().unwrap_or_default();
        let host = if host_port.starts_with('[') {
            host_port
        } else {
            host_port.split(':').next().unwrap_or_default()
        };
        if host.is_empty() {
            return Err(BaseUrlError::NoHost);
        }
        Ok(BaseUrl(text.trim_end_matches('/').to_owned()))
    }

    /// The base URL without trailing slashes.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

impl std::str::FromStr for BaseUrl {
    type Err = BaseUrlError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        BaseUrl::parse(text)
    }
}

impl fmt::Display for BaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The HTTP request a tool call maps to.
///
/// `url` is the base URL joined with the filled-in path, **without** the query string; `query`
/// holds the decoded pairs in order. [`RequestSpec::full_url`] gives the URL with the
/// percent-encoded query appended, or hand `query` to an HTTP client's own query builder.
/// `body` is `Some` (always a JSON object, possibly empty) exactly for POST, PUT and PATCH.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestSpec {
    pub method: Method,
    pub url: String,
    pub query: Vec<(String, String)>,
    pub body: Option<Value>,
}

impl RequestSpec {
    /// The query pairs percent-encoded (everything but unreserved characters) and joined with
    /// `&`, without the leading `?`; empty when there are no pairs.
    pub fn query_string(&self) -> String {
        let mut out = String::new();
        for (key, value) in &self.query {
            if !out.is_empty() {
                out.push('&');
            }
            out.extend(utf8_percent_encode(key, COMPONENT));
            out.push('=');
            out.extend(utf8_percent_encode(value, COMPONENT));
        }
        out
    }

    /// `url`, followed by `?` and [`RequestSpec::query_string`] when there is a query.
    pub fn full_url(&self) -> String {
        if self.query.is_empty() {
            self.url.clone()
        } else {
            format!("{}?{}", self.url, self.query_string())
        }
    }
}

impl fmt::Display for RequestSpec {
    /// `METHOD full-url`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.method, self.full_url())
    }
}

impl Tool {
    /// Maps a call to a request: checks `base_url` ([`BaseUrl::parse`]), then
    /// [`Tool::build_request_at`].
    pub fn build_request(
        &self,
        base_url: &str,
        args: &Map<String, Value>,
    ) -> Result<RequestSpec, ArgumentError> {
        let base = BaseUrl::parse(base_url)?;
        self.build_request_at(&base, args)
    }

    /// Maps a call to a request against an already checked base URL.
    ///
    /// - Each `{param}` token takes the argument of the same name: a string as is, a number or
    ///   boolean as its JSON text, percent-encoded but for unreserved characters. A missing
    ///   argument, or null, an array or an object, is an error; so is a value that would leave
    ///   its path segment empty or make it `.` or `..`.
    /// - GET and DELETE: the other arguments become query pairs, in argument order. Strings as
    ///   is, numbers and booleans as JSON text, an array as one pair per element (its elements
    ///   must be strings, numbers or booleans), null leaves the argument out, an object is an
    ///   error. No body.
    /// - POST, PUT and PATCH: the other arguments are the JSON object body (always `Some`, `{}`
    ///   when none are left), values untouched; no query.
    ///
    /// The result always starts with the base URL and the template's literal prefix: the values
    /// cannot add a segment, a query, a fragment or change the host.
    pub fn build_request_at(
        &self,
        base: &BaseUrl,
        args: &Map<String, Value>,
    ) -> Result<RequestSpec, ArgumentError> {
        let template = &self.source.path;
        let path = render_path(template, args)?;
        let mut url = String::with_capacity(base.as_str().len() + 1 + path.len());
        url.push_str(base.as_str());
        if !path.starts_with('/') {
            url.push('/');
        }
        url.push_str(&path);

        let method = self.source.method;
        let rest = args
            .iter()
            .filter(|(key, _)| !template.params().any(|param| param == key.as_str()));
        let (query, body) = if method.has_body() {
            let body: Map<String, Value> = rest.map(|(k, v)| (k.clone(), v.clone())).collect();
            (Vec::new(), Some(Value::Object(body)))
        } else {
            let mut query = Vec::new();
            for (key, value) in rest {
                query_pairs(key, value, &mut query)?;
            }
            (query, None)
        };
        Ok(RequestSpec {
            method,
            url,
            query,
            body,
        })
    }
}

fn render_path(
    template: &PathTemplate,
    args: &Map<String, Value>,
) -> Result<String, ArgumentError> {
    let mut out = String::with_capacity(template.raw.len() + 16);
    // Start of the current segment, and the first token that fed it.
    let mut segment_start = 0;
    let mut segment_param: Option<&str> = None;
    for part in &template.parts {
        match part {
            PathPart::Literal(text) => {
                for ch in text.chars() {
                    if ch == '/' {
                        check_segment(&out[segment_start..], segment_param)?;
                        segment_start = out.len() + 1;
                        segment_param = None;
                    }
                    out.push(ch);
                }
            }
            PathPart::Param(name) => {
                let value = args
                    .get(name)
                    .ok_or_else(|| ArgumentError::MissingPathArgument { name: name.clone() })?;
                let text = scalar_text(value)
                    .ok_or_else(|| ArgumentError::InvalidPathArgument { name: name.clone() })?;
                out.extend(utf8_percent_encode(&text, COMPONENT));
                segment_param.get_or_insert(name);
            }
        }
    }
    check_segment(&out[segment_start..], segment_param)?;
    Ok(out)
}

/// A segment fed by a token must be neither empty nor a dot segment. Percent-encoding the dots
/// is no defence: WHATWG URL parsers (the `url` crate, so reqwest) read `%2E%2E` as `..`.
fn check_segment(segment: &str, param: Option<&str>) -> Result<(), ArgumentError> {
    let Some(name) = param else {
        return Ok(());
    };
    if segment.is_empty() {
        return Err(ArgumentError::EmptyPathSegment {
            name: name.to_owned(),
        });
    }
    if is_dot_segment(segment) {
        return Err(ArgumentError::DotPathSegment {
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// A string as is; a number or boolean as its JSON text; anything else has no scalar text.
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

fn query_pairs(
    key: &str,
    value: &Value,
    out: &mut Vec<(String, String)>,
) -> Result<(), ArgumentError> {
    let invalid = || ArgumentError::InvalidQueryArgument {
        name: key.to_owned(),
    };
    match value {
        Value::Null => {}
        Value::Array(items) => {
            for item in items {
                out.push((key.to_owned(), scalar_text(item).ok_or_else(invalid)?));
            }
        }
        Value::Object(_) => return Err(invalid()),
        scalar => out.push((key.to_owned(), scalar_text(scalar).ok_or_else(invalid)?)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_rules() {
        assert_eq!(
            BaseUrl::parse("http://127.0.0.1:8080/api/")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:8080/api"
        );
        assert_eq!(BaseUrl::parse("HTTPS://h").unwrap().as_str(), "HTTPS://h");
        assert_eq!(
            BaseUrl::parse("http://[::1]:80").unwrap().as_str(),
            "http://[::1]:80"
        );
        assert_eq!(BaseUrl::parse("ftp://h"), Err(BaseUrlError::Scheme));
        assert_eq!(BaseUrl::parse("127.0.0.1:8080"), Err(BaseUrlError::Scheme));
        assert_eq!(BaseUrl::parse("http://"), Err(BaseUrlError::NoHost));
        assert_eq!(BaseUrl::parse("http:///x"), Err(BaseUrlError::NoHost));
        assert_eq!(BaseUrl::parse("http://:80"), Err(BaseUrlError::NoHost));
        assert_eq!(BaseUrl::parse("http://u@"), Err(BaseUrlError::NoHost));
        assert_eq!(
            BaseUrl::parse("http://h/a?x"),
            Err(BaseUrlError::QueryOrFragment)
        );
        assert_eq!(
            BaseUrl::parse("http://h#x"),
            Err(BaseUrlError::QueryOrFragment)
        );
        assert_eq!(
            BaseUrl::parse("http://h /"),
            Err(BaseUrlError::InvalidCharacter)
        );
        assert_eq!(
            BaseUrl::parse("http:\\\\h"),
            Err(BaseUrlError::InvalidCharacter)
        );
    }

    #[test]
    fn query_string_encodes_everything_but_unreserved() {
        let spec = RequestSpec {
            method: Method::Get,
            url: "http://h/x".into(),
            query: vec![
                ("a b".into(), "1+1=2&c/d?#é~._-".into()),
                ("k".into(), String::new()),
            ],
            body: None,
        };
        assert_eq!(
            spec.query_string(),
            "a%20b=1%2B1%3D2%26c%2Fd%3F%23%C3%A9~._-&k="
        );
        assert_eq!(
            spec.full_url(),
            format!("http://h/x?{}", spec.query_string())
        );
        assert_eq!(spec.to_string(), format!("GET {}", spec.full_url()));
        let bare = RequestSpec {
            query: Vec::new(),
            ..spec
        };
        assert_eq!(bare.full_url(), "http://h/x");
    }
}
