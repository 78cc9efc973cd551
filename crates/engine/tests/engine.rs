//! The run tested without HTTP: the engine over in-memory adapters of its ports, scripting the
//! model through the `ModelClient` port and controlling time with `tokio::time::pause`.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly on broken fixtures"
)]

extern crate agentd_engine as engine;

#[path = "engine/bursts.rs"]
mod bursts;
#[path = "engine/common.rs"]
mod common;
#[path = "engine/conformance.rs"]
mod conformance;
#[path = "engine/items.rs"]
mod items;
#[path = "engine/mcp.rs"]
mod mcp;
#[path = "engine/outcomes.rs"]
mod outcomes;
#[path = "engine/start_size.rs"]
mod start_size;
#[path = "engine/time.rs"]
mod time;
#[path = "engine/writes.rs"]
mod writes;
