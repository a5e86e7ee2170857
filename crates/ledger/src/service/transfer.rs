//! Transfers: a withdrawal from one account and a deposit to another, in one transaction.

use diesel::Connection;
use ownership::Actor;
use storage::DbConnection;

use crate::fold::{apply, decide};
use crate::{Error, Event, Fact, Transfer, repo};

/// What a transfer wrote: its id and its two events.
#[derive(Debug, Clone, PartialEq)]
pub struct Transferred {
    pub transfer_id: String,
    pub from: String,
    pub to: String,
    pub amount_cents: i64,
    pub withdrawn: Event,
    pub deposited: Event,
}

/// A new transfer id: `tr_` and 32 random hex digits.
fn new_transfer_id() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| Error::Busy {
        last: format!("no randomness for a transfer id: {e}"),
    })?;
    Ok(format!("tr_{}", hex::encode(bytes)))
}

/// Moves `transfer.amount_cents` from `from` to `to`: `MoneyWithdrawn` on `from` and
/// `MoneyDeposited` on `to`, both naming the transfer and the other account, written with the
/// two projections in one transaction (a savepoint inside the caller's). Refused whole, with
/// nothing written, when either account is unknown to `actor` (404, `from` first), closed
/// (409), or `from` holds less than the amount (422). Both rows are locked in account-id
/// order, the order every ledger write takes them in, so opposite transfers never deadlock.
pub fn transfer(
    conn: &mut DbConnection,
    transfer: &Transfer,
    actor: Actor,
) -> Result<Transferred, Error> {
    let transfer_id = new_transfer_id()?;
    let legs = transfer.legs(&transfer_id)?;
    conn.transaction(|c| {
        let mut ids = [transfer.from(), transfer.to()];
        ids.sort_unstable();
        let repo::Locked { mut states, owners } = repo::lock_accounts(c, &ids)?;
        for id in [transfer.from(), transfer.to()] {
            let visible = owners.get(id).is_some_and(|owner| actor.sees(*owner));
            if !visible || !states.contains_key(id) {
                return Err(Error::AccountNotFound { id: id.to_owned() });
            }
        }
        let now = storage::timestamp::now_sql();
        let mut new_events = Vec::with_capacity(2);
        for (id, command) in &legs {
            let Some(state) = states.get_mut(*id) else {
                unreachable!("both accounts were found above")
            };
            decide(id, state, command)?;
            let sequence = state.last_sequence + 1;
            *state = apply(
                std::mem::take(state),
                &Fact {
                    sequence,
                    occurred_at: now.clone(),
                    change: command.change.clone(),
                },
            );
            new_events.push(repo::NewEvent {
                aggregate_id: id,
                event_type: command.change.event_type(),
                payload: &command.payload,
                sequence,
            });
        }
        let mut stored = repo::insert_events(c, &new_events, &now)?.into_iter();
        let projections: Vec<(&str, &crate::AccountState)> =
            ids.iter().map(|id| (*id, &states[*id])).collect();
        repo::save_projections(c, &projections)?;
        match (stored.next(), stored.next()) {
            (Some(withdrawn), Some(deposited)) => Ok(Transferred {
                transfer_id: transfer_id.clone(),
                from: transfer.from().to_owned(),
                to: transfer.to().to_owned(),
                amount_cents: transfer.amount_cents(),
                withdrawn,
                deposited,
            }),
            _ => unreachable!("two events inserted, two returned"),
        }
    })
}
