//! Where the global feed stands: an opaque, ordered position.

use std::fmt;

/// A place in the feed of every account's events, in commit order: the transaction that wrote
/// the event (always 0 on SQLite, whose one writer hands out ids in commit order) and the
/// event's id. Written `<tx>-<id>`, the global stream's SSE `id`; `0-0` is the start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FeedPosition {
    pub tx: i64,
    pub id: i64,
}

impl FeedPosition {
    pub const START: FeedPosition = FeedPosition { tx: 0, id: 0 };

    /// `<tx>-<id>` (two whole numbers ≥ 0); anything else is `None`. (A bare event id would
    /// not do: on PostgreSQL an id alone does not say where in the feed the event stands.)
    pub fn parse(text: &str) -> Option<FeedPosition> {
        let number = |s: &str| {
            (!s.is_empty() && s.len() <= 19 && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse::<i64>().ok())
                .flatten()
        };
        let (tx, id) = text.trim().split_once('-')?;
        Some(FeedPosition {
            tx: number(tx)?,
            id: number(id)?,
        })
    }
}

impl fmt::Display for FeedPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.tx, self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::FeedPosition;

    #[test]
    fn positions_round_trip_and_order() {
        let p = FeedPosition { tx: 812, id: 9 };
        assert_eq!(FeedPosition::parse(&p.to_string()), Some(p));
        assert_eq!(FeedPosition::parse("17"), None);
        assert!(FeedPosition { tx: 1, id: 1 } > FeedPosition { tx: 0, id: 99 });
        for bad in [
            "",
            "-",
            "1-",
            "-1",
            "a-1",
            "1-2-3",
            "+1",
            "99999999999999999999",
        ] {
            assert_eq!(FeedPosition::parse(bad), None, "{bad}");
        }
    }
}
