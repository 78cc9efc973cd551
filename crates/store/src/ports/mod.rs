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
mod response_list;
mod responses;
mod workspace_snapshots;

use std::future::Future;
use std::pin::Pin;

use engine::store::StoreError;

use super::{Db, DbRow, Store, dialect};

/// A run-path write (`put_response`, `append_events`, `end_run`) as the back end's `write`
/// runs it: inside a transaction the back end opens, possibly shared with other runs' writes
/// (SQLite's group commit, `group_commit.rs`), possibly run twice (alone again when a shared
/// transaction failed), so it owns its already-encoded data.
pub(super) type WriteOp = crate::group_commit::Op<Db>;

/// Boxes a closure as a [`WriteOp`] (gives the closure its higher-ranked signature).
fn write_op<F>(op: F) -> WriteOp
where
    F: for<'t> FnMut(
            &'t mut sqlx::Transaction<'static, Db>,
        ) -> Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send + 't>>
        + Send
        + 'static,
{
    Box::new(op)
}
