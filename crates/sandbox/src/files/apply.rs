//! `apply_patch`: several files changed by one patch, all or nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rustix::fs::FileType;

use engine::hosted::{CallContext, HostedTool, ToolOutcome};
use engine::model::ToolSpec;
use protocol::output::{OutputItem, SandboxApplyPatch};
use serde::Deserialize;
use serde_json::json;

use super::common::{FileLimits, Shared, outcome, parse, resolve_named, spec};
use super::{fsio, patch};
use crate::confine::Root;

pub(super) struct ApplyPatch(pub(super) Shared);

#[derive(Deserialize)]
struct PatchArgs {
    patch: String,
}

/// The files a patch changed, as the sandbox sees them.
#[derive(Default)]
struct Applied {
    added: Vec<String>,
    modified: Vec<String>,
    deleted: Vec<String>,
}

/// Applies a whole patch: every change is computed in memory first, so a patch that does
/// not apply changes nothing.
fn apply_patch(root: &Root, limits: &FileLimits, args: &PatchArgs) -> Result<Applied, String> {
    let hunks = patch::parse(&args.patch)?;
    // The new state of each touched file (None: deleted), by host path, and its shown path.
    let mut state: BTreeMap<PathBuf, (String, Option<String>)> = BTreeMap::new();
    let mut order: Vec<PathBuf> = Vec::new();
    let mut applied = Applied::default();
    let current = |state: &BTreeMap<PathBuf, (String, Option<String>)>,
                   host: &Path,
                   shown: &str|
     -> Result<Option<String>, String> {
        if let Some((_, content)) = state.get(host) {
            return Ok(content.clone());
        }
        match fsio::kind(root, host) {
            Ok(None) => Ok(None),
            _ => fsio::read_text(root, host, limits.max_file_bytes, "apply_patch")
                .map(Some)
                .map_err(|message| format!("{shown}: {message}")),
        }
    };
    // Whether a regular file is at `host` (in the patch's state so far, else on disk);
    // directories and other kinds are errors. Reads nothing, so binary files can go.
    let exists = |state: &BTreeMap<PathBuf, (String, Option<String>)>,
                  host: &Path,
                  shown: &str|
     -> Result<bool, String> {
        if let Some((_, content)) = state.get(host) {
            return Ok(content.is_some());
        }
        match fsio::kind(root, host) {
            Ok(Some(FileType::RegularFile)) => Ok(true),
            Ok(Some(FileType::Directory)) => Err(format!("{shown}: is a directory")),
            Ok(Some(_)) => Err(format!("{shown}: is not a regular file")),
            Ok(None) => Ok(false),
            Err(message) => Err(format!("{shown}: {message}")),
        }
    };
    let mut set = |state: &mut BTreeMap<PathBuf, (String, Option<String>)>,
                   host: PathBuf,
                   shown: String,
                   content: Option<String>|
     -> Result<(), String> {
        if let Some(text) = &content {
            let size = u64::try_from(text.len()).unwrap_or(u64::MAX);
            if size > limits.max_file_bytes {
                return Err(format!(
                    "{shown}: {}",
                    fsio::too_large(size, limits.max_file_bytes, "apply_patch")
                ));
            }
        }
        if !order.contains(&host) {
            order.push(host.clone());
        }
        state.insert(host, (shown, content));
        Ok(())
    };
    for hunk in hunks {
        match hunk {
            patch::Hunk::Add { path, contents } => {
                let (host, shown) = resolve_named(root, &path)?;
                if exists(&state, &host, &shown)? {
                    return Err(format!(
                        "{shown}: the file already exists; use '*** Update File:' to change it"
                    ));
                }
                applied.added.push(shown.clone());
                set(&mut state, host, shown, Some(contents))?;
            }
            patch::Hunk::Delete { path } => {
                let (host, shown) = resolve_named(root, &path)?;
                if !exists(&state, &host, &shown)? {
                    return Err(format!("{shown}: cannot delete: no such file"));
                }
                applied.deleted.push(shown.clone());
                set(&mut state, host, shown, None)?;
            }
            patch::Hunk::Update {
                path,
                move_to,
                chunks,
            } => {
                let (host, shown) = resolve_named(root, &path)?;
                let Some(original) = current(&state, &host, &shown)? else {
                    return Err(format!("{shown}: cannot update: no such file"));
                };
                let updated = patch::apply(&original, &chunks, &shown)?;
                match move_to {
                    Some(target) => {
                        let (target_host, target_shown) = resolve_named(root, &target)?;
                        if target_host != host && exists(&state, &target_host, &target_shown)? {
                            return Err(format!(
                                "{target_shown}: cannot move {shown} there: the file exists"
                            ));
                        }
                        if target_host != host {
                            applied.deleted.push(shown.clone());
                            set(&mut state, host, shown, None)?;
                        }
                        applied.modified.push(target_shown.clone());
                        set(&mut state, target_host, target_shown, Some(updated))?;
                    }
                    None => {
                        applied.modified.push(shown.clone());
                        set(&mut state, host, shown, Some(updated))?;
                    }
                }
            }
        }
    }
    // Write in the order the patch first touched each file.
    for (index, host) in order.into_iter().enumerate() {
        let Some((shown, content)) = state.remove(&host) else {
            continue;
        };
        let result = match content {
            Some(text) => {
                fsio::write_atomic(root, &host, text.as_bytes(), limits.workspace_quota).map(|_| ())
            }
            None => match fsio::kind(root, &host) {
                Ok(None) => Ok(()),
                _ => fsio::remove_file(root, &host),
            },
        };
        result.map_err(|message| {
            let partial = if index > 0 {
                " (the files before it were changed)"
            } else {
                ""
            };
            format!("{shown}: {message}{partial}")
        })?;
    }
    dedup(&mut applied.added);
    dedup(&mut applied.modified);
    dedup(&mut applied.deleted);
    Ok(applied)
}

fn dedup(paths: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    paths.retain(|path| seen.insert(path.clone()));
}

#[async_trait::async_trait]
impl HostedTool for ApplyPatch {
    fn spec(&self) -> ToolSpec {
        spec(
            "apply_patch",
            "Add, change and delete text files of the sandbox workspace (/workspace) with one \
             patch. The patch is all or nothing: if any part does not apply, no file changes. \
             Format:\n\
             *** Begin Patch\n\
             *** Add File: path/new.txt\n\
             +each line of the new file, after a '+'\n\
             *** Delete File: path/old.txt\n\
             *** Update File: path/app.py\n\
             *** Move to: path/main.py   (optional rename)\n\
             @@ def greet():   (optional: a line to find before the change)\n\
             \x20context line (a space, then the line as in the file)\n\
             -a line to remove\n\
             +a line to add\n\
             *** End Patch\n\
             An update may hold several changes, each starting with '@@' (optionally followed \
             by a line to find first), in file order. Give about 3 unchanged context lines \
             before and after each change so it is found unambiguously; the context and '-' \
             lines must match the file. '*** End of File' after a change anchors it at the end \
             of the file. Paths are relative to /workspace or absolute under it.",
            json!({
                "type": "object",
                "properties": {
                    "patch": {"type": "string", "description": "The whole patch, from '*** Begin Patch' to '*** End Patch'."},
                },
                "required": ["patch"],
                "additionalProperties": false,
            }),
        )
    }

    async fn call(&self, arguments: &str, context: CallContext<'_>) -> ToolOutcome {
        let call_id = context.call_id.to_owned();
        let result = match parse::<PatchArgs>(arguments) {
            Ok(args) => {
                self.0
                    .run(&context, move |root, limits| {
                        apply_patch(root, limits, &args)
                    })
                    .await
            }
            Err(message) => Err(message),
        };
        match result {
            Ok(applied) => {
                let mut text = String::from("Applied the patch.");
                for (label, paths) in [
                    ("Added", &applied.added),
                    ("Modified", &applied.modified),
                    ("Deleted", &applied.deleted),
                ] {
                    if !paths.is_empty() {
                        text.push_str(&format!(" {label}: {}.", paths.join(", ")));
                    }
                }
                outcome(
                    text,
                    OutputItem::SandboxApplyPatch(SandboxApplyPatch {
                        call_id,
                        added: Some(applied.added),
                        modified: Some(applied.modified),
                        deleted: Some(applied.deleted),
                        error: None,
                    }),
                )
            }
            Err(message) => outcome(
                format!("error: {message}"),
                OutputItem::SandboxApplyPatch(SandboxApplyPatch {
                    call_id,
                    added: None,
                    modified: None,
                    deleted: None,
                    error: Some(message),
                }),
            ),
        }
    }
}
