#![doc = include_str!("../README.md")]

pub mod accounts;
pub mod webhook_endpoints;

/// Required text: at least one character that is not white space, and no NUL.
pub const TEXT_PATTERN: &str = r"^[^\u0000]*[^\s\u0000][^\u0000]*$";

/// Optional text: anything without NUL (blank allowed).
pub const NO_NUL_PATTERN: &str = r"^[^\u0000]*$";
