#![allow(dead_code)]

pub mod mcp;
pub mod stub;
