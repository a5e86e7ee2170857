//! One spelling per path. actix routes on the percent-decoded path, but `req.path()` is the
//! path as sent, so `/%761/notes` reached V1 without its deprecation headers or its count. This
//! outermost layer rewrites the request's URI once, decoding the escapes of unreserved
//! characters (RFC 3986 §6.2.2.2: `%76` is `v`), so every layer and the router see the same
//! path. Other escapes (`%2F`, `%20`, …) stay as they are.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Uri;
use actix_web::middleware::Next;

pub async fn normalize(
    mut req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    if let Some(path) = decode_unreserved(req.path())
        && let Some(uri) = with_path(req.uri(), &path)
    {
        req.match_info_mut().get_mut().update(&uri);
        req.head_mut().uri = uri;
    }
    next.call(req).await
}

fn with_path(uri: &Uri, path: &str) -> Option<Uri> {
    let target = match uri.query() {
        Some(query) => format!("{path}?{query}"),
        None => path.to_owned(),
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(target.parse().ok()?);
    Uri::from_parts(parts).ok()
}

/// The path with `%XX` escapes of unreserved characters decoded; `None` when nothing changes.
pub fn decode_unreserved(path: &str) -> Option<String> {
    if !path.contains('%') {
        return None;
    }
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut changed = false;
    let mut i = 0;
    while i < bytes.len() {
        let decoded = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok())
            .filter(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
        match decoded {
            Some(b) => {
                out.push(char::from(b));
                changed = true;
                i += 3;
            }
            None => {
                out.push(char::from(bytes[i]));
                i += 1;
            }
        }
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreserved_escapes_are_decoded_once() {
        assert_eq!(
            decode_unreserved("/%761/notes").as_deref(),
            Some("/v1/notes")
        );
        assert_eq!(
            decode_unreserved("/v%31/%6Eotes").as_deref(),
            Some("/v1/notes")
        );
        assert_eq!(decode_unreserved("/%7e%2D%2e%5F").as_deref(), Some("/~-._"));
        // Reserved and other characters keep their escapes; `%2576` stays `%2576` (not `v`).
        assert_eq!(decode_unreserved("/a%2Fb%20c"), None);
        assert_eq!(decode_unreserved("/%2576"), None);
        assert_eq!(decode_unreserved("/%zz/%4"), None);
        assert_eq!(decode_unreserved("/notes"), None);
    }
}
