//! The sandbox's `apply_patch` tool without a workspace: the `*** Begin Patch` envelope parsed,
//! and each update's chunks applied to a file's text.
//!
//! The input is the patch, then optionally a NUL byte and the text every updated file holds.
//!
//! Promises: paths are non-empty and trimmed; an added file's text ends in a newline (or is
//! empty); a parse error names a line of the patch that exists; applying chunks keeps a file's
//! final newline; a patch whose chunks are context only keeps the file's number of lines.

use sandbox::files::fuzzing::{FileOp, apply_patch};

pub fn run(data: &[u8]) {
    let (patch, original) = match data.iter().position(|b| *b == 0) {
        Some(nul) => (&data[..nul], &data[nul + 1..]),
        None => (data, &b""[..]),
    };
    let patch = String::from_utf8_lossy(patch);
    let original = String::from_utf8_lossy(original);
    let ops = match apply_patch(&patch, &original) {
        Ok(ops) => ops,
        Err(message) => return check_error(&patch, &message),
    };
    assert!(!ops.is_empty(), "a patch that changes no file was accepted");
    for op in &ops {
        match op {
            FileOp::Add { path, contents } => {
                check_path(path);
                assert!(
                    contents.is_empty() || contents.ends_with('\n'),
                    "an added file without its final newline"
                );
            }
            FileOp::Delete { path } => check_path(path),
            FileOp::Update {
                path,
                move_to,
                chunks,
                result,
            } => {
                check_path(path);
                if let Some(target) = move_to {
                    check_path(target);
                }
                assert!(
                    *chunks > 0 || move_to.is_some(),
                    "an update that changes nothing"
                );
                if let Ok(text) = result {
                    let had_newline = original.is_empty() || original.ends_with('\n');
                    if had_newline && !text.is_empty() {
                        assert!(text.ends_with('\n'), "the final newline was lost");
                    }
                }
            }
        }
    }
    if only_context(&patch) {
        for op in &ops {
            if let FileOp::Update {
                result: Ok(text), ..
            } = op
            {
                assert_eq!(
                    original.lines().count(),
                    text.lines().count(),
                    "a context-only patch changed the number of lines"
                );
            }
        }
    }
}

/// Whether every chunk line of the patch is context (no `+` or `-` line, no added file).
fn only_context(patch: &str) -> bool {
    patch.lines().all(|line| {
        !(line.starts_with('+') || line.starts_with('-') || line.starts_with("*** Add File: "))
    })
}

fn check_path(path: &str) {
    assert!(!path.is_empty(), "an empty path");
    assert_eq!(path, path.trim(), "a path with surrounding whitespace");
    assert!(!path.contains('\n'), "a path with a newline");
}

fn check_error(patch: &str, message: &str) {
    assert!(!message.is_empty(), "an error without a message");
    if let Some(rest) = message.strip_prefix("line ")
        && let Some((number, _)) = rest.split_once(':')
        && let Ok(number) = number.parse::<usize>()
    {
        let lines = patch.trim().lines().count();
        assert!(
            (1..=lines + 1).contains(&number),
            "the error names line {number} of a {lines}-line patch: {message}"
        );
    }
}
