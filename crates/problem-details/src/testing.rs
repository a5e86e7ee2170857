//! Helpers for the unit tests of crates that validate JSON bodies with [`crate::Fields`].
//! Public (not `cfg(test)`) so each domain crate's tests share one copy.

use serde_json::{Map, Value};

use crate::{Slug, ToProblem};

/// The JSON object `value` holds; panics on anything else.
pub fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("expected a JSON object, got {other}"),
    }
}

/// `(field, code)` of every invalid field `err` reports; panics unless `err` is a 422.
pub fn field_codes<E: ToProblem + std::fmt::Debug>(err: E) -> Vec<(String, &'static str)> {
    let problem = err.to_problem();
    assert_eq!(
        problem.slug,
        Slug::ValidationFailed,
        "expected validation, got {err:?}"
    );
    problem
        .errors
        .into_iter()
        .map(|e| (e.field, e.code.as_str()))
        .collect()
}
