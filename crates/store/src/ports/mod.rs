//! The engine's storage ports in SQL, written once and compiled once per back end.
//!
//! `sqlite.rs` and `postgres.rs` each include this folder as their own `ports` module (a
//! `#[path]` module), after defining `Db` (the sqlx database), `DbRow` (its row type), `Store`
//! (the store struct, with `writer` and `reader` pools) and a `dialect` module holding the few
//! statements that differ. Everything here therefore compiles against concrete sqlx types,
//! twice, with no generic bounds; the SQL is the portable subset both databases run: TEXT and
//! BIGINT columns, JSON as TEXT, `$n` placeholders, `ON CONFLICT` upserts.
//!
//! The run-path writes (`put_response`, `start_run`, `append_events`, `end_run`,
//! `insert_job`) are built as a [`crate::script::Script`] (their statements and values, encoded before they run) and
//! handed to the back end's `write`, which runs them through the group writer
//! (`group_commit.rs`). Such a write reads nothing back between its statements (item positions
//! are read in the statement that inserts them), and refuses itself by a statement failing,
//! never by a row count checked afterwards.

mod connector_events;
mod connectors;
pub(super) mod events;
mod files;
mod items;
mod jobs;
mod json_columns;
mod keys;
mod linked_transcripts;
pub(super) mod maintenance;
mod oauth_grants;
mod projects;
mod reseal;
mod response_list;
mod responses;
mod workspace_snapshots;

use super::{Db, DbRow, Store, dialect};
