//! The engine's storage ports in SQL, written once and compiled once per back end.
//!
//! `sqlite.rs` and `postgres.rs` each include this folder as their own `ports` module (a
//! `#[path]` module), after defining `Db` (the sqlx database), `DbRow` (its row type), `Store`
//! (the store struct, with `writer` and `reader` pools) and a `dialect` module holding the few
//! statements that differ. Everything here therefore compiles against concrete sqlx types,
//! twice, with no generic bounds; the SQL is the portable subset both databases run: TEXT and
//! BIGINT columns, JSON as TEXT, `$n` placeholders, `ON CONFLICT` upserts.

mod connector_events;
mod connectors;
pub(super) mod events;
mod files;
mod items;
mod jobs;
mod keys;
mod maintenance;
mod oauth_grants;
mod projects;
mod reseal;
mod responses;
mod workspace_snapshots;

use super::{Db, DbRow, Store, dialect};
