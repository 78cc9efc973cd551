//! One run: a state machine that does no I/O and a thin async driver that carries out its
//! effects through the ports.
//!
//! The machine takes an [`Input`](effects::Input) (the run starts, discovery answered, a model
//! event arrived, calls finished, the run was cancelled) and returns the
//! [`Effect`](effects::Effect)s to carry out, in order: emit a wire event, flush the event log,
//! connect to MCP servers, ask the model, call MCP tools, call a built-in tool, or finish. One
//! concern per file:
//!
//! - `effects.rs`: the inputs and effects, and what a finished run hands over;
//! - `state.rs`: the machine's state between inputs and the primitives that ask for effects;
//! - `machine.rs`: the step loop, the only place that decides what comes next (prepare, steps,
//!   the end of a turn, the end of a step, the `models` fallback chain);
//! - `turn.rs`: one model turn: text deltas, tool-call pieces, reasoning, usage;
//! - `turns.rs`: the record of each model turn (times, model, tokens) stored with the response;
//! - `calls.rs`: where each call of a turn goes (function hand-back, refusal, MCP, built-in,
//!   tool search);
//! - `mcp.rs`: approvals before the first turn, discovery, tool lists, MCP call items;
//! - `hosted.rs`: built-in tool outcomes (items, usage, sources);
//! - `tool_search.rs`: the catalog search of deferred servers;
//! - `structured.rs`: the check of the final answer against `response_format`;
//! - `finish.rs`: the final response, its terminal event and the stored record;
//! - `files.rs`: where built-in tools share files (the response's file store);
//! - `driver.rs`: the effects carried out, selecting on cancellation, flushing every 500 ms.
//!
//! Dependencies run one way: `machine.rs` calls the helpers; the helpers use `state.rs` and
//! `effects.rs` and never call back into `machine.rs`.

mod calls;
pub(crate) mod driver;
mod effects;
mod files;
mod finish;
mod hosted;
mod machine;
mod mcp;
mod scrub;
mod state;
mod structured;
mod tool_search;
mod turn;
mod turns;

pub(crate) use turn::provider_failure;

pub use effects::Finished;
pub(crate) use finish::terminal_event;
pub(crate) use state::Machine;
