//! `grep` and `glob`: searches over the workspace's files.

use std::path::Path;

use engine::hosted::{CallContext, HostedTool, ToolOutcome};
use engine::model::ToolSpec;
use protocol::output::{OutputItem, SandboxFileMatches};
use serde::Deserialize;
use serde_json::json;

use super::common::{FileLimits, Shared, cut_line, outcome, parse, resolve_named, spec};
use super::{fsio, glob};
use crate::confine::Root;
use crate::workspace::{MOUNT, resolve_in, sandbox_path_of};

/// The most characters of one matching line `grep` shows.
const MAX_GREP_LINE_CHARS: usize = 300;

pub(super) struct Grep(pub(super) Shared);

#[derive(Deserialize)]
struct GrepArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
}

/// What a search found.
#[derive(Default)]
struct Found {
    /// Matching files (grep) or paths (glob), as the sandbox sees them.
    files: Vec<String>,
    /// Matching lines (grep) or every matching path, beyond the cap too (glob).
    count: u64,
    truncated: bool,
    /// For the model.
    text: String,
}

/// A glob filter for grep: without `/` it matches file names, with `/` paths relative to
/// `/workspace`.
struct NameFilter {
    glob: globset::GlobMatcher,
    whole_path: bool,
}

impl NameFilter {
    fn new(glob: &str) -> Result<NameFilter, String> {
        let glob = glob
            .strip_prefix(MOUNT)
            .map_or(glob, |rest| rest.strip_prefix('/').unwrap_or(rest));
        Ok(NameFilter {
            glob: glob::matcher(glob)?,
            whole_path: glob.contains('/'),
        })
    }

    fn matches(&self, relative: &Path) -> bool {
        if self.whole_path {
            self.glob.is_match(relative)
        } else {
            relative
                .file_name()
                .is_some_and(|name| self.glob.is_match(name))
        }
    }
}

fn grep_files(root: &Root, limits: &FileLimits, args: &GrepArgs) -> Result<Found, String> {
    let regex = regex::RegexBuilder::new(&args.pattern)
        .size_limit(1 << 22)
        .build()
        .map_err(|err| format!("invalid regular expression: {err}"))?;
    let filter = args.glob.as_deref().map(NameFilter::new).transpose()?;
    let path = args.path.as_deref().unwrap_or(".");
    let (start, _) = resolve_named(root, path)?;
    let kind = fsio::kind(root, &start)
        .map_err(|message| format!("{path}: {message}"))?
        .ok_or_else(|| format!("{path}: no such file or directory"))?;
    let walk = if kind == rustix::fs::FileType::Directory {
        fsio::walk(root, &start, limits.max_walk_entries)
    } else {
        fsio::Walk {
            files: vec![start],
            truncated: false,
        }
    };
    let mut found = Found::default();
    let mut lines = String::new();
    let mut skipped = 0usize;
    let mut full = false;
    'files: for relative in &walk.files {
        if filter
            .as_ref()
            .is_some_and(|filter| !filter.matches(relative))
        {
            continue;
        }
        let Ok(bytes) = fsio::read_capped(root, relative, limits.max_file_bytes, "grep") else {
            skipped += 1;
            continue;
        };
        if fsio::is_binary(&bytes) {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        let shown = sandbox_path_of(relative);
        let mut in_file = false;
        for (index, line) in text.lines().enumerate() {
            if !regex.is_match(line) {
                continue;
            }
            if found.count >= u64::try_from(limits.max_results).unwrap_or(u64::MAX) {
                found.truncated = true;
                break 'files;
            }
            if !in_file {
                found.files.push(shown.clone());
                in_file = true;
            }
            found.count += 1;
            if !full {
                let entry = format!(
                    "{shown}:{}: {}\n",
                    index + 1,
                    cut_line(line.trim_end(), MAX_GREP_LINE_CHARS)
                );
                if lines.len() + entry.len() > limits.max_output_bytes {
                    full = true;
                } else {
                    lines.push_str(&entry);
                }
            }
        }
    }
    found.truncated |= walk.truncated;
    found.text = if found.count == 0 {
        "No matches.".to_owned()
    } else {
        format!(
            "{} matching lines in {} files:\n{lines}",
            found.count,
            found.files.len()
        )
    };
    if full {
        found
            .text
            .push_str("[more matching lines not shown: the output limit was reached]\n");
    }
    if found.truncated {
        found.text.push_str(&format!(
            "[search stopped early (at most {} matches, {} directory entries); narrow the \
             pattern, path or glob]\n",
            limits.max_results, limits.max_walk_entries
        ));
    }
    if skipped > 0 {
        found.text.push_str(&format!(
            "[{skipped} files skipped: unreadable or larger than {} bytes]\n",
            limits.max_file_bytes
        ));
    }
    Ok(found)
}

#[async_trait::async_trait]
impl HostedTool for Grep {
    fn spec(&self) -> ToolSpec {
        spec(
            "grep",
            &format!(
                "Search the text files of the sandbox workspace (/workspace) for lines matching \
                 a regular expression (Rust regex syntax; (?i) for case-insensitive). Returns \
                 path:line: text for each matching line, at most {}. path narrows the search \
                 to a file or directory; glob filters files: a pattern without '/' matches file \
                 names (*.py), one with '/' paths relative to /workspace (src/**/*.rs). Binary \
                 files and symbolic links are skipped.",
                self.0.limits.max_results
            ),
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regular expression to look for in each line."},
                    "path": {"type": "string", "description": "File or directory to search (default /workspace)."},
                    "glob": {"type": "string", "description": "Only search files matching this glob."},
                },
                "required": ["pattern"],
                "additionalProperties": false,
            }),
        )
    }

    async fn call(&self, arguments: &str, context: CallContext<'_>) -> ToolOutcome {
        let call_id = context.call_id.to_owned();
        let result = match parse::<GrepArgs>(arguments) {
            Ok(args) => {
                self.0
                    .run(&context, move |root, limits| {
                        grep_files(root, limits, &args)
                    })
                    .await
            }
            Err(message) => Err(message),
        };
        matches_outcome(call_id, result, OutputItem::SandboxGrep)
    }
}

/// The outcome of grep or glob.
fn matches_outcome(
    call_id: String,
    result: Result<Found, String>,
    item: fn(SandboxFileMatches) -> OutputItem,
) -> ToolOutcome {
    match result {
        Ok(found) => outcome(
            found.text,
            item(SandboxFileMatches {
                call_id,
                files: Some(found.files),
                count: Some(found.count),
                truncated: Some(found.truncated),
                error: None,
            }),
        ),
        Err(message) => outcome(
            format!("error: {message}"),
            item(SandboxFileMatches {
                call_id,
                files: None,
                count: None,
                truncated: None,
                error: Some(message),
            }),
        ),
    }
}

// ---------------------------------------------------------------------------------------
// glob

pub(super) struct Glob(pub(super) Shared);

#[derive(Deserialize)]
struct GlobArgs {
    pattern: String,
}

fn glob_files(root: &Root, limits: &FileLimits, args: &GlobArgs) -> Result<Found, String> {
    let pattern = args.pattern.trim();
    let below = if pattern.starts_with('/') {
        match pattern.strip_prefix(MOUNT) {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
            _ => {
                return Err(format!(
                    "{pattern}: absolute patterns must be under {MOUNT} (the workspace)"
                ));
            }
        }
    } else {
        pattern
    };
    let components: Vec<&str> = below
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    if components.contains(&"..") {
        return Err(format!("{pattern}: '..' is not allowed in a glob"));
    }
    if components.is_empty() {
        return Err("the pattern is empty".to_owned());
    }
    // The literal directories before the first wildcard: the walk starts there.
    let literal = components
        .iter()
        .take_while(|part| !glob::has_meta(part))
        .count();
    let mut found = Found::default();
    let cap = limits.max_results;
    if literal == components.len() {
        // No wildcard: the pattern names one path.
        let (relative, shown) = resolve_named(root, &components.join("/"))?;
        if fsio::kind(root, &relative)? == Some(rustix::fs::FileType::RegularFile) {
            found.files.push(shown);
            found.count = 1;
        }
    } else {
        let glob = glob::matcher(&components[literal..].join("/"))?;
        let prefix = if literal == 0 {
            ".".to_owned()
        } else {
            components[..literal].join("/")
        };
        let base = resolve_in(root, &prefix).map_err(|message| format!("{pattern}: {message}"))?;
        if fsio::kind(root, &base)? == Some(rustix::fs::FileType::Directory) {
            let walk = fsio::walk(root, &base, limits.max_walk_entries);
            found.truncated = walk.truncated;
            for relative in &walk.files {
                let Ok(below_base) = relative.strip_prefix(&base) else {
                    continue;
                };
                if !glob.is_match(below_base) {
                    continue;
                }
                found.count += 1;
                if found.files.len() < cap {
                    found.files.push(sandbox_path_of(&base.join(below_base)));
                } else {
                    found.truncated = true;
                }
            }
        }
    }
    found.text = if found.count == 0 {
        "No files match.".to_owned()
    } else {
        let mut text = format!("{} files match:\n", found.count);
        for file in &found.files {
            text.push_str(file);
            text.push('\n');
        }
        text
    };
    if found.truncated {
        found.text.push_str(&format!(
            "[list cut (at most {cap} paths, {} directory entries visited); narrow the pattern]\n",
            limits.max_walk_entries
        ));
    }
    Ok(found)
}

#[async_trait::async_trait]
impl HostedTool for Glob {
    fn spec(&self) -> ToolSpec {
        spec(
            "glob",
            &format!(
                "List the files of the sandbox workspace (/workspace) whose paths match a glob \
                 pattern, relative to /workspace (or absolute under it), sorted by path, at \
                 most {}. * matches within a directory, ** across directories (**/*.py finds \
                 Python files anywhere), ? one character, [abc] a class, {{a,b}} alternatives. \
                 Symbolic links are not followed.",
                self.0.limits.max_results
            ),
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Glob pattern, e.g. **/*.csv or data/*.json."},
                },
                "required": ["pattern"],
                "additionalProperties": false,
            }),
        )
    }

    async fn call(&self, arguments: &str, context: CallContext<'_>) -> ToolOutcome {
        let call_id = context.call_id.to_owned();
        let result = match parse::<GlobArgs>(arguments) {
            Ok(args) => {
                self.0
                    .run(&context, move |root, limits| {
                        glob_files(root, limits, &args)
                    })
                    .await
            }
            Err(message) => Err(message),
        };
        matches_outcome(call_id, result, OutputItem::SandboxGlob)
    }
}
