//! `ledger-check`: replays every account and compares the result with its projection.

use storage::DbConnection;

use crate::fold::apply;
use crate::{AccountState, Error, repo};

const ACCOUNT_BATCH: i64 = 500;
const EVENT_BATCH: i64 = 5_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub account_id: String,
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub accounts: u64,
    pub events: u64,
    pub mismatches: Vec<Mismatch>,
}

impl Report {
    pub fn is_consistent(&self) -> bool {
        self.mismatches.is_empty()
    }
}

/// One line per mismatch, then the summary line `server ledger-check` prints.
impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for m in &self.mismatches {
            writeln!(f, "mismatch: account {:?}: {}", m.account_id, m.reason)?;
        }
        writeln!(
            f,
            "ledger-check: {} accounts, {} events replayed, {} mismatches",
            self.accounts,
            self.events,
            self.mismatches.len()
        )
    }
}

/// Replays one account's events up to the projection's `last_sequence` (events after it were
/// appended since the projection was read, and are left for the next check). Returns the
/// number of events replayed and what differs, if anything.
pub fn check_account(
    conn: &mut DbConnection,
    account_id: &str,
) -> Result<(u64, Option<String>), Error> {
    let Some(account) = repo::get_account(conn, account_id)? else {
        return Ok((0, None));
    };
    let projection = account.state;
    let mut state = AccountState::default();
    let mut count = 0u64;
    let mut after = 0;
    loop {
        let batch = repo::events(
            conn,
            account_id,
            after,
            Some(projection.last_sequence),
            EVENT_BATCH,
        )?;
        let Some(last) = batch.last() else { break };
        after = last.sequence;
        for event in &batch {
            count += 1;
            if event.sequence != state.last_sequence + 1 {
                return Ok((
                    count,
                    Some(format!(
                        "sequence {} follows {} (gap or duplicate)",
                        event.sequence, state.last_sequence
                    )),
                ));
            }
            let fact = match event.fact() {
                Ok(f) => f,
                Err(reason) => {
                    return Ok((
                        count,
                        Some(format!("event {} is unreadable: {reason}", event.sequence)),
                    ));
                }
            };
            state = apply(state, &fact);
        }
    }
    if state == projection {
        Ok((count, None))
    } else {
        Ok((
            count,
            Some(format!(
                "projection {} but replay gives {}",
                describe(&projection),
                describe(&state)
            )),
        ))
    }
}

fn describe(s: &AccountState) -> String {
    format!(
        "(owner {:?}, balance_cents {}, is_open {}, last_sequence {}, updated_at {:?})",
        s.owner, s.balance_cents, s.is_open, s.last_sequence, s.updated_at
    )
}

/// Checks every account, and that no event lacks its account.
pub fn check_all(conn: &mut DbConnection) -> Result<Report, Error> {
    check_all_with_progress(conn, |_| {})
}

/// [`check_all`], telling `progress` how many accounts are checked so far after each batch of
/// accounts (for a progress bar over [`storage::counts`]' number of accounts).
pub fn check_all_with_progress(
    conn: &mut DbConnection,
    mut progress: impl FnMut(u64),
) -> Result<Report, Error> {
    let mut report = Report::default();
    let mut after: Option<String> = None;
    loop {
        let ids = repo::account_ids_after(conn, after.as_deref(), ACCOUNT_BATCH)?;
        let Some(last) = ids.last().cloned() else {
            break;
        };
        for id in ids {
            let (events, mismatch) = check_account(conn, &id)?;
            report.accounts += 1;
            report.events += events;
            if let Some(reason) = mismatch {
                report.mismatches.push(Mismatch {
                    account_id: id,
                    reason,
                });
            }
        }
        after = Some(last);
        progress(report.accounts);
    }
    let orphans = repo::count_orphan_events(conn)?;
    if orphans > 0 {
        report.mismatches.push(Mismatch {
            account_id: String::new(),
            reason: format!("{orphans} events belong to no account"),
        });
    }
    Ok(report)
}
