//! Use cases spanning several repository calls and transactions.

use chrono::{DateTime, SecondsFormat, Utc};
use diesel::Connection;
use storage::DbConnection;

use crate::{Error, NewArticle, repo};

/// Rows per multi-row `INSERT` when seeding (4 binds per row).
pub const SEED_BATCH: usize = 1_000;
/// Statements per transaction when seeding: one commit (one fsync) per 50,000 rows.
const BATCHES_PER_TRANSACTION: usize = 50;

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

/// Inserts `count` deterministic demo articles (numbers 1..=count) in multi-row `INSERT`s of
/// `batch` rows, committing every 50 statements. `progress` is called after each commit with
/// the number inserted so far. Returns the number inserted.
pub fn seed(
    conn: &mut DbConnection,
    count: u64,
    batch: usize,
    mut progress: impl FnMut(u64),
) -> Result<u64, Error> {
    let batch = batch.clamp(1, 5_000) as u64;
    let per_transaction = batch * BATCHES_PER_TRANSACTION as u64;
    let mut done = 0u64;
    while done < count {
        let end = count.min(done + per_transaction);
        conn.transaction(|c| -> Result<(), Error> {
            let mut next = done + 1;
            while next <= end {
                let last = end.min(next + batch - 1);
                let rows: Vec<NewArticle> = (next..=last).map(demo_article).collect();
                repo::insert_batch(c, &rows)?;
                next = last + 1;
            }
            Ok(())
        })?;
        done = end;
        progress(done);
    }
    Ok(done)
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
