//! Entry points for the fuzz targets (`crates/fuzzing`, `fuzz/`), behind the `fuzzing` feature:
//! the `apply_patch` parser and the application of an update's chunks to a file's text, without
//! a workspace.

use super::patch::{self, Hunk};

/// One file operation of a parsed patch, as the tool would carry it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOp {
    Add {
        path: String,
        contents: String,
    },
    Delete {
        path: String,
    },
    /// The update's chunks applied to the given original text (or why they could not be).
    Update {
        path: String,
        move_to: Option<String>,
        chunks: usize,
        result: Result<String, String>,
    },
}

/// Parses `patch` and applies each update to `original` (as if every updated file held it).
pub fn apply_patch(patch: &str, original: &str) -> Result<Vec<FileOp>, String> {
    let hunks = patch::parse(patch)?;
    Ok(hunks
        .into_iter()
        .map(|hunk| match hunk {
            Hunk::Add { path, contents } => FileOp::Add { path, contents },
            Hunk::Delete { path } => FileOp::Delete { path },
            Hunk::Update {
                path,
                move_to,
                chunks,
            } => FileOp::Update {
                result: patch::apply(original, &chunks, &path),
                chunks: chunks.len(),
                path,
                move_to,
            },
        })
        .collect())
}
