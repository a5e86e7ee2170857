//! Reads from PostgreSQL standbys that cannot go back in time for the caller: read-your-writes
//! through a consistency token.
//!
//! Every successful write answers the primary's WAL position after its commit
//! ([`Store::wal_position`], an [`Lsn`]); a read that brings it back is served by a standby only
//! once that standby has replayed past it (`pg_last_wal_replay_lsn()`), waiting at most the
//! configured budget, and otherwise by the primary. A standby that cannot be reached, or is not
//! in recovery (a promoted or misconfigured one), is never trusted: the primary answers. Reads
//! without a token go to the primary, unless the operator chose eventual reads.
//!
//! SQLite has no standbys: [`Store::wal_position`] is `None` there and no `Replicas` is built.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use diesel::RunQueryDsl;
use diesel::sql_types::{Bool, Nullable, Text};

use crate::fault::Failure;
use crate::{Database, DbConnection, StorageError, Store};

/// A WAL position (`pg_lsn`), as PostgreSQL writes it: `16/B374D848`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Lsn(u64);

impl Lsn {
    /// `None` unless `text` is two hex numbers of at most 8 digits around a `/`.
    pub fn parse(text: &str) -> Option<Lsn> {
        let (high, low) = text.trim().split_once('/')?;
        let part = |s: &str| {
            (!s.is_empty() && s.len() <= 8 && s.bytes().all(|b| b.is_ascii_hexdigit()))
                .then(|| u64::from_str_radix(s, 16).ok())
                .flatten()
        };
        Some(Lsn((part(high)? << 32) | part(low)?))
    }
}

impl std::fmt::Display for Lsn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:X}/{:X}", self.0 >> 32, self.0 & 0xFFFF_FFFF)
    }
}

/// The standbys of `DATABASE_REPLICA_URLS` (`list`, comma-separated): PostgreSQL URLs only, beside
/// a PostgreSQL `primary`.
pub fn standbys(list: &str, primary: &str) -> Result<Vec<Database>, &'static str> {
    let postgres = |url: &str| {
        Database::parse(url)
            .ok()
            .filter(|db| db.backend() == crate::Backend::Postgres)
    };
    if postgres(primary).is_none() {
        return Err("standbys need a PostgreSQL DATABASE_URL");
    }
    list.split(',')
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .map(|url| postgres(url).ok_or("expected postgres:// URLs, comma-separated"))
        .collect()
}

/// Which reads may go to a standby.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadPolicy {
    /// Only reads that bring a consistency token (the default).
    #[default]
    WithToken,
    /// Every read, a token or not: reads without one may be stale.
    Eventual,
}

/// Where a read was served, for the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServedBy {
    Standby,
    Primary,
}

/// How long a standby that could not be reached is passed over before it is tried again, so
/// that reads do not each wait for its checkout.
pub const STANDBY_RETRY: Duration = Duration::from_secs(1);

/// The longest a read waits for a standby's connection: a standby that gives none this fast is
/// treated as down (the primary answers).
pub const STANDBY_CHECKOUT: Duration = Duration::from_millis(250);

struct Standby {
    store: Store,
    /// Passed over until then: it could not be reached, or is not a standby (promoted).
    down_until: parking_lot::Mutex<Option<Instant>>,
}

impl Standby {
    fn up(&self) -> bool {
        self.down_until
            .lock()
            .is_none_or(|until| Instant::now() >= until)
    }

    fn went_down(&self) {
        *self.down_until.lock() = Some(Instant::now() + STANDBY_RETRY);
    }
}

/// The standbys' pools, tried in turn.
pub struct Replicas {
    standbys: Vec<Standby>,
    next: AtomicUsize,
    /// The most a tokened read waits for a standby to catch up before it goes to the primary.
    wait: Duration,
    policy: ReadPolicy,
}

#[derive(diesel::QueryableByName)]
struct Caught {
    #[diesel(sql_type = Bool)]
    recovering: bool,
    #[diesel(sql_type = Nullable<Bool>)]
    caught: Option<bool>,
}

#[derive(diesel::QueryableByName)]
struct Position {
    #[diesel(sql_type = Text)]
    lsn: String,
}

impl Replicas {
    /// Pools for `standbys` (PostgreSQL URLs), connected lazily: a standby that is down at
    /// start-up is tried again at each read.
    pub fn new(
        standbys: Vec<Database>,
        pool_size: u32,
        wait: Duration,
        policy: ReadPolicy,
    ) -> Result<Replicas, StorageError> {
        let standbys = standbys
            .into_iter()
            .map(|db| {
                let timeouts = crate::Timeouts {
                    checkout: STANDBY_CHECKOUT,
                    ..db.timeouts
                };
                Ok(Standby {
                    store: Store::lazy(db.with_timeouts(timeouts), pool_size)?,
                    down_until: parking_lot::Mutex::new(None),
                })
            })
            .collect::<Result<_, StorageError>>()?;
        Ok(Replicas {
            standbys,
            next: AtomicUsize::new(0),
            wait,
            policy,
        })
    }

    pub fn len(&self) -> usize {
        self.standbys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.standbys.is_empty()
    }

    /// Runs the read `f` on a standby when the policy and `token` allow it and the standby has
    /// replayed past `token`, else on `primary`. Whatever goes wrong on the standby side
    /// (unreachable, not in recovery, behind past the wait, a fault during `f`), the primary
    /// answers: a standby never fails a read. Where it was served goes to the primary's
    /// observer.
    pub fn read<T, E>(
        &self,
        primary: &Store,
        token: Option<Lsn>,
        mut f: impl FnMut(&mut DbConnection) -> Result<T, E>,
    ) -> Result<T, Failure<E>>
    where
        E: std::error::Error + 'static,
    {
        let wanted = match (token, self.policy) {
            (Some(lsn), _) => Some(Some(lsn)),
            (None, ReadPolicy::Eventual) => Some(None),
            (None, ReadPolicy::WithToken) => None,
        };
        if let (Some(lsn), false) = (wanted, self.standbys.is_empty()) {
            let turn = self.next.fetch_add(1, Ordering::Relaxed) % self.standbys.len();
            let standby = &self.standbys[turn];
            if standby.up() && self.caught_up(standby, lsn) {
                // The read's own answer (a 404, a refusal) is the answer; a fault of the
                // standby (unreachable, dropped, cancelled by recovery) sends it to the primary.
                match standby.store.read(&mut f) {
                    Err(Failure::Store(_)) => {}
                    Err(Failure::Op(e)) if crate::Fault::find(&e).is_some() => {}
                    out => {
                        primary.observer().read_served(ServedBy::Standby);
                        return out;
                    }
                }
            }
        }
        primary.observer().read_served(ServedBy::Primary);
        primary.read(f)
    }

    /// Whether `standby` is in recovery and has replayed past `lsn` (any standby in recovery
    /// when there is no token), polling until the wait is spent.
    fn caught_up(&self, standby: &Standby, lsn: Option<Lsn>) -> bool {
        let Ok(mut conn) = standby.store.checkout() else {
            standby.went_down();
            return false;
        };
        let sql = match lsn {
            Some(lsn) => format!(
                "SELECT pg_is_in_recovery() AS recovering, \
                 pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn AS caught"
            ),
            None => "SELECT pg_is_in_recovery() AS recovering, true AS caught".to_owned(),
        };
        let until = Instant::now() + self.wait;
        loop {
            let c: &mut DbConnection = &mut conn;
            match diesel::sql_query(&sql).get_result::<Caught>(c) {
                // Not a standby (promoted, or misconfigured): never trusted, and passed over
                // for a while instead of being waited for on every read.
                Ok(Caught {
                    recovering: false, ..
                }) => {
                    standby.went_down();
                    return false;
                }
                Ok(Caught {
                    caught: Some(true), ..
                }) => return true,
                Ok(_) if lsn.is_some() && Instant::now() < until => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                Ok(_) => return false,
                Err(_) => {
                    conn.discard();
                    standby.went_down();
                    return false;
                }
            }
        }
    }
}

impl Store {
    /// The primary's WAL position now: after a commit, at or past that commit's record, so a
    /// standby that replayed past it has the commit. `None` on SQLite.
    pub fn wal_position(&self) -> Result<Option<Lsn>, crate::StoreError> {
        if self.backend() == crate::Backend::Sqlite {
            return Ok(None);
        }
        let mut conn = self.checkout()?;
        let c: &mut DbConnection = &mut conn;
        let position = diesel::sql_query("SELECT pg_current_wal_lsn()::text AS lsn")
            .get_result::<Position>(c)
            .map_err(|e| crate::StoreError::from_diesel(&e))?;
        Ok(Lsn::parse(&position.lsn))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_parse_order_and_print_as_postgresql_does() {
        let a = Lsn::parse("16/B374D848").unwrap();
        let b = Lsn::parse("17/0").unwrap();
        assert!(a < b);
        assert_eq!(a.to_string(), "16/B374D848");
        assert_eq!(Lsn::parse(" 0/1 ").unwrap().to_string(), "0/1");
        for bad in [
            "",
            "/",
            "1/",
            "/1",
            "123456789/0",
            "0/g",
            "1-2",
            "0/1; DROP TABLE notes",
        ] {
            assert_eq!(Lsn::parse(bad), None, "{bad}");
        }
    }
}
