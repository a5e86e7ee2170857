//! The projection rows: locked, inserted and saved by the write path; read by the API.

use crate::schema::accounts;
use crate::{Account, AccountState, Error};
use diesel::prelude::*;
use pagination::Page;
use std::collections::HashMap;
use storage::DbConnection;

/// A projection row, every column in table order (so `accounts::all_columns` selects it, and
/// returns it where a statement needs `RETURNING` on both backends).
#[derive(Queryable)]
struct AccountRow {
    account_id: String,
    owner: String,
    balance_cents: i64,
    is_open: bool,
    last_sequence: i64,
    updated_at: String,
    owner_id: Option<i64>,
}

fn to_account(row: AccountRow) -> Account {
    Account {
        account_id: row.account_id,
        state: AccountState {
            owner: row.owner,
            balance_cents: row.balance_cents,
            is_open: row.is_open,
            last_sequence: row.last_sequence,
            updated_at: row.updated_at,
        },
        owner_id: row.owner_id,
    }
}

/// The locked accounts of a batch: their states, and who owns each.
#[derive(Debug, Default)]
pub struct Locked {
    pub states: HashMap<String, AccountState>,
    pub owners: HashMap<String, Option<i64>>,
}

/// The transaction's first statement for a batch of appends: locks the projection rows of
/// `ids` (sorted, so two batches never wait for each other in opposite orders) and returns
/// their states. On SQLite a no-op `UPDATE` takes the database's write lock (waiting up to
/// `busy_timeout`) before anything is read, so there is no stale snapshot to upgrade; on
/// PostgreSQL `SELECT … ORDER BY account_id FOR UPDATE` takes the rows' locks in id order.
/// From here to commit the batch's accounts change only through this transaction. Ids without
/// a row are simply absent from the maps.
pub fn lock_accounts(conn: &mut DbConnection, ids: &[&str]) -> Result<Locked, Error> {
    let rows: Vec<AccountRow> = match conn {
        DbConnection::Postgresql(c) => accounts::table
            .filter(accounts::account_id.eq_any(ids))
            .order(accounts::account_id.asc())
            .select(accounts::all_columns)
            .for_update()
            .load(c)?,
        DbConnection::Sqlite(c) => diesel::update(accounts::table)
            .filter(accounts::account_id.eq_any(ids))
            .set(accounts::last_sequence.eq(accounts::last_sequence))
            .returning(accounts::all_columns)
            .get_results(c)?,
    };
    let mut locked = Locked::default();
    for row in rows {
        let a = to_account(row);
        locked.owners.insert(a.account_id.clone(), a.owner_id);
        locked.states.insert(a.account_id, a.state);
    }
    Ok(locked)
}

/// Inserts a new projection row owned by `owner` (the account must not exist: a duplicate is
/// `AccountExists`).
pub fn insert_account(
    conn: &mut DbConnection,
    id: &str,
    state: &AccountState,
    owner: Option<i64>,
) -> Result<(), Error> {
    // No error for an existing id: on PostgreSQL an error would abort the caller's whole
    // transaction, so callers would need a savepoint around this insert.
    match insert_accounts(conn, &[(id, state, owner)])?.is_empty() {
        true => Err(Error::AccountExists { id: id.to_owned() }),
        false => Ok(()),
    }
}

/// Inserts accounts (id, folded state, owning user) with one multi-row statement; answers
/// the ids inserted. An id that exists already is skipped, not an error (see
/// [`insert_account`]).
pub fn insert_accounts(
    conn: &mut DbConnection,
    rows: &[(&str, &AccountState, Option<i64>)],
) -> Result<Vec<String>, Error> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let values: Vec<_> = rows
        .iter()
        .map(|(id, state, owner)| {
            (
                accounts::account_id.eq(*id),
                accounts::owner_id.eq(*owner),
                accounts::owner.eq(&state.owner),
                accounts::balance_cents.eq(state.balance_cents),
                accounts::is_open.eq(state.is_open),
                accounts::last_sequence.eq(state.last_sequence),
                accounts::updated_at.eq(&state.updated_at),
            )
        })
        .collect();
    storage::with_backend!(conn, |c| diesel::insert_into(accounts::table)
        .values(&values)
        .on_conflict_do_nothing()
        .returning(accounts::account_id)
        .get_results::<String>(c))
    .map_err(Error::Storage)
}

/// Writes folded states to their projection rows, all in one statement: an upsert whose
/// insert never happens (the rows exist and the caller holds their locks), because a
/// multi-row `INSERT … ON CONFLICT DO UPDATE` is the one multi-row update Diesel writes the
/// same way for both backends.
pub fn save_projections(
    conn: &mut DbConnection,
    states: &[(&str, &AccountState)],
) -> Result<(), Error> {
    use diesel::upsert::excluded;
    if states.is_empty() {
        return Ok(());
    }
    let values: Vec<_> = states
        .iter()
        .map(|(id, state)| {
            (
                accounts::account_id.eq(*id),
                accounts::owner.eq(&state.owner),
                accounts::balance_cents.eq(state.balance_cents),
                accounts::is_open.eq(state.is_open),
                accounts::last_sequence.eq(state.last_sequence),
                accounts::updated_at.eq(&state.updated_at),
            )
        })
        .collect();
    storage::with_backend!(conn, |c| diesel::insert_into(accounts::table)
        .values(&values)
        .on_conflict(accounts::account_id)
        .do_update()
        .set((
            accounts::owner.eq(excluded(accounts::owner)),
            accounts::balance_cents.eq(excluded(accounts::balance_cents)),
            accounts::is_open.eq(excluded(accounts::is_open)),
            accounts::last_sequence.eq(excluded(accounts::last_sequence)),
            accounts::updated_at.eq(excluded(accounts::updated_at)),
        ))
        .execute(c))?;
    Ok(())
}

pub fn get_account(conn: &mut DbConnection, id: &str) -> Result<Option<Account>, Error> {
    Ok(accounts::table
        .find(id)
        .select(accounts::all_columns)
        .first::<AccountRow>(conn)
        .optional()?
        .map(to_account))
}

/// One page of projections ordered by `account_id`, and the total count: everyone's (one
/// statement) or, with `owner`, that user's only (counted by its index).
pub fn list_accounts(
    conn: &mut DbConnection,
    page: Page,
    owner: Option<i64>,
) -> Result<(Vec<Account>, i64), Error> {
    use storage::counts::{self, Counted};
    if let Some(owner) = owner {
        let mine = accounts::table.filter(accounts::owner_id.eq(owner));
        let rows: Vec<AccountRow> = mine
            .select(accounts::all_columns)
            .order(accounts::account_id.asc())
            .limit(page.limit)
            .offset(page.offset)
            .load(conn)?;
        let total: i64 = mine.count().get_result(conn)?;
        return Ok((rows.into_iter().map(to_account).collect(), total));
    }
    let counted = Counted::table("accounts");
    let rows: Vec<(AccountRow, i64)> = accounts::table
        .select((accounts::all_columns, counts::total_column(counted)))
        .order(accounts::account_id.asc())
        .limit(page.limit)
        .offset(page.offset)
        .load(conn)?;
    let (rows, total) = counts::split(conn, rows, counted)?;
    Ok((rows.into_iter().map(to_account).collect(), total))
}

/// Account ids after `after` (exclusive), ascending, at most `limit`.
pub fn account_ids_after(
    conn: &mut DbConnection,
    after: Option<&str>,
    limit: i64,
) -> Result<Vec<String>, Error> {
    let mut q = accounts::table
        .select(accounts::account_id)
        .order(accounts::account_id.asc())
        .limit(limit)
        .into_boxed();
    if let Some(after) = after {
        q = q.filter(accounts::account_id.gt(after.to_owned()));
    }
    Ok(q.load(conn)?)
}
