//! The built-in tools agentd runs itself, behind the engine's [`engine::hosted`] port:
//! `fetch_url` ([`fetch`]) and `web_search` ([`search`]). Every URL they contact goes through
//! the network guard (`netguard`).

pub mod fetch;
pub mod search;
