//! `write`, `read` and `edit`: one file each.

use engine::hosted::{CallContext, HostedTool, ToolOutcome};
use engine::model::ToolSpec;
use protocol::output::{OutputItem, SandboxEditFile, SandboxReadFile, SandboxWriteFile};
use serde::Deserialize;
use serde_json::json;

use super::common::{
    FileLimits, MAX_LINE_CHARS, Shared, cut_line, failed, given_path, outcome, parse, resolve, spec,
};
use super::fsio::{self, Written};
use crate::confine::Root;

pub(super) struct Write(pub(super) Shared);

#[derive(Deserialize)]
struct WriteArgs {
    path: String,
    content: String,
}

#[async_trait::async_trait]
impl HostedTool for Write {
    fn spec(&self) -> ToolSpec {
        spec(
            "write",
            "Write a text file in the sandbox workspace (/workspace), replacing it if it exists \
             and creating missing directories. Paths are relative to /workspace or absolute \
             under it. Prefer edit or apply_patch to change part of an existing file.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, relative to /workspace or absolute under it."},
                    "content": {"type": "string", "description": "The whole new content of the file."},
                },
                "required": ["path", "content"],
                "additionalProperties": false,
            }),
        )
    }

    async fn call(&self, arguments: &str, context: CallContext<'_>) -> ToolOutcome {
        let call_id = context.call_id.to_owned();
        let result = match parse::<WriteArgs>(arguments) {
            Ok(args) => {
                let path = args.path.clone();
                self.0
                    .run(&context, move |root, limits| {
                        let size = u64::try_from(args.content.len()).unwrap_or(u64::MAX);
                        if size > limits.max_file_bytes {
                            return Err(fsio::too_large(size, limits.max_file_bytes, "write"));
                        }
                        let (relative, shown) = resolve(root, &args.path)?;
                        let written = fsio::write_atomic(
                            root,
                            &relative,
                            args.content.as_bytes(),
                            limits.workspace_quota,
                        )?;
                        Ok((shown, size, written))
                    })
                    .await
                    .map_err(|message| (path, message))
            }
            Err(message) => Err((given_path(arguments, "path"), message)),
        };
        match result {
            Ok((shown, size, written)) => {
                let verb = match written {
                    Written::Created => "Created",
                    Written::Replaced => "Overwrote",
                };
                outcome(
                    format!("{verb} {shown} ({size} bytes)."),
                    OutputItem::SandboxWriteFile(SandboxWriteFile {
                        call_id,
                        file_path: shown,
                        size_bytes: Some(size),
                        error: None,
                    }),
                )
            }
            Err((path, message)) => outcome(
                failed(&path, &message),
                OutputItem::SandboxWriteFile(SandboxWriteFile {
                    call_id,
                    file_path: path,
                    size_bytes: None,
                    error: Some(message),
                }),
            ),
        }
    }
}

// ---------------------------------------------------------------------------------------
// read

pub(super) struct Read(pub(super) Shared);

#[derive(Deserialize)]
struct ReadArgs {
    path: String,
    #[serde(default)]
    start_line: Option<u64>,
    #[serde(default)]
    end_line: Option<u64>,
}

/// The lines a read returns.
struct ReadResult {
    shown: String,
    /// The lines' text as in the file (a line longer than [`MAX_LINE_CHARS`] is cut).
    content: String,
    /// The lines numbered for the model.
    numbered: String,
    start: u64,
    /// The last line returned (`start - 1` when none).
    end: u64,
    total: u64,
}

fn read_lines(root: &Root, limits: &FileLimits, args: &ReadArgs) -> Result<ReadResult, String> {
    let (relative, shown) = resolve(root, &args.path)?;
    let bytes =
        fsio::read_capped(root, &relative, limits.max_file_bytes, "read").map_err(|message| {
            if message.contains("byte limit") {
                format!("{message}; look at parts of it with execute (head, sed -n, grep)")
            } else {
                message
            }
        })?;
    if fsio::is_binary(&bytes) {
        return Err(format!(
            "is a binary file ({} bytes); inspect it with execute (for example xxd or python)",
            bytes.len()
        ));
    }
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    let total = u64::try_from(lines.len()).unwrap_or(u64::MAX);
    let start = args.start_line.unwrap_or(1).max(1);
    if total == 0 {
        return Ok(ReadResult {
            shown,
            content: String::new(),
            numbered: String::new(),
            start: 1,
            end: 0,
            total,
        });
    }
    if start > total {
        return Err(format!(
            "start_line {start} is past the end of the file ({total} lines)"
        ));
    }
    let mut end = args.end_line.unwrap_or(total).min(total);
    if end < start {
        return Err(format!("end_line {end} is before start_line {start}"));
    }
    let max_lines = u64::try_from(limits.max_read_lines.max(1)).unwrap_or(u64::MAX);
    end = end.min(start.saturating_add(max_lines - 1));
    let mut content = String::new();
    let mut numbered = String::new();
    let mut last = start - 1;
    for number in start..=end {
        let index = usize::try_from(number - 1).unwrap_or(usize::MAX);
        let Some(line) = lines.get(index) else {
            break;
        };
        let line = cut_line(line, MAX_LINE_CHARS);
        let entry = format!("{number:>6}\t{line}\n");
        if numbered.len() + entry.len() > limits.max_output_bytes && number > start {
            break;
        }
        numbered.push_str(&entry);
        content.push_str(&line);
        content.push('\n');
        last = number;
    }
    Ok(ReadResult {
        shown,
        content,
        numbered,
        start,
        end: last,
        total,
    })
}

#[async_trait::async_trait]
impl HostedTool for Read {
    fn spec(&self) -> ToolSpec {
        spec(
            "read",
            &format!(
                "Read a text file in the sandbox workspace (/workspace). Returns its lines \
                 numbered (number, tab, line); numbers are 1-based. Without a range it returns \
                 the file from the start, at most {} lines; pass start_line and end_line \
                 (inclusive) to read a part or to continue a long file.",
                self.0.limits.max_read_lines
            ),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, relative to /workspace or absolute under it."},
                    "start_line": {"type": "integer", "minimum": 1, "description": "First line to read (1-based)."},
                    "end_line": {"type": "integer", "minimum": 1, "description": "Last line to read (inclusive)."},
                },
                "required": ["path"],
                "additionalProperties": false,
            }),
        )
    }

    async fn call(&self, arguments: &str, context: CallContext<'_>) -> ToolOutcome {
        let call_id = context.call_id.to_owned();
        let result = match parse::<ReadArgs>(arguments) {
            Ok(args) => {
                let path = args.path.clone();
                self.0
                    .run(&context, move |root, limits| {
                        read_lines(root, limits, &args)
                    })
                    .await
                    .map_err(|message| (path, message))
            }
            Err(message) => Err((given_path(arguments, "path"), message)),
        };
        match result {
            Ok(read) => {
                let mut text = if read.total == 0 {
                    format!("{} is empty.", read.shown)
                } else {
                    read.numbered
                };
                if read.total > 0 && (read.start > 1 || read.end < read.total) {
                    text.push_str(&format!(
                        "[lines {}-{} of {}",
                        read.start, read.end, read.total
                    ));
                    if read.end < read.total {
                        text.push_str(&format!("; read on with start_line={}", read.end + 1));
                    }
                    text.push(']');
                }
                outcome(
                    text,
                    OutputItem::SandboxReadFile(SandboxReadFile {
                        call_id,
                        file_path: read.shown,
                        content: Some(read.content),
                        start_line: Some(read.start),
                        total_lines: Some(read.total),
                        error: None,
                    }),
                )
            }
            Err((path, message)) => outcome(
                failed(&path, &message),
                OutputItem::SandboxReadFile(SandboxReadFile {
                    call_id,
                    file_path: path,
                    content: None,
                    start_line: None,
                    total_lines: None,
                    error: Some(message),
                }),
            ),
        }
    }
}

// ---------------------------------------------------------------------------------------
// edit

pub(super) struct Edit(pub(super) Shared);

#[derive(Deserialize)]
struct EditArgs {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: Option<bool>,
}

fn edit_file(
    root: &Root,
    limits: &FileLimits,
    args: &EditArgs,
) -> Result<(String, String), String> {
    if args.old_string.is_empty() {
        return Err("old_string is empty; use write to create a file".to_owned());
    }
    if args.old_string == args.new_string {
        return Err("old_string and new_string are the same".to_owned());
    }
    let (relative, shown) = resolve(root, &args.path)?;
    let text = fsio::read_text(root, &relative, limits.max_file_bytes, "edit")?;
    let count = text.matches(args.old_string.as_str()).count();
    let replace_all = args.replace_all.unwrap_or(false);
    let Some(first) = text.find(args.old_string.as_str()) else {
        return Err(
            "old_string was not found; it must match the file exactly, whitespace and \
             indentation included (read the file again)"
                .to_owned(),
        );
    };
    if count > 1 && !replace_all {
        return Err(format!(
            "old_string occurs {count} times; include more surrounding lines to make it \
             unique, or set replace_all to replace every occurrence"
        ));
    }
    let edited = if replace_all {
        text.replace(args.old_string.as_str(), &args.new_string)
    } else {
        text.replacen(args.old_string.as_str(), &args.new_string, 1)
    };
    let size = u64::try_from(edited.len()).unwrap_or(u64::MAX);
    if size > limits.max_file_bytes {
        return Err(fsio::too_large(size, limits.max_file_bytes, "edit"));
    }
    fsio::write_atomic(root, &relative, edited.as_bytes(), limits.workspace_quota)?;
    let line = text[..first].matches('\n').count() + 1;
    let message = if count == 1 {
        format!("Replaced 1 occurrence at line {line}.")
    } else {
        format!("Replaced {count} occurrences (the first at line {line}).")
    };
    Ok((shown, message))
}

#[async_trait::async_trait]
impl HostedTool for Edit {
    fn spec(&self) -> ToolSpec {
        spec(
            "edit",
            "Replace an exact string in a text file of the sandbox workspace (/workspace). \
             old_string must match the file exactly (whitespace and indentation included) and \
             occur exactly once, unless replace_all is true. Include enough surrounding lines \
             to make it unique. Read the file first.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, relative to /workspace or absolute under it."},
                    "old_string": {"type": "string", "description": "The exact text to replace."},
                    "new_string": {"type": "string", "description": "The text to put in its place."},
                    "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."},
                },
                "required": ["path", "old_string", "new_string"],
                "additionalProperties": false,
            }),
        )
    }

    async fn call(&self, arguments: &str, context: CallContext<'_>) -> ToolOutcome {
        let call_id = context.call_id.to_owned();
        let result = match parse::<EditArgs>(arguments) {
            Ok(args) => {
                let path = args.path.clone();
                self.0
                    .run(&context, move |root, limits| edit_file(root, limits, &args))
                    .await
                    .map_err(|message| (path, message))
            }
            Err(message) => Err((given_path(arguments, "path"), message)),
        };
        match result {
            Ok((shown, message)) => outcome(
                format!("Edited {shown}: {message}"),
                OutputItem::SandboxEditFile(SandboxEditFile {
                    call_id,
                    file_path: Some(shown),
                    message: Some(message),
                    error: None,
                }),
            ),
            Err((path, message)) => outcome(
                failed(&path, &message),
                OutputItem::SandboxEditFile(SandboxEditFile {
                    call_id,
                    file_path: (!path.is_empty()).then_some(path),
                    message: None,
                    error: Some(message),
                }),
            ),
        }
    }
}
