//! `Deprecation` / `Sunset` / `Link` response headers (RFC 9745, RFC 8594) as a typed warning.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::HeaderMap;

use crate::transport::Reply;

/// The service announced that the called operation is deprecated.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let list = api.v1_notes().list(Default::default()).await?;
/// if let Some(w) = list.warning {
///     eprintln!("deprecated; sunset {:?}, use {:?} instead", w.sunset, w.successor);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeprecationWarning {
    /// From `Deprecation: @<unix seconds>` (RFC 9745); `None` for the `true` form.
    pub deprecated_since: Option<SystemTime>,
    /// From `Sunset` (an HTTP date): when the operation stops working.
    pub sunset: Option<SystemTime>,
    /// Whole days from the response until `sunset`, rounded up; zero or negative once the
    /// sunset has passed.
    pub days_left: Option<i64>,
    /// The `Link` target with `rel="successor-version"`.
    pub successor: Option<String>,
}

/// A value from a deprecated operation, with the warning its response carried.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let note: client::Deprecated<client::NoteV1> = api.v1_notes().get(1).await?;
/// if let Some(days) = note.warning.and_then(|w| w.days_left) {
///     eprintln!("V1 stops working in {days} days");
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Deprecated<T> {
    pub value: T,
    /// `None` when the response carried neither `Deprecation` nor `Sunset`.
    pub warning: Option<DeprecationWarning>,
}

impl<T> Deprecated<T> {
    /// `value` with the warning of the reply it came in.
    pub(crate) fn from_reply(value: T, reply: &Reply) -> Self {
        Deprecated {
            value,
            warning: from_headers(&reply.headers, SystemTime::now()),
        }
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

/// An HTTP date (RFC 9110 §5.6.7). The weekday is not checked: the spec's own `Sunset` value,
/// `Sat, 01 Jan 2027`, names the wrong day (1 January 2027 is a Friday).
pub(crate) fn parse_http_date(value: &str) -> Option<SystemTime> {
    if let Ok(t) = httpdate::parse_http_date(value) {
        return Some(t);
    }
    let (_, rest) = value.split_once(", ")?;
    let mut parts = rest.split(' ');
    let (Some(day), Some(month), Some(year), Some(time), Some("GMT"), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return None;
    };
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| *m == month)? as i64 + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let mut hms = time.split(':').map(|n| n.parse::<i64>().ok());
    let (Some(Some(h)), Some(Some(m)), Some(Some(sec)), None) =
        (hms.next(), hms.next(), hms.next(), hms.next())
    else {
        return None;
    };
    if !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 || year < 1970 {
        return None;
    }
    // Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let seconds = u64::try_from(days * 86_400 + h * 3600 + m * 60 + sec).ok()?;
    Some(UNIX_EPOCH + Duration::from_secs(seconds))
}

fn days_until(sunset: SystemTime, now: SystemTime) -> i64 {
    let seconds = match sunset.duration_since(now) {
        Ok(ahead) => i64::try_from(ahead.as_secs()).unwrap_or(i64::MAX),
        Err(behind) => -i64::try_from(behind.duration().as_secs()).unwrap_or(i64::MAX),
    };
    let (days, rest) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    days + i64::from(rest > 0)
}

fn successor(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        params
            .split(';')
            .filter_map(|p| p.split_once('='))
            .any(|(k, v)| {
                k.trim().eq_ignore_ascii_case("rel")
                    && v.trim()
                        .trim_matches('"')
                        .split_whitespace()
                        .any(|r| r.eq_ignore_ascii_case("successor-version"))
            })
            .then(|| target.to_owned())
    })
}

/// The warning a response's headers announce, relative to `now`.
pub(crate) fn from_headers(headers: &HeaderMap, now: SystemTime) -> Option<DeprecationWarning> {
    let deprecation = header(headers, "deprecation");
    let sunset = header(headers, "sunset").and_then(parse_http_date);
    let deprecated =
        deprecation.is_some_and(|v| v.eq_ignore_ascii_case("true") || v.starts_with('@'));
    if !deprecated && sunset.is_none() {
        return None;
    }
    let deprecated_since = deprecation
        .and_then(|v| v.strip_prefix('@'))
        .and_then(|s| s.parse::<u64>().ok())
        .map(|s| UNIX_EPOCH + Duration::from_secs(s));
    Some(DeprecationWarning {
        deprecated_since,
        sunset,
        days_left: sunset.map(|s| days_until(s, now)),
        successor: header(headers, "link").and_then(successor),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn spec_headers_give_days_left() {
        let h = headers(&[
            ("deprecation", "true"),
            ("sunset", "Sat, 01 Jan 2027 00:00:00 GMT"),
            ("link", "</v2/notes>; rel=\"successor-version\""),
        ]);
        let sunset = parse_http_date("Sat, 01 Jan 2027 00:00:00 GMT").unwrap();
        assert_eq!(sunset, UNIX_EPOCH + Duration::from_secs(1_798_761_600));
        assert_eq!(
            parse_http_date("Fri, 01 Jan 2027 00:00:00 GMT"),
            Some(sunset)
        );
        assert_eq!(parse_http_date("Sat, 32 Jan 2027 00:00:00 GMT"), None);
        assert_eq!(parse_http_date("tomorrow"), None);
        let w = from_headers(&h, sunset - Duration::from_secs(86_400 * 10 - 60)).unwrap();
        assert_eq!(w.days_left, Some(10));
        assert_eq!(w.sunset, Some(sunset));
        assert_eq!(w.successor.as_deref(), Some("/v2/notes"));
        assert_eq!(w.deprecated_since, None);
        let past = from_headers(&h, sunset + Duration::from_secs(86_400 * 2)).unwrap();
        assert_eq!(past.days_left, Some(-2));
    }

    #[test]
    fn rfc9745_form_and_absence() {
        let h = headers(&[("deprecation", "@1700000000")]);
        let w = from_headers(&h, SystemTime::now()).unwrap();
        assert_eq!(
            w.deprecated_since,
            Some(UNIX_EPOCH + Duration::from_secs(1_700_000_000))
        );
        assert_eq!(w.days_left, None);
        assert_eq!(from_headers(&headers(&[]), SystemTime::now()), None);
        assert_eq!(
            from_headers(&headers(&[("deprecation", "false")]), SystemTime::now()),
            None
        );
        assert_eq!(
            successor("<a>; rel=next, <b>; rel=\"successor-version\""),
            Some("b".into())
        );
    }
}
