//! `share_file`: a workspace file delivered to the caller through the run's file sink.

use std::path::Path;

use engine::hosted::{CallContext, HostedTool, ToolOutcome};
use engine::model::ToolSpec;
use protocol::output::{OutputItem, ShareFile};
use serde::Deserialize;
use serde_json::json;

use super::common::{Shared, failed, given_path, outcome, parse, resolve, spec};
use super::fsio;

pub(super) struct Share(pub(super) Shared);

#[derive(Deserialize)]
struct ShareArgs {
    path: String,
    #[serde(default)]
    filename: Option<String>,
}

/// A filename fit for `Content-Disposition`: the last path segment, without control
/// characters, quotes or backslashes, at most 200 bytes; `None` when nothing is left.
fn clean_filename(name: &str) -> Option<String> {
    let last = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let mut out = String::new();
    for c in last.chars().filter(|c| !c.is_control() && *c != '"') {
        if out.len() + c.len_utf8() > 200 {
            break;
        }
        out.push(c);
    }
    let out = out.trim().to_owned();
    (!out.is_empty() && out != "." && out != "..").then_some(out)
}

/// The media type of a file name's extension (`application/octet-stream` when unknown).
pub fn content_type(filename: &str) -> &'static str {
    let extension = Path::new(filename)
        .extension()
        .map(|ext| ext.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    match extension.as_str() {
        "txt" | "log" => "text/plain; charset=utf-8",
        "md" | "markdown" => "text/markdown; charset=utf-8",
        "csv" => "text/csv; charset=utf-8",
        "tsv" => "text/tab-separated-values; charset=utf-8",
        "html" | "htm" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "py" => "text/x-python; charset=utf-8",
        "sh" => "application/x-sh",
        "json" => "application/json",
        "ipynb" => "application/x-ipynb+json",
        "xml" => "application/xml",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "bmp" => "image/bmp",
        "tif" | "tiff" => "image/tiff",
        "ico" => "image/vnd.microsoft.icon",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "ogg" => "audio/ogg",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "zip" => "application/zip",
        "gz" | "tgz" => "application/gzip",
        "tar" => "application/x-tar",
        "bz2" => "application/x-bzip2",
        "xz" => "application/x-xz",
        "7z" => "application/x-7z-compressed",
        "parquet" => "application/vnd.apache.parquet",
        "sqlite" | "db" => "application/vnd.sqlite3",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "pptx" => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "xls" => "application/vnd.ms-excel",
        "doc" => "application/msword",
        "ppt" => "application/vnd.ms-powerpoint",
        "odt" => "application/vnd.oasis.opendocument.text",
        "ods" => "application/vnd.oasis.opendocument.spreadsheet",
        "rtf" => "application/rtf",
        _ => "application/octet-stream",
    }
}

#[async_trait::async_trait]
impl HostedTool for Share {
    fn spec(&self) -> ToolSpec {
        spec(
            "share_file",
            &format!(
                "Deliver a file from the sandbox workspace (/workspace) to the user: a chart, \
                 report, data set or any other result file (at most {} bytes). Files the user \
                 should receive must be shared with this tool; writing them is not enough. \
                 filename sets the name the user sees (default: the file's own name).",
                self.0.limits.max_share_bytes
            ),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, relative to /workspace or absolute under it."},
                    "filename": {"type": "string", "description": "Name for the user, e.g. report.pdf (optional)."},
                },
                "required": ["path"],
                "additionalProperties": false,
            }),
        )
    }

    async fn call(&self, arguments: &str, context: CallContext<'_>) -> ToolOutcome {
        let call_id = context.call_id.to_owned();
        let read = match parse::<ShareArgs>(arguments) {
            Ok(args) => {
                let path = args.path.clone();
                self.0
                    .run(&context, move |root, limits| {
                        let (relative, shown) = resolve(root, &args.path)?;
                        let bytes = fsio::read_capped(
                            root,
                            &relative,
                            limits.max_share_bytes,
                            "share_file",
                        )?;
                        let own_name = relative
                            .file_name()
                            .map(|name| name.to_string_lossy().into_owned())
                            .unwrap_or_default();
                        let filename = args
                            .filename
                            .as_deref()
                            .and_then(clean_filename)
                            .or_else(|| clean_filename(&own_name))
                            .unwrap_or_else(|| "file".to_owned());
                        Ok((shown, filename, bytes))
                    })
                    .await
                    .map_err(|message| (path, message))
            }
            Err(message) => Err((given_path(arguments, "path"), message)),
        };
        let shared = match read {
            Ok((shown, filename, bytes)) => {
                let content_type = content_type(&filename);
                let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
                match context.files.share(&filename, content_type, bytes).await {
                    Ok(file) => Ok((shown, filename, size, file)),
                    Err(message) => Err((shown, message)),
                }
            }
            Err(failure) => Err(failure),
        };
        match shared {
            Ok((shown, filename, size, file)) => outcome(
                format!(
                    "Shared {shown} with the user as {filename} ({size} bytes, id {}); it is \
                     downloadable at {}.",
                    file.id, file.url
                ),
                OutputItem::ShareFile(ShareFile {
                    call_id,
                    file_id: Some(file.id),
                    filename: Some(filename),
                    size_bytes: Some(file.bytes),
                    url: Some(file.url),
                    error: None,
                }),
            ),
            Err((path, message)) => outcome(
                failed(&path, &message),
                OutputItem::ShareFile(ShareFile {
                    call_id,
                    file_id: None,
                    filename: None,
                    size_bytes: None,
                    url: None,
                    error: Some(message),
                }),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filenames_are_cleaned() {
        assert_eq!(clean_filename("report.pdf").as_deref(), Some("report.pdf"));
        assert_eq!(
            clean_filename("../../etc/passwd").as_deref(),
            Some("passwd")
        );
        assert_eq!(clean_filename("a\\b\"c\n.txt").as_deref(), Some("bc.txt"));
        assert_eq!(clean_filename(".."), None);
        assert_eq!(clean_filename("dir/"), None);
        assert!(clean_filename(&"x".repeat(500)).is_some_and(|name| name.len() <= 200));
    }

    #[test]
    fn content_types() {
        assert_eq!(content_type("chart.PNG"), "image/png");
        assert_eq!(content_type("data.csv"), "text/csv; charset=utf-8");
        assert_eq!(content_type("noext"), "application/octet-stream");
    }
}
