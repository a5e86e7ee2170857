//! Configuration read from variables (the environment, or a map in tests) through a lookup
//! function: each read names its variable, so a bad value stops start-up with one line saying
//! which and why ([`ConfigError`]). Secrets are [`Secret`]s, which print as `***`.

use std::fmt;
use std::ops::RangeBounds;
use std::str::FromStr;
use std::time::Duration;

/// A secret value: printed as `***` by Debug so it never reaches a log line.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// A variable whose value cannot be used, and why.
#[derive(Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub variable: &'static str,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid configuration: {}: {}",
            self.variable, self.message
        )
    }
}

impl std::error::Error for ConfigError {}

/// The error of `variable`, saying `message`.
pub fn refuse(variable: &'static str, message: &str) -> ConfigError {
    ConfigError {
        variable,
        message: message.to_owned(),
    }
}

/// The variables, read through `lookup`.
pub struct Vars<F> {
    lookup: F,
}

impl<F: Fn(&str) -> Option<String>> Vars<F> {
    pub fn new(lookup: F) -> Self {
        Vars { lookup }
    }

    /// Whether the variable is set at all (blank included).
    pub fn is_set(&self, variable: &str) -> bool {
        (self.lookup)(variable).is_some()
    }

    /// The value when set and not blank.
    pub fn get(&self, variable: &str) -> Option<String> {
        (self.lookup)(variable).filter(|v| !v.trim().is_empty())
    }

    /// The value read by `f` (given it trimmed); its error names `variable`.
    pub fn parse<T>(
        &self,
        variable: &'static str,
        f: impl FnOnce(&str) -> Result<T, &'static str>,
    ) -> Result<Option<T>, ConfigError> {
        self.get(variable)
            .map(|v| f(v.trim()).map_err(|message| refuse(variable, message)))
            .transpose()
    }

    /// A whole number in `range`; `expected` says what is wanted.
    pub fn number<T: FromStr + PartialOrd>(
        &self,
        variable: &'static str,
        range: impl RangeBounds<T>,
        expected: &'static str,
    ) -> Result<Option<T>, ConfigError> {
        self.parse(variable, |v| {
            v.parse::<T>()
                .ok()
                .filter(|n| range.contains(n))
                .ok_or(expected)
        })
    }

    /// `true`/`1`/`yes` or `false`/`0`/`no`, in any case.
    pub fn flag(&self, variable: &'static str) -> Result<Option<bool>, ConfigError> {
        self.parse(variable, |s| match s.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => Ok(true),
            "false" | "0" | "no" => Ok(false),
            _ => Err("expected true or false"),
        })
    }

    /// A secret: unset is `None`; set but empty, whitespace only or shorter than `min_bytes`
    /// is an error (an empty HMAC key makes every signature forgeable, a short one can be
    /// guessed online). The value is used as is, never trimmed.
    pub fn secret(
        &self,
        variable: &'static str,
        min_bytes: usize,
    ) -> Result<Option<Secret>, ConfigError> {
        match (self.lookup)(variable) {
            None => Ok(None),
            Some(v) if v.trim().is_empty() => Err(refuse(
                variable,
                "must not be empty or whitespace only (unset it to switch the feature off)",
            )),
            Some(v) if v.len() < min_bytes => Err(refuse(
                variable,
                &format!(
                    "must be at least {min_bytes} bytes (generate one with: openssl rand -hex 32)"
                ),
            )),
            Some(v) => Ok(Some(Secret::new(v))),
        }
    }

    /// Whole milliseconds, at least 1; `default` when unset.
    pub fn millis(
        &self,
        variable: &'static str,
        default: Duration,
    ) -> Result<Duration, ConfigError> {
        let expected = "expected a positive number of milliseconds";
        Ok(self
            .number(variable, 1.., expected)?
            .map_or(default, Duration::from_millis))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(
        pairs: &'static [(&'static str, &'static str)],
    ) -> Vars<impl Fn(&str) -> Option<String>> {
        Vars::new(move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn each_read_names_its_variable() {
        let v = vars(&[("N", " 12 "), ("BAD", "x"), ("BLANK", "  "), ("F", "Yes")]);
        assert_eq!(v.number::<u32>("N", 1..=20, "1 to 20"), Ok(Some(12)));
        assert_eq!(
            v.number::<u32>("N", 1..=5, "1 to 5"),
            Err(refuse("N", "1 to 5"))
        );
        assert_eq!(
            v.number::<u32>("BAD", 1.., "a number")
                .unwrap_err()
                .variable,
            "BAD"
        );
        assert_eq!(v.get("BLANK"), None);
        assert_eq!(v.flag("F"), Ok(Some(true)));
        assert_eq!(
            v.millis("MISSING", Duration::from_secs(1)),
            Ok(Duration::from_secs(1))
        );
        assert_eq!(
            refuse("X", "why").to_string(),
            "invalid configuration: X: why"
        );
    }

    #[test]
    fn secrets_are_long_enough_and_never_print() {
        let v = vars(&[
            ("S", "short"),
            ("E", " "),
            ("OK", "0123456789abcdef0123456789abcdef"),
        ]);
        assert!(
            v.secret("S", 32)
                .unwrap_err()
                .message
                .contains("at least 32 bytes")
        );
        assert!(v.secret("E", 32).is_err());
        let ok = v.secret("OK", 32).unwrap().unwrap();
        assert_eq!(format!("{ok:?}"), "***");
        assert_eq!(ok.expose().len(), 32);
    }
}
