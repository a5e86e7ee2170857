//! The pure core: [`decide`] checks a command against the current state, [`apply`] folds one
//! event into the state. The projection update and the replay both use [`apply`], so the
//! projection is by construction what replaying the events gives (spec 4.5 rule 5).

use problem_details::{FieldError, FieldErrorCode};

use crate::{AccountState, AppendEvent, Change, Error, Fact};

/// The state after `fact`. Total: it never fails, whatever the input (a replay of a valid log
/// never meets the odd cases; saturating arithmetic keeps even a corrupt one from panicking).
pub fn apply(state: AccountState, fact: &Fact) -> AccountState {
    let mut next = match &fact.change {
        Change::Opened { owner } => AccountState {
            owner: owner.clone(),
            balance_cents: 0,
            is_open: true,
            ..state
        },
        Change::Deposited { amount_cents } => AccountState {
            balance_cents: state.balance_cents.saturating_add(*amount_cents),
            ..state
        },
        Change::Withdrawn { amount_cents } => AccountState {
            balance_cents: state.balance_cents.saturating_sub(*amount_cents),
            ..state
        },
        Change::Closed => AccountState {
            is_open: false,
            ..state
        },
    };
    next.last_sequence = fact.sequence;
    next.updated_at = fact.occurred_at.clone();
    next
}

/// Replays `facts` in order from the empty state.
pub fn replay<'a>(facts: impl IntoIterator<Item = &'a Fact>) -> AccountState {
    facts.into_iter().fold(AccountState::default(), apply)
}

/// Whether `command` may be appended to an account in `state` (whose `last_sequence` is the
/// sequence of its last event).
pub fn decide(account_id: &str, state: &AccountState, command: &AppendEvent) -> Result<(), Error> {
    if !state.is_open {
        return Err(Error::AccountClosed {
            id: account_id.to_owned(),
        });
    }
    if let Some(expected) = command.expected_sequence
        && expected != state.last_sequence
    {
        return Err(Error::SequenceMismatch {
            expected,
            actual: state.last_sequence,
        });
    }
    match command.change {
        Change::Withdrawn { amount_cents } if amount_cents > state.balance_cents => {
            Err(Error::InsufficientFunds {
                balance_cents: state.balance_cents,
                amount_cents,
            })
        }
        Change::Deposited { amount_cents }
            if state.balance_cents.checked_add(amount_cents).is_none() =>
        {
            Err(Error::Validation(vec![FieldError::new(
                "payload.amount_cents",
                FieldErrorCode::OutOfRange,
                "payload.amount_cents would take the balance beyond its maximum",
            )]))
        }
        Change::Opened { .. } => Err(Error::Validation(vec![FieldError::new(
            "event_type",
            FieldErrorCode::Invalid,
            "AccountOpened is recorded by POST /accounts and cannot be appended",
        )])),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fact(sequence: i64, change: Change) -> Fact {
        Fact {
            sequence,
            occurred_at: format!("2026-11-23 00:00:{:02}", sequence % 60),
            change,
        }
    }

    #[test]
    fn the_transitions_of_section_3() {
        let s = apply(
            AccountState::default(),
            &fact(
                1,
                Change::Opened {
                    owner: "Ann".into(),
                },
            ),
        );
        assert_eq!(
            (
                s.owner.as_str(),
                s.balance_cents,
                s.is_open,
                s.last_sequence
            ),
            ("Ann", 0, true, 1)
        );
        let s = apply(s, &fact(2, Change::Deposited { amount_cents: 10 }));
        assert_eq!((s.balance_cents, s.last_sequence), (10, 2));
        let s = apply(s, &fact(3, Change::Withdrawn { amount_cents: 4 }));
        assert_eq!((s.balance_cents, s.last_sequence), (6, 3));
        let s = apply(s, &fact(4, Change::Closed));
        assert_eq!((s.is_open, s.balance_cents, s.last_sequence), (false, 6, 4));
        assert_eq!(s.updated_at, "2026-11-23 00:00:04");
    }

    #[test]
    fn decide_checks_in_order() {
        let open = AccountState {
            owner: "o".into(),
            balance_cents: 5,
            is_open: true,
            last_sequence: 2,
            updated_at: String::new(),
        };
        let w = |a, e| AppendEvent::new(Change::Withdrawn { amount_cents: a }, e);
        assert!(decide("a", &open, &w(5, None)).is_ok());
        assert!(matches!(
            decide("a", &open, &w(6, None)),
            Err(Error::InsufficientFunds {
                balance_cents: 5,
                amount_cents: 6
            })
        ));
        assert!(decide("a", &open, &w(1, Some(2))).is_ok());
        assert!(matches!(
            decide("a", &open, &w(1, Some(1))),
            Err(Error::SequenceMismatch {
                expected: 1,
                actual: 2
            })
        ));
        let closed = AccountState {
            is_open: false,
            ..open.clone()
        };
        assert!(matches!(
            decide("a", &closed, &AppendEvent::new(Change::Closed, None)),
            Err(Error::AccountClosed { .. })
        ));
        let rich = AccountState {
            balance_cents: i64::MAX - 1,
            ..open
        };
        let d = AppendEvent::new(Change::Deposited { amount_cents: 2 }, None);
        assert!(matches!(decide("a", &rich, &d), Err(Error::Validation(_))));
    }

    #[derive(Debug, Clone)]
    enum Cmd {
        Deposit(i64),
        Withdraw(i64),
        Close,
    }

    fn cmd() -> impl Strategy<Value = Cmd> {
        prop_oneof![
            4 => (1..=crate::AMOUNT_MAX).prop_map(Cmd::Deposit),
            4 => (1..=1_000_000i64).prop_map(Cmd::Withdraw),
            4 => (1..=crate::AMOUNT_MAX).prop_map(Cmd::Withdraw),
            1 => Just(Cmd::Close),
        ]
    }

    proptest! {
        /// Any sequence of commands, run through decide + apply the way the service does
        /// (projection updated incrementally, rejected commands write nothing), leaves a
        /// projection equal to the replay of the accepted events; the balance never goes below
        /// zero and sequences are 1..=n without a gap.
        #[test]
        fn projection_equals_replay(cmds in proptest::collection::vec(cmd(), 0..200)) {
            let opened = fact(1, Change::Opened { owner: "owner".into() });
            let mut projection = apply(AccountState::default(), &opened);
            let mut log = vec![opened];
            for c in cmds {
                let change = match c {
                    Cmd::Deposit(a) => Change::Deposited { amount_cents: a },
                    Cmd::Withdraw(a) => Change::Withdrawn { amount_cents: a },
                    Cmd::Close => Change::Closed,
                };
                let command = AppendEvent::new(change.clone(), None);
                match decide("acc", &projection, &command) {
                    Ok(()) => {
                        let f = fact(projection.last_sequence + 1, change);
                        projection = apply(projection, &f);
                        log.push(f);
                    }
                    Err(Error::InsufficientFunds { balance_cents, amount_cents }) => {
                        prop_assert!(amount_cents > balance_cents);
                    }
                    Err(Error::AccountClosed { .. }) => prop_assert!(!projection.is_open),
                    Err(other) => prop_assert!(false, "unexpected {other:?}"),
                }
                prop_assert!(projection.balance_cents >= 0);
            }
            prop_assert_eq!(&replay(&log), &projection);
            let seqs: Vec<i64> = log.iter().map(|f| f.sequence).collect();
            let expected: Vec<i64> = (1..=log.len() as i64).collect();
            prop_assert_eq!(seqs, expected);
        }

        /// Replaying any prefix and then the rest gives the same state as replaying all.
        #[test]
        fn replay_is_a_fold(split in 0usize..50, amounts in proptest::collection::vec(1..1000i64, 0..50)) {
            let mut log = vec![fact(1, Change::Opened { owner: "o".into() })];
            for (i, a) in amounts.iter().enumerate() {
                log.push(fact(i as i64 + 2, Change::Deposited { amount_cents: *a }));
            }
            let split = split.min(log.len());
            let head = replay(&log[..split]);
            let all = log[split..].iter().fold(head, apply);
            prop_assert_eq!(all, replay(&log));
        }
    }
}
