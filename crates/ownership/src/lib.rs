#![doc = include_str!("../README.md")]

use problem_details::{Problem, Slug, ToProblem};

/// Who a request acts for, as the service's authentication decided it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Actor {
    /// Authentication is off (`API_AUTH=off`): nobody is identified, so no ownership rule
    /// applies and what is created belongs to no user.
    #[default]
    Unidentified,
    /// The operator credential: changes and sees everything; what it creates belongs to no
    /// user.
    Operator,
    /// A user's bearer token.
    User { user_id: i64, token_id: i64 },
}

impl Actor {
    /// The user recorded as the creator of what this actor creates.
    pub fn owner_id(self) -> Option<i64> {
        match self {
            Actor::User { user_id, .. } => Some(user_id),
            Actor::Unidentified | Actor::Operator => None,
        }
    }

    /// Whether the rules restrict this actor at all (a user's token); the operator and an
    /// unidentified caller (authentication off) pass every check.
    pub fn is_restricted(self) -> bool {
        matches!(self, Actor::User { .. })
    }

    /// The user whose resources alone this actor may list, or `None` for all of them.
    pub fn only_owner(self) -> Option<i64> {
        match self {
            Actor::User { user_id, .. } => Some(user_id),
            Actor::Unidentified | Actor::Operator => None,
        }
    }

    /// Whether this actor may change, delete or append to something owned by `owner`: its
    /// own things only for a user; rows that belong to no user are the operator's.
    pub fn may_change(self, owner: Option<i64>) -> bool {
        match self {
            Actor::User { user_id, .. } => owner == Some(user_id),
            Actor::Unidentified | Actor::Operator => true,
        }
    }

    /// The read rule of private resources (an account): the same as [`Actor::may_change`].
    pub fn sees(self, owner: Option<i64>) -> bool {
        self.may_change(owner)
    }

    /// `Ok` when this actor may change `item`, else why not.
    pub fn check<T: Owned>(self, item: &T) -> Result<(), Denied> {
        if self.may_change(item.owner_id()) {
            Ok(())
        } else {
            Err(Denied {
                kind: T::KIND,
                key: item.key(),
            })
        }
    }

    /// What the audit trail and the access log call this actor: `operator`, `user` or
    /// `anonymous`.
    pub fn kind(self) -> &'static str {
        match self {
            Actor::Unidentified => "anonymous",
            Actor::Operator => "operator",
            Actor::User { .. } => "user",
        }
    }

    /// The token the request carried, for a user.
    pub fn token_id(self) -> Option<i64> {
        match self {
            Actor::User { token_id, .. } => Some(token_id),
            Actor::Unidentified | Actor::Operator => None,
        }
    }
}

/// A stored resource that records who created it.
pub trait Owned {
    /// What the resource is called in a refusal ("Note", "Tag", …).
    const KIND: &'static str;
    /// The user that created it; `None`: the operator, authentication off, or created before
    /// owners were recorded.
    fn owner_id(&self) -> Option<i64>;
    /// Its id, as a refusal names it.
    fn key(&self) -> String;
}

/// A user tried to change what another user (or nobody) owns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} {key} belongs to another user")]
pub struct Denied {
    pub kind: &'static str,
    pub key: String,
}

impl ToProblem for Denied {
    fn to_problem(&self) -> Problem {
        Problem::new(
            Slug::Forbidden,
            format!(
                "{} {} belongs to another user: only its owner (or the operator) may change it.",
                self.kind, self.key
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Thing(Option<i64>);
    impl Owned for Thing {
        const KIND: &'static str = "Thing";
        fn owner_id(&self) -> Option<i64> {
            self.0
        }
        fn key(&self) -> String {
            "7".to_owned()
        }
    }

    const ANN: Actor = Actor::User {
        user_id: 1,
        token_id: 11,
    };
    const BOB: Actor = Actor::User {
        user_id: 2,
        token_id: 22,
    };

    #[test]
    fn a_user_changes_only_what_is_theirs() {
        assert!(ANN.check(&Thing(Some(1))).is_ok());
        assert_eq!(
            BOB.check(&Thing(Some(1))),
            Err(Denied {
                kind: "Thing",
                key: "7".to_owned()
            })
        );
        // Rows of no user (operator-made, or older than owners) are the operator's.
        assert!(ANN.check(&Thing(None)).is_err());
        assert!(!ANN.sees(None));
        assert!(ANN.sees(Some(1)) && !ANN.sees(Some(2)));
    }

    #[test]
    fn the_operator_and_an_unidentified_caller_pass_every_rule() {
        for actor in [Actor::Operator, Actor::Unidentified] {
            for owner in [None, Some(1), Some(2)] {
                assert!(actor.check(&Thing(owner)).is_ok());
                assert!(actor.sees(owner));
            }
            assert_eq!(actor.owner_id(), None);
            assert_eq!(actor.only_owner(), None);
            assert!(!actor.is_restricted());
        }
        assert_eq!(ANN.owner_id(), Some(1));
        assert_eq!(ANN.only_owner(), Some(1));
        assert_eq!(ANN.token_id(), Some(11));
    }

    #[test]
    fn a_refusal_is_403_naming_the_resource() {
        let p = Denied {
            kind: "Note",
            key: "5".to_owned(),
        }
        .to_problem();
        assert_eq!(p.slug, Slug::Forbidden);
        assert!(p.detail.starts_with("Note 5 belongs to another user"));
    }
}
