//! `finance_search` end to end: each back end against a local HTTP server answering its
//! documented JSON (error shapes and rate-limit answers included), the MCP back end through
//! the engine's port, the embedded store filled by the import of generated SEC bulk files,
//! routing, budgets and caches, and the network guard on URLs the services return.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly on broken fixtures"
)]

mod alphavantage;
mod common;
mod db;
mod edgar;
mod fmp;
mod mcp;
mod offline;
mod routing;
