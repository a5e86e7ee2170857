//! The V1 deprecation policy: the three response headers every V1 answer carries, and who is
//! still calling V1.

use std::net::IpAddr;

/// `Sunset` (RFC 8594): V1 stops answering at this instant.
pub const SUNSET: &str = "Sat, 01 Jan 2027 00:00:00 GMT";
/// `Link` to the successor version.
pub const SUCCESSOR_LINK: &str = "</v2/notes>; rel=\"successor-version\"";
/// When V1 was deprecated, 2026-01-01T00:00:00Z, in Unix seconds: the value of the RFC 9745
/// form of `Deprecation` (`@1767225600`).
pub const DEPRECATED_AT: i64 = 1_767_225_600;

/// The value form of the `Deprecation` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeprecationForm {
    /// `Deprecation: true`, as the service specification shows it (the default).
    #[default]
    Boolean,
    /// RFC 9745's structured date: `Deprecation: @1767225600`.
    Rfc9745,
}

impl DeprecationForm {
    /// `true` (or `boolean`) and `rfc9745`, any case.
    pub fn parse(value: &str) -> Option<DeprecationForm> {
        match value.trim().to_ascii_lowercase().as_str() {
            "true" | "boolean" => Some(DeprecationForm::Boolean),
            "rfc9745" => Some(DeprecationForm::Rfc9745),
            _ => None,
        }
    }

    pub fn header_value(self) -> String {
        match self {
            DeprecationForm::Boolean => "true".to_owned(),
            DeprecationForm::Rfc9745 => format!("@{DEPRECATED_AT}"),
        }
    }

    /// `(name, value)` of the three headers every V1 response carries.
    pub fn headers(self) -> [(&'static str, String); 3] {
        [
            ("deprecation", self.header_value()),
            ("sunset", SUNSET.to_owned()),
            ("link", SUCCESSOR_LINK.to_owned()),
        ]
    }
}

/// The longest `X-User-Id` value counted as a caller name; longer or odd values fall back to
/// the client address.
pub const CALLER_ID_MAX: usize = 64;

/// Names the caller of one V1 request: `user:<X-User-Id>` when that header holds 1–64
/// printable ASCII characters (surrounding blanks ignored), else `ip:<client address>`, else
/// `unknown`.
pub fn caller(user_id: Option<&str>, client: Option<IpAddr>) -> String {
    match (user_id.map(str::trim), client) {
        (Some(id), _)
            if (1..=CALLER_ID_MAX).contains(&id.len())
                && id.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            format!("user:{id}")
        }
        (_, Some(ip)) => format!("ip:{ip}"),
        _ => "unknown".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values() {
        assert_eq!(
            DeprecationForm::default().headers(),
            [
                ("deprecation", "true".to_owned()),
                ("sunset", "Sat, 01 Jan 2027 00:00:00 GMT".to_owned()),
                ("link", "</v2/notes>; rel=\"successor-version\"".to_owned()),
            ]
        );
        assert_eq!(DeprecationForm::Rfc9745.header_value(), "@1767225600");
    }

    #[test]
    fn forms_parse() {
        assert_eq!(
            DeprecationForm::parse("RFC9745"),
            Some(DeprecationForm::Rfc9745)
        );
        assert_eq!(
            DeprecationForm::parse(" true "),
            Some(DeprecationForm::Boolean)
        );
        assert_eq!(DeprecationForm::parse("date"), None);
    }

    #[test]
    fn callers() {
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(caller(Some("42"), Some(ip)), "user:42");
        assert_eq!(caller(Some(" alice "), None), "user:alice");
        assert_eq!(caller(Some(""), Some(ip)), "ip:127.0.0.1");
        assert_eq!(caller(Some("has space"), Some(ip)), "ip:127.0.0.1");
        assert_eq!(caller(Some(&"x".repeat(65)), Some(ip)), "ip:127.0.0.1");
        assert_eq!(
            caller(Some(&"x".repeat(64)), None),
            format!("user:{}", "x".repeat(64))
        );
        assert_eq!(caller(None, Some("::1".parse().unwrap())), "ip:::1");
        assert_eq!(caller(None, None), "unknown");
    }
}
