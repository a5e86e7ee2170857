//! Compares a copy with its source: per table, the row count and the checksum of every row in
//! key order; then every account's projection with its replay, on the copy.

use std::fmt;

use storage::DbConnection;

use crate::Error;
use crate::tables::{Checksum, TABLES, Table};

/// One table as one side holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Side {
    /// `COUNT(*)`, independent of the key-order walk behind the checksum.
    pub rows: i64,
    pub checksum: Checksum,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableReport {
    pub table: &'static str,
    pub source: Side,
    pub target: Side,
}

impl TableReport {
    pub fn is_ok(&self) -> bool {
        self.source == self.target
            && u64::try_from(self.source.rows).ok() == Some(self.source.checksum.rows)
    }
}

/// The outcome of a verification: every table, then the ledger replay on the target.
#[derive(Debug, Clone)]
pub struct Report {
    pub tables: Vec<TableReport>,
    pub ledger: ledger::check::Report,
    /// The target's kept counts that differ from its rows (`storage::counts::audit`).
    pub count_drift: Vec<storage::counts::Drift>,
}

impl Report {
    pub fn is_ok(&self) -> bool {
        self.tables.iter().all(TableReport::is_ok)
            && self.ledger.is_consistent()
            && self.count_drift.is_empty()
    }
}

/// Verifies `target` against `source` (both read in full).
pub fn verify(source: &mut DbConnection, target: &mut DbConnection) -> Result<Report, Error> {
    let mut tables = Vec::with_capacity(TABLES.len());
    for table in TABLES {
        tables.push(TableReport {
            table: table.name(),
            source: side(table, source)?,
            target: side(table, target)?,
        });
    }
    let ledger = ledger::check::check_all(target).map_err(Error::Ledger)?;
    let count_drift = storage::counts::audit(target)?;
    Ok(Report {
        tables,
        ledger,
        count_drift,
    })
}

fn side(table: &dyn Table, conn: &mut DbConnection) -> Result<Side, Error> {
    Ok(Side {
        rows: table.count(conn)?,
        checksum: table.checksum(conn)?,
    })
}

/// One line per kept count that differs from its rows and per account whose projection differs
/// from its replay (a migration's report and a backup's).
pub(crate) fn findings(
    f: &mut fmt::Formatter<'_>,
    count_drift: &[storage::counts::Drift],
    ledger: &ledger::check::Report,
) -> fmt::Result {
    for d in count_drift {
        writeln!(
            f,
            "count mismatch: {} (parent {}): kept {}, rows {}",
            d.counted, d.parent, d.kept, d.actual
        )?;
    }
    for m in &ledger.mismatches {
        writeln!(
            f,
            "ledger mismatch: account {:?}: {}",
            m.account_id, m.reason
        )?;
    }
    Ok(())
}

/// Shows this many hex digits of a checksum: enough to tell two apart by eye.
const SHOWN: usize = 16;

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{:<26} {:>10}  {:<16}  ok", "table", "rows", "sha-256")?;
        for t in &self.tables {
            let short = |c: &Checksum| c.sha256[..SHOWN.min(c.sha256.len())].to_owned();
            if t.is_ok() {
                writeln!(
                    f,
                    "{:<26} {:>10}  {:<16}  ok",
                    t.table,
                    t.source.rows,
                    short(&t.source.checksum)
                )?;
            } else {
                writeln!(
                    f,
                    "{:<26} {:>10}  {:<16}  MISMATCH",
                    t.table,
                    t.source.rows,
                    short(&t.source.checksum)
                )?;
                writeln!(
                    f,
                    "{:<26} {:>10}  {:<16}  (target)",
                    "",
                    t.target.rows,
                    short(&t.target.checksum)
                )?;
            }
        }
        findings(f, &self.count_drift, &self.ledger)?;
        writeln!(
            f,
            "ledger replay on the target: {} accounts, {} events, {} mismatches  {}",
            self.ledger.accounts,
            self.ledger.events,
            self.ledger.mismatches.len(),
            if self.ledger.is_consistent() {
                "ok"
            } else {
                "MISMATCH"
            }
        )
    }
}
