//! The bearer token for write tools: never printed.

use std::fmt;

/// `SERVICE_MCP_BEARER_TOKEN`. `Debug` and `Display` print `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken(String);

impl BearerToken {
    /// `None` for an absent, empty or all-whitespace value (fail closed).
    pub fn new(raw: Option<String>) -> Option<BearerToken> {
        raw.map(|value| value.trim().to_owned())
            .filter(|value| !value.is_empty())
            .map(BearerToken)
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_tokens_are_absent_and_never_printed() {
        assert_eq!(BearerToken::new(None), None);
        assert_eq!(BearerToken::new(Some("  ".into())), None);
        let token = BearerToken::new(Some("s3cret".into())).unwrap();
        assert_eq!(format!("{token:?} {token}"), "*** ***");
        assert_eq!(token.expose(), "s3cret");
    }
}
