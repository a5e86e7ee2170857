//! Use cases spanning several repository calls and transactions.

use chrono::{DateTime, SecondsFormat, Utc};
use storage::DbConnection;

use crate::{Error, NewArticle, repo};

/// Rows per multi-row `INSERT` when seeding (4 binds per row).
pub const SEED_BATCH: usize = 1_000;

const AUTHORS: [&str; 7] = [
    "Ada Lovelace",
    "Alan Turing",
    "Barbara Liskov",
    "Donald Knuth",
    "Edsger Dijkstra",
    "Grace Hopper",
    "Margaret Hamilton",
];
const CATEGORIES: [Option<&str>; 6] = [
    Some("databases"),
    Some("networking"),
    Some("rust"),
    Some("security"),
    Some("testing"),
    None,
];
/// 2026-01-01T00:00:00Z: the first seeded article's `created_at`; each next one is a minute
/// later.
const SEED_EPOCH: i64 = 1_767_225_600;

/// The `n`-th demo article (1-based): the same `n` always gives the same article.
pub fn demo_article(n: u64) -> NewArticle {
    let i = n as usize;
    let minutes = i64::try_from(n).unwrap_or(i64::MAX / 120);
    let created_at = DateTime::<Utc>::from_timestamp(SEED_EPOCH + minutes.saturating_mul(60), 0)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Secs, true);
    NewArticle {
        title: format!("Demo article {n}"),
        author: AUTHORS[i % AUTHORS.len()].to_owned(),
        category: CATEGORIES[i % CATEGORIES.len()].map(str::to_owned),
        created_at,
    }
}

/// Inserts `count` deterministic demo articles (numbers 1..=count: every run repeats the same
/// sequence) in multi-row `INSERT`s of `batch` rows, committing every
/// [`storage::seed::BATCHES_PER_TRANSACTION`] statements. `progress` is called after each
/// commit with the number inserted so far. Returns the number inserted.
pub fn seed(
    conn: &mut DbConnection,
    count: u64,
    batch: usize,
    progress: impl FnMut(u64),
) -> Result<u64, Error> {
    storage::seed::in_batches(
        conn,
        1,
        count,
        batch,
        |c, from, to| {
            let rows: Vec<NewArticle> = (from..=to).map(demo_article).collect();
            repo::insert_batch(c, &rows).map(drop)
        },
        progress,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_articles_are_deterministic() {
        let a = demo_article(1);
        assert_eq!(a, demo_article(1));
        assert_eq!(a.title, "Demo article 1");
        assert_eq!(a.author, "Alan Turing");
        assert_eq!(a.category.as_deref(), Some("networking"));
        assert_eq!(a.created_at, "2026-01-01T00:01:00Z");
        assert_eq!(demo_article(5).category, None);
        assert_ne!(demo_article(2), demo_article(3));
    }
}
