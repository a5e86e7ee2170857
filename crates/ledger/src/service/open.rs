//! Opening an account.

use diesel::Connection;
use storage::DbConnection;

use crate::fold::apply;
use crate::{AccountState, CallerKey, Change, Error, EventType, Fact, OpenAccount, repo};

use super::Recorded;
use super::append::new_key;
use super::retry::{TxError, earlier, finish, key_error, with_retries};

/// Opens an account: the projection row and its `AccountOpened` event (sequence 1), both or
/// neither. An existing id is `AccountExists` and nothing is written.
pub fn open_account(
    conn: &mut DbConnection,
    input: &OpenAccount,
    key: Option<&CallerKey>,
) -> Result<Recorded, Error> {
    let id = input.account_id.as_str();
    let outcome = with_retries(|| {
        if let Some(key) = key
            && let Some(event) = earlier(conn, key)?
        {
            return Err(TxError::Replay(Box::new(event)));
        }
        let open = |c: &mut DbConnection| -> Result<Recorded, TxError> {
            let now = storage::timestamp::now_sql();
            let change = Change::Opened {
                owner: input.owner.clone(),
            };
            let state = apply(
                AccountState::default(),
                &Fact {
                    sequence: 1,
                    occurred_at: now.clone(),
                    change,
                },
            );
            // The first statement writes, so on SQLite it waits for the write lock.
            repo::insert_account(c, id, &state, input.owner_id)?;
            let mut payload = serde_json::Map::new();
            payload.insert("owner".into(), input.owner.clone().into());
            let event = repo::insert_event(
                c,
                &repo::NewEvent {
                    aggregate_id: id,
                    event_type: EventType::AccountOpened,
                    payload: &payload,
                    sequence: 1,
                },
                &now,
            )?;
            if let Some(key) = key {
                repo::insert_keys(c, &[new_key(key, id, 1)]).map_err(key_error)?;
            }
            Ok(Recorded {
                event,
                replayed: false,
            })
        };
        // Inside the caller's transaction, without a key, nothing here fails after a write
        // (an existing id writes nothing), so no savepoint is needed: it cost two round trips
        // of the six `POST /accounts` made on PostgreSQL. A key's insert can meet a concurrent
        // request's key, after which the transaction must still be usable: a savepoint then.
        let outcome = if key.is_none() && storage::in_transaction(conn) {
            open(conn)
        } else {
            conn.transaction::<_, TxError, _>(open)
        };
        match outcome {
            // A concurrent request with the same key may have opened it: answer as it did.
            Err(TxError::Fail(Error::AccountExists { id })) => match key {
                Some(key) => match earlier(conn, key)? {
                    Some(event) => Err(TxError::Replay(Box::new(event))),
                    None => Err(Error::AccountExists { id }.into()),
                },
                None => Err(Error::AccountExists { id }.into()),
            },
            other => other,
        }
    });
    finish(outcome)
}
