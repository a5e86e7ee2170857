//! Timestamps are stored as UTC text that sorts chronologically on both backends.

use chrono::{SecondsFormat, Utc};

/// RFC 3339, UTC, second precision: `2026-11-23T02:41:19Z`.
pub fn now_rfc3339() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// [`now_rfc3339`]'s form, `ago` before now: the cut-off of what is kept for `ago`.
pub fn rfc3339_ago(ago: std::time::Duration) -> String {
    let ago = chrono::Duration::from_std(ago).unwrap_or(chrono::Duration::MAX);
    Utc::now()
        .checked_sub_signed(ago)
        .unwrap_or(chrono::DateTime::<Utc>::MIN_UTC)
        .to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The ledger's form `YYYY-MM-DD HH:MM:SS` (UTC).
pub fn now_sql() -> String {
    Utc::now().format("%Y-%m-%d %H:%M:%S").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let a = now_rfc3339();
        assert_eq!(a.len(), 20);
        assert!(a.ends_with('Z'));
        assert_eq!(&a[10..11], "T");
        let b = now_sql();
        assert_eq!(b.len(), 19);
        assert_eq!(&b[10..11], " ");
        let day = rfc3339_ago(std::time::Duration::from_secs(86_400));
        assert_eq!(day.len(), 20);
        assert!(day < now_rfc3339());
    }
}
