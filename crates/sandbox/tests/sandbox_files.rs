//! The sandbox file tools (`write`, `read`, `edit`, `grep`, `glob`, `apply_patch`,
//! `share_file`) on real directories: each tool's result and item, line ranges, exact edits,
//! searches and their caps, patches, shared bytes, the confinement of every path (`..`,
//! absolute paths, symbolic and hard links out of the workspace, FIFOs), the separation of
//! workspaces and their expiry.
#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers outside #[test] fns fail the test on setup errors and wrong shapes"
)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::hosted::{CallContext, EventSink, FileSink, HostedTool, SharedFile, ToolOutcome};
use protocol::events::EventData;
use protocol::output::{
    OutputItem, SandboxApplyPatch, SandboxEditFile, SandboxFileMatches, SandboxReadFile,
    SandboxWriteFile, ShareFile,
};
use sandbox::files::{FileLimits, NAMES, file_tools};
use sandbox::workspace::{Workspace, Workspaces};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// Harness

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "agentd-sandbox-files-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[derive(Default)]
struct Events(Mutex<Vec<EventData>>);

impl EventSink for Events {
    fn emit(&self, event: EventData) {
        self.0.lock().unwrap().push(event);
    }
}

/// One file a tool shared.
#[derive(Debug, Clone)]
struct Shared {
    filename: String,
    content_type: String,
    bytes: Vec<u8>,
}

#[derive(Default)]
struct Files(Mutex<Vec<Shared>>);

#[async_trait::async_trait]
impl FileSink for Files {
    async fn share(
        &self,
        filename: &str,
        content_type: &str,
        bytes: Vec<u8>,
    ) -> Result<SharedFile, String> {
        let mut files = self.0.lock().unwrap();
        let id = format!("file_{}", files.len() + 1);
        let size = bytes.len() as u64;
        files.push(Shared {
            filename: filename.to_owned(),
            content_type: content_type.to_owned(),
            bytes,
        });
        Ok(SharedFile {
            url: format!("/v1/responses/resp_1/files/{id}/content"),
            id,
            bytes: size,
        })
    }
}

const PROJECT: &str = "proj_1";
const CONVERSATION: &str = "resp_1";

struct Harness {
    /// Holds the workspaces root and a sibling directory "outside".
    dir: TempDir,
    workspaces: Arc<Workspaces>,
    tools: Vec<Arc<dyn HostedTool>>,
    files: Files,
}

impl Harness {
    fn new() -> Harness {
        Harness::with_limits(FileLimits::default())
    }

    fn with_limits(limits: FileLimits) -> Harness {
        let dir = TempDir::new();
        std::fs::create_dir_all(dir.0.join("outside")).unwrap();
        let workspaces = Arc::new(Workspaces::new(
            dir.0.join("workspaces"),
            Duration::from_secs(3600),
        ));
        let tools = file_tools(Arc::clone(&workspaces), limits);
        Harness {
            dir,
            workspaces,
            tools,
            files: Files::default(),
        }
    }

    /// A host directory outside every workspace.
    fn outside(&self) -> PathBuf {
        self.dir.0.join("outside")
    }

    async fn workspace(&self) -> Arc<Workspace> {
        self.workspaces.get(PROJECT, CONVERSATION).await.unwrap()
    }

    /// The host path of a file in the default workspace.
    async fn host(&self, relative: &str) -> PathBuf {
        self.workspace().await.root.join(relative)
    }

    async fn put(&self, relative: &str, content: impl AsRef<[u8]>) {
        let path = self.host(relative).await;
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    async fn call(&self, name: &str, arguments: Value) -> ToolOutcome {
        self.call_in(PROJECT, CONVERSATION, name, arguments).await
    }

    async fn call_in(
        &self,
        project: &str,
        conversation: &str,
        name: &str,
        arguments: Value,
    ) -> ToolOutcome {
        self.call_raw(project, conversation, name, &arguments.to_string())
            .await
    }

    async fn call_raw(
        &self,
        project: &str,
        conversation: &str,
        name: &str,
        arguments: &str,
    ) -> ToolOutcome {
        let tool = self
            .tools
            .iter()
            .find(|tool| tool.spec().name == name)
            .unwrap_or_else(|| panic!("no tool {name}"));
        let events = Events::default();
        let outcome = tool
            .call(
                arguments,
                CallContext {
                    events: &events,
                    next_source: 1,
                    call_id: "call_1",
                    conversation,
                    project_id: project,
                    files: &self.files,
                },
            )
            .await;
        assert!(
            events.0.lock().unwrap().is_empty(),
            "file tools emit no events"
        );
        assert!(outcome.invocations.is_empty(), "file tools are not billed");
        assert!(outcome.sources.is_empty());
        assert_eq!(outcome.items.len(), 1, "one item per call: {outcome:?}");
        outcome
    }

    fn shared(&self) -> Vec<Shared> {
        self.files.0.lock().unwrap().clone()
    }
}

fn item(outcome: &ToolOutcome) -> &OutputItem {
    &outcome.items[0]
}

fn write_item(outcome: &ToolOutcome) -> &SandboxWriteFile {
    match item(outcome) {
        OutputItem::SandboxWriteFile(item) => item,
        other => panic!("not a sandbox_write_file item: {other:?}"),
    }
}

fn read_item(outcome: &ToolOutcome) -> &SandboxReadFile {
    match item(outcome) {
        OutputItem::SandboxReadFile(item) => item,
        other => panic!("not a sandbox_read_file item: {other:?}"),
    }
}

fn edit_item(outcome: &ToolOutcome) -> &SandboxEditFile {
    match item(outcome) {
        OutputItem::SandboxEditFile(item) => item,
        other => panic!("not a sandbox_edit_file item: {other:?}"),
    }
}

fn grep_item(outcome: &ToolOutcome) -> &SandboxFileMatches {
    match item(outcome) {
        OutputItem::SandboxGrep(item) => item,
        other => panic!("not a sandbox_grep item: {other:?}"),
    }
}

fn glob_item(outcome: &ToolOutcome) -> &SandboxFileMatches {
    match item(outcome) {
        OutputItem::SandboxGlob(item) => item,
        other => panic!("not a sandbox_glob item: {other:?}"),
    }
}

fn patch_item(outcome: &ToolOutcome) -> &SandboxApplyPatch {
    match item(outcome) {
        OutputItem::SandboxApplyPatch(item) => item,
        other => panic!("not a sandbox_apply_patch item: {other:?}"),
    }
}

fn share_item(outcome: &ToolOutcome) -> &ShareFile {
    match item(outcome) {
        OutputItem::ShareFile(item) => item,
        other => panic!("not a share_file item: {other:?}"),
    }
}

/// The `error` of whatever item the call produced.
fn item_error(outcome: &ToolOutcome) -> Option<String> {
    let value = serde_json::to_value(item(outcome)).unwrap();
    value
        .get("error")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|value| (*value).to_owned()).collect()
}

// ---------------------------------------------------------------------------------------
// The tools and their specs

#[test]
fn seven_tools_with_fixed_names_and_object_schemas() {
    let harness = Harness::new();
    let names: Vec<String> = harness.tools.iter().map(|tool| tool.spec().name).collect();
    assert_eq!(names, strings(&NAMES));
    assert_eq!(
        names,
        strings(&[
            "write",
            "read",
            "edit",
            "grep",
            "glob",
            "apply_patch",
            "share_file"
        ])
    );
    for tool in &harness.tools {
        let spec = tool.spec();
        assert_eq!(spec.parameters["type"], "object", "{}", spec.name);
        assert!(spec.parameters["required"].is_array(), "{}", spec.name);
        assert!(spec.description.is_some_and(|text| !text.is_empty()));
    }
    let patch = harness.tools[5].spec().description.unwrap();
    assert!(patch.contains("*** Begin Patch") && patch.contains("*** Update File:"));
}

// ---------------------------------------------------------------------------------------
// write

#[tokio::test]
async fn write_creates_then_overwrites_a_file() {
    let harness = Harness::new();
    let outcome = harness
        .call(
            "write",
            json!({"path": "out/notes.txt", "content": "hello\n"}),
        )
        .await;
    assert_eq!(
        write_item(&outcome),
        &SandboxWriteFile {
            call_id: "call_1".into(),
            file_path: "/workspace/out/notes.txt".into(),
            size_bytes: Some(6),
            error: None,
        }
    );
    assert_eq!(
        serde_json::to_value(item(&outcome)).unwrap(),
        json!({"type": "sandbox_write_file", "call_id": "call_1",
               "file_path": "/workspace/out/notes.txt", "size_bytes": 6})
    );
    assert!(
        outcome
            .model_text
            .contains("Created /workspace/out/notes.txt")
    );
    let host = harness.host("out/notes.txt").await;
    assert_eq!(std::fs::read_to_string(&host).unwrap(), "hello\n");

    // Absolute under /workspace, replacing the file.
    let outcome = harness
        .call(
            "write",
            json!({"path": "/workspace/out/notes.txt", "content": "bye"}),
        )
        .await;
    assert_eq!(write_item(&outcome).size_bytes, Some(3));
    assert!(
        outcome.model_text.contains("Overwrote"),
        "{}",
        outcome.model_text
    );
    assert_eq!(std::fs::read_to_string(&host).unwrap(), "bye");
    // No temporary file is left behind.
    let names: Vec<_> = std::fs::read_dir(host.parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(names, ["notes.txt"]);
}

#[tokio::test]
async fn write_refuses_directories_oversized_content_and_bad_arguments() {
    let harness = Harness::with_limits(FileLimits {
        max_file_bytes: 10,
        ..FileLimits::default()
    });
    harness.put("dir/x", "x").await;
    let outcome = harness
        .call("write", json!({"path": "dir", "content": "x"}))
        .await;
    assert_eq!(write_item(&outcome).file_path, "dir");
    assert_eq!(
        write_item(&outcome).error.as_deref(),
        Some("is a directory")
    );
    assert!(outcome.model_text.starts_with("error: dir:"));

    let outcome = harness
        .call(
            "write",
            json!({"path": "big.txt", "content": "x".repeat(11)}),
        )
        .await;
    assert!(item_error(&outcome).unwrap().contains("10 byte limit"));
    assert!(!harness.host("big.txt").await.exists());

    let outcome = harness.call("write", json!({"path": "a.txt"})).await;
    assert_eq!(write_item(&outcome).file_path, "a.txt");
    assert!(
        item_error(&outcome)
            .unwrap()
            .starts_with("invalid arguments")
    );
    let outcome = harness
        .call_raw(PROJECT, CONVERSATION, "write", "not json")
        .await;
    assert!(
        item_error(&outcome)
            .unwrap()
            .starts_with("invalid arguments")
    );
}

// ---------------------------------------------------------------------------------------
// read

#[tokio::test]
async fn read_returns_numbered_lines_and_line_ranges() {
    let harness = Harness::new();
    let text: String = (1..=10).map(|n| format!("line {n}\n")).collect();
    harness.put("data/ten.txt", &text).await;

    let outcome = harness.call("read", json!({"path": "data/ten.txt"})).await;
    assert_eq!(
        read_item(&outcome),
        &SandboxReadFile {
            call_id: "call_1".into(),
            file_path: "/workspace/data/ten.txt".into(),
            content: Some(text.clone()),
            start_line: Some(1),
            total_lines: Some(10),
            error: None,
        }
    );
    assert!(
        outcome
            .model_text
            .starts_with("     1\tline 1\n     2\tline 2\n")
    );
    assert!(outcome.model_text.ends_with("    10\tline 10\n"));

    let outcome = harness
        .call(
            "read",
            json!({"path": "/workspace/data/ten.txt", "start_line": 3, "end_line": 5}),
        )
        .await;
    let read = read_item(&outcome);
    assert_eq!(read.content.as_deref(), Some("line 3\nline 4\nline 5\n"));
    assert_eq!(read.start_line, Some(3));
    assert_eq!(read.total_lines, Some(10));
    assert_eq!(
        outcome.model_text,
        "     3\tline 3\n     4\tline 4\n     5\tline 5\n\
         [lines 3-5 of 10; read on with start_line=6]"
    );

    // An end past the file is cut to its end; a start past it is an error.
    let outcome = harness
        .call(
            "read",
            json!({"path": "data/ten.txt", "start_line": 9, "end_line": 99}),
        )
        .await;
    assert_eq!(
        read_item(&outcome).content.as_deref(),
        Some("line 9\nline 10\n")
    );
    let outcome = harness
        .call("read", json!({"path": "data/ten.txt", "start_line": 11}))
        .await;
    assert!(
        item_error(&outcome)
            .unwrap()
            .contains("past the end of the file (10 lines)")
    );
    let outcome = harness
        .call(
            "read",
            json!({"path": "data/ten.txt", "start_line": 5, "end_line": 4}),
        )
        .await;
    assert!(item_error(&outcome).unwrap().contains("before start_line"));

    harness.put("empty.txt", "").await;
    let outcome = harness.call("read", json!({"path": "empty.txt"})).await;
    assert_eq!(read_item(&outcome).total_lines, Some(0));
    assert_eq!(read_item(&outcome).content.as_deref(), Some(""));
    assert!(outcome.model_text.contains("is empty"));
}

#[tokio::test]
async fn read_caps_lines_and_refuses_binary_directories_and_missing_files() {
    let harness = Harness::with_limits(FileLimits {
        max_read_lines: 4,
        ..FileLimits::default()
    });
    let text: String = (1..=10).map(|n| format!("{n}\n")).collect();
    harness.put("ten.txt", &text).await;
    let outcome = harness.call("read", json!({"path": "ten.txt"})).await;
    assert_eq!(read_item(&outcome).content.as_deref(), Some("1\n2\n3\n4\n"));
    assert!(
        outcome
            .model_text
            .ends_with("[lines 1-4 of 10; read on with start_line=5]")
    );

    harness.put("blob.bin", [0u8, 1, 2, 3]).await;
    let outcome = harness.call("read", json!({"path": "blob.bin"})).await;
    assert!(item_error(&outcome).unwrap().contains("binary file"));

    let outcome = harness.call("read", json!({"path": "."})).await;
    assert_eq!(item_error(&outcome).as_deref(), Some("is a directory"));

    let outcome = harness.call("read", json!({"path": "nope.txt"})).await;
    let read = read_item(&outcome);
    assert_eq!(read.file_path, "nope.txt");
    assert_eq!(read.error.as_deref(), Some("no such file or directory"));
    assert_eq!((read.content.as_ref(), read.start_line), (None, None));
    assert_eq!(
        outcome.model_text,
        "error: nope.txt: no such file or directory"
    );
}

#[tokio::test]
async fn read_does_not_block_on_a_fifo() {
    let harness = Harness::new();
    let fifo = harness.host("pipe").await;
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    for (tool, arguments) in [
        ("read", json!({"path": "pipe"})),
        ("share_file", json!({"path": "pipe"})),
        (
            "edit",
            json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
        ),
    ] {
        let outcome = tokio::time::timeout(Duration::from_secs(10), harness.call(tool, arguments))
            .await
            .unwrap();
        assert_eq!(
            item_error(&outcome).as_deref(),
            Some("is not a regular file"),
            "{tool}"
        );
    }
    let outcome = harness.call("grep", json!({"pattern": "x"})).await;
    assert_eq!(grep_item(&outcome).count, Some(0));
}

// ---------------------------------------------------------------------------------------
// edit

#[tokio::test]
async fn edit_replaces_an_exact_unique_string() {
    let harness = Harness::new();
    harness
        .put(
            "app.py",
            "def f():\n    return 1\n\ndef g():\n    return 2\n",
        )
        .await;
    let outcome = harness
        .call(
            "edit",
            json!({"path": "app.py", "old_string": "    return 2", "new_string": "    return 3"}),
        )
        .await;
    assert_eq!(
        edit_item(&outcome),
        &SandboxEditFile {
            call_id: "call_1".into(),
            file_path: Some("/workspace/app.py".into()),
            message: Some("Replaced 1 occurrence at line 5.".into()),
            error: None,
        }
    );
    assert_eq!(
        std::fs::read_to_string(harness.host("app.py").await).unwrap(),
        "def f():\n    return 1\n\ndef g():\n    return 3\n"
    );
}

#[tokio::test]
async fn edit_refuses_missing_and_ambiguous_strings_unless_replace_all() {
    let harness = Harness::new();
    let original = "x = 1\ny = 1\nz = 2\n";
    harness.put("v.py", original).await;
    let host = harness.host("v.py").await;

    let outcome = harness
        .call(
            "edit",
            json!({"path": "v.py", "old_string": "w = 1", "new_string": "w = 2"}),
        )
        .await;
    let edit = edit_item(&outcome);
    assert_eq!(edit.file_path.as_deref(), Some("v.py"));
    assert!(edit.error.as_deref().unwrap().contains("not found"));
    assert!(edit.message.is_none());

    let outcome = harness
        .call(
            "edit",
            json!({"path": "v.py", "old_string": "= 1", "new_string": "= 5"}),
        )
        .await;
    assert!(item_error(&outcome).unwrap().contains("occurs 2 times"));
    assert_eq!(std::fs::read_to_string(&host).unwrap(), original);

    let outcome = harness
        .call(
            "edit",
            json!({"path": "v.py", "old_string": "", "new_string": "a"}),
        )
        .await;
    assert!(item_error(&outcome).unwrap().contains("empty"));
    let outcome = harness
        .call(
            "edit",
            json!({"path": "v.py", "old_string": "z", "new_string": "z"}),
        )
        .await;
    assert!(item_error(&outcome).unwrap().contains("the same"));
    assert_eq!(std::fs::read_to_string(&host).unwrap(), original);

    let outcome = harness
        .call(
            "edit",
            json!({"path": "v.py", "old_string": "= 1", "new_string": "= 5", "replace_all": true}),
        )
        .await;
    assert_eq!(
        edit_item(&outcome).message.as_deref(),
        Some("Replaced 2 occurrences (the first at line 1).")
    );
    assert_eq!(
        std::fs::read_to_string(&host).unwrap(),
        "x = 5\ny = 5\nz = 2\n"
    );
}

// ---------------------------------------------------------------------------------------
// grep

async fn search_tree(harness: &Harness) {
    harness.put("a.py", "def alpha():\n    pass\n").await;
    harness.put("b.txt", "def not_python\n").await;
    harness
        .put(
            "pkg/c.py",
            "import os\ndef gamma(x):\n    return x\ndef delta():\n",
        )
        .await;
    harness.put("pkg/deep/d.py", "DEF upper\n").await;
    harness.put("data.bin", b"def \0binary").await;
}

#[tokio::test]
async fn grep_finds_regex_matches_filtered_by_glob() {
    let harness = Harness::new();
    search_tree(&harness).await;

    let outcome = harness
        .call("grep", json!({"pattern": r"^def \w+\(", "glob": "*.py"}))
        .await;
    assert_eq!(
        grep_item(&outcome),
        &SandboxFileMatches {
            call_id: "call_1".into(),
            files: Some(strings(&["/workspace/a.py", "/workspace/pkg/c.py"])),
            count: Some(3),
            truncated: Some(false),
            error: None,
        }
    );
    assert_eq!(
        outcome.model_text,
        "3 matching lines in 2 files:\n/workspace/a.py:1: def alpha():\n\
         /workspace/pkg/c.py:2: def gamma(x):\n/workspace/pkg/c.py:4: def delta():\n"
    );

    // Without a filter every text file is searched (the binary one is skipped); (?i) works.
    let outcome = harness.call("grep", json!({"pattern": "(?i)^def"})).await;
    let found = grep_item(&outcome);
    assert_eq!(
        found.files.clone().unwrap(),
        strings(&[
            "/workspace/a.py",
            "/workspace/b.txt",
            "/workspace/pkg/c.py",
            "/workspace/pkg/deep/d.py"
        ])
    );
    assert_eq!(found.count, Some(5));

    // A glob with '/' matches paths; path narrows to a directory or a file.
    let outcome = harness
        .call("grep", json!({"pattern": "(?i)def", "glob": "pkg/**/*.py"}))
        .await;
    assert_eq!(grep_item(&outcome).count, Some(3));
    let outcome = harness
        .call(
            "grep",
            json!({"pattern": "def", "path": "/workspace/pkg/deep"}),
        )
        .await;
    assert_eq!(grep_item(&outcome).count, Some(0));
    assert_eq!(outcome.model_text, "No matches.");
    let outcome = harness
        .call("grep", json!({"pattern": "return", "path": "pkg/c.py"}))
        .await;
    assert_eq!(
        grep_item(&outcome).files,
        Some(strings(&["/workspace/pkg/c.py"]))
    );

    let outcome = harness.call("grep", json!({"pattern": "(unclosed"})).await;
    let found = grep_item(&outcome);
    assert!(
        found
            .error
            .as_deref()
            .unwrap()
            .contains("invalid regular expression")
    );
    assert_eq!((found.files.as_ref(), found.count), (None, None));
    let outcome = harness
        .call("grep", json!({"pattern": "x", "path": "missing"}))
        .await;
    assert_eq!(
        item_error(&outcome).as_deref(),
        Some("missing: no such file or directory")
    );
}

#[tokio::test]
async fn grep_stops_at_the_match_cap() {
    let harness = Harness::with_limits(FileLimits {
        max_results: 2,
        ..FileLimits::default()
    });
    search_tree(&harness).await;
    let outcome = harness.call("grep", json!({"pattern": "def"})).await;
    let found = grep_item(&outcome);
    assert_eq!(found.count, Some(2));
    assert_eq!(found.truncated, Some(true));
    assert_eq!(
        found.files,
        Some(strings(&["/workspace/a.py", "/workspace/b.txt"]))
    );
    assert!(outcome.model_text.contains("search stopped early"));
}

// ---------------------------------------------------------------------------------------
// glob

#[tokio::test]
async fn glob_lists_matching_files() {
    let harness = Harness::new();
    search_tree(&harness).await;

    let outcome = harness.call("glob", json!({"pattern": "**/*.py"})).await;
    assert_eq!(
        glob_item(&outcome),
        &SandboxFileMatches {
            call_id: "call_1".into(),
            files: Some(strings(&[
                "/workspace/a.py",
                "/workspace/pkg/c.py",
                "/workspace/pkg/deep/d.py"
            ])),
            count: Some(3),
            truncated: Some(false),
            error: None,
        }
    );
    assert_eq!(
        serde_json::to_value(item(&outcome)).unwrap()["type"],
        "sandbox_glob"
    );
    assert!(
        outcome
            .model_text
            .starts_with("3 files match:\n/workspace/a.py\n")
    );

    let cases: [(&str, &[&str]); 6] = [
        ("*.py", &["/workspace/a.py"]),
        ("/workspace/pkg/*", &["/workspace/pkg/c.py"]),
        (
            "pkg/**",
            &["/workspace/pkg/c.py", "/workspace/pkg/deep/d.py"],
        ),
        ("*.{txt,bin}", &["/workspace/b.txt", "/workspace/data.bin"]),
        ("pkg/c.py", &["/workspace/pkg/c.py"]),
        ("nothing/*.rs", &[]),
    ];
    for (pattern, expected) in cases {
        let outcome = harness.call("glob", json!({"pattern": pattern})).await;
        assert_eq!(
            glob_item(&outcome).files,
            Some(strings(expected)),
            "{pattern}"
        );
    }

    let outcome = harness.call("glob", json!({"pattern": "/etc/*"})).await;
    assert!(
        item_error(&outcome)
            .unwrap()
            .contains("must be under /workspace")
    );
    let outcome = harness.call("glob", json!({"pattern": "../*"})).await;
    assert!(item_error(&outcome).unwrap().contains("'..'"));
}

#[tokio::test]
async fn glob_caps_the_list_but_counts_every_match() {
    let harness = Harness::with_limits(FileLimits {
        max_results: 2,
        ..FileLimits::default()
    });
    search_tree(&harness).await;
    let outcome = harness.call("glob", json!({"pattern": "**"})).await;
    let found = glob_item(&outcome);
    assert_eq!(
        found.files,
        Some(strings(&["/workspace/a.py", "/workspace/b.txt"]))
    );
    assert_eq!(found.count, Some(5));
    assert_eq!(found.truncated, Some(true));
}

// ---------------------------------------------------------------------------------------
// apply_patch

#[tokio::test]
async fn apply_patch_adds_modifies_and_deletes() {
    let harness = Harness::new();
    harness
        .put(
            "src/app.py",
            "import sys\n\ndef greet(name):\n    print('hi', name)\n\ndef main():\n    greet('x')\n",
        )
        .await;
    harness.put("old.txt", "bye\n").await;
    let patch = "*** Begin Patch\n\
                 *** Add File: docs/readme.md\n\
                 +# Title\n\
                 +\n\
                 +Body.\n\
                 *** Update File: /workspace/src/app.py\n\
                 @@ def greet(name):\n\
                 -    print('hi', name)\n\
                 +    print('hello', name)\n\
                 @@\n \
                 def main():\n\
                 -    greet('x')\n\
                 +    greet(sys.argv[1])\n\
                 *** Delete File: old.txt\n\
                 *** End Patch";
    let outcome = harness.call("apply_patch", json!({"patch": patch})).await;
    assert_eq!(
        patch_item(&outcome),
        &SandboxApplyPatch {
            call_id: "call_1".into(),
            added: Some(strings(&["/workspace/docs/readme.md"])),
            modified: Some(strings(&["/workspace/src/app.py"])),
            deleted: Some(strings(&["/workspace/old.txt"])),
            error: None,
        },
        "{}",
        outcome.model_text
    );
    assert_eq!(
        std::fs::read_to_string(harness.host("docs/readme.md").await).unwrap(),
        "# Title\n\nBody.\n"
    );
    assert_eq!(
        std::fs::read_to_string(harness.host("src/app.py").await).unwrap(),
        "import sys\n\ndef greet(name):\n    print('hello', name)\n\ndef main():\n    greet(sys.argv[1])\n"
    );
    assert!(!harness.host("old.txt").await.exists());
    assert!(outcome.model_text.starts_with("Applied the patch."));

    // A rename with a change.
    let patch = "*** Begin Patch\n*** Update File: docs/readme.md\n*** Move to: README.md\n\
                 @@\n-Body.\n+Text.\n*** End Patch\n";
    let outcome = harness.call("apply_patch", json!({"patch": patch})).await;
    let applied = patch_item(&outcome);
    assert_eq!(applied.modified, Some(strings(&["/workspace/README.md"])));
    assert_eq!(
        applied.deleted,
        Some(strings(&["/workspace/docs/readme.md"]))
    );
    assert_eq!(
        std::fs::read_to_string(harness.host("README.md").await).unwrap(),
        "# Title\n\nText.\n"
    );
    assert!(!harness.host("docs/readme.md").await.exists());

    // Any regular file can be deleted, binary ones too; a directory cannot.
    harness.put("blob.bin", [0u8, 159, 146, 150]).await;
    harness.put("dir/keep.txt", "keep").await;
    let patch = "*** Begin Patch\n*** Delete File: blob.bin\n*** End Patch";
    let outcome = harness.call("apply_patch", json!({"patch": patch})).await;
    assert_eq!(
        patch_item(&outcome).deleted,
        Some(strings(&["/workspace/blob.bin"]))
    );
    assert!(!harness.host("blob.bin").await.exists());
    let patch = "*** Begin Patch\n*** Delete File: dir\n*** End Patch";
    let outcome = harness.call("apply_patch", json!({"patch": patch})).await;
    assert_eq!(
        item_error(&outcome).as_deref(),
        Some("/workspace/dir: is a directory")
    );
    assert!(harness.host("dir/keep.txt").await.exists());
}

#[tokio::test]
async fn apply_patch_refuses_malformed_or_inapplicable_patches_and_changes_nothing() {
    let harness = Harness::new();
    harness.put("a.txt", "one\ntwo\n").await;
    harness.put("b.txt", "three\n").await;
    let malformed = [
        "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+uno\n",
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+uno\n",
        "*** Begin Patch\n*** Add File: c.txt\nno plus\n*** End Patch",
        "*** Begin Patch\n*** Frobnicate File: a.txt\n*** End Patch",
    ];
    for patch in malformed {
        let outcome = harness.call("apply_patch", json!({"patch": patch})).await;
        let applied = patch_item(&outcome);
        assert!(applied.error.is_some(), "{patch}");
        assert_eq!(
            (&applied.added, &applied.modified, &applied.deleted),
            (&None, &None, &None)
        );
        assert!(outcome.model_text.starts_with("error: "));
    }
    // The first file's change applies, the second's context is wrong: neither is written.
    let patch = "*** Begin Patch\n*** Update File: a.txt\n-one\n+uno\n\
                 *** Update File: b.txt\n-four\n+cuatro\n*** Add File: c.txt\n+new\n*** End Patch";
    let outcome = harness.call("apply_patch", json!({"patch": patch})).await;
    let error = item_error(&outcome).unwrap();
    assert!(
        error.contains("/workspace/b.txt") && error.contains("could not find"),
        "{error}"
    );
    // Adding an existing file, updating or deleting a missing one.
    for (patch, expected) in [
        (
            "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch",
            "already exists",
        ),
        (
            "*** Begin Patch\n*** Delete File: zz.txt\n*** End Patch",
            "no such file",
        ),
        (
            "*** Begin Patch\n*** Update File: zz.txt\n-a\n+b\n*** End Patch",
            "no such file",
        ),
    ] {
        let outcome = harness.call("apply_patch", json!({"patch": patch})).await;
        assert!(item_error(&outcome).unwrap().contains(expected), "{patch}");
    }
    assert_eq!(
        std::fs::read_to_string(harness.host("a.txt").await).unwrap(),
        "one\ntwo\n"
    );
    assert_eq!(
        std::fs::read_to_string(harness.host("b.txt").await).unwrap(),
        "three\n"
    );
    assert!(!harness.host("c.txt").await.exists());
}

// ---------------------------------------------------------------------------------------
// share_file

#[tokio::test]
async fn share_file_delivers_the_bytes_with_a_content_type() {
    let harness = Harness::new();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend((0..=255u8).cycle().take(5000));
    harness.put("out/chart.png", &png).await;

    let outcome = harness
        .call("share_file", json!({"path": "out/chart.png"}))
        .await;
    assert_eq!(
        share_item(&outcome),
        &ShareFile {
            call_id: "call_1".into(),
            file_id: Some("file_1".into()),
            filename: Some("chart.png".into()),
            size_bytes: Some(png.len() as u64),
            url: Some("/v1/responses/resp_1/files/file_1/content".into()),
            error: None,
        }
    );
    assert_eq!(
        serde_json::to_value(item(&outcome)).unwrap()["type"],
        "share_file"
    );
    assert!(
        outcome
            .model_text
            .contains("/v1/responses/resp_1/files/file_1/content")
    );
    let shared = harness.shared();
    assert_eq!(shared.len(), 1);
    assert_eq!(shared[0].filename, "chart.png");
    assert_eq!(shared[0].content_type, "image/png");
    assert!(shared[0].bytes == png, "the bytes arrive unchanged");

    // A name for the user (only its last segment is kept); the type follows it.
    harness.put("report", "a,b\n1,2\n").await;
    let outcome = harness
        .call(
            "share_file",
            json!({"path": "/workspace/report", "filename": "../results.csv"}),
        )
        .await;
    assert_eq!(
        share_item(&outcome).filename.as_deref(),
        Some("results.csv")
    );
    let shared = harness.shared();
    assert_eq!(shared[1].content_type, "text/csv; charset=utf-8");
    assert_eq!(shared[1].bytes, b"a,b\n1,2\n");
}

#[tokio::test]
async fn share_file_refuses_large_missing_and_directory_paths() {
    let harness = Harness::with_limits(FileLimits {
        max_share_bytes: 100,
        ..FileLimits::default()
    });
    harness.put("big.bin", vec![7u8; 101]).await;
    harness.put("dir/x", "x").await;
    for (path, expected) in [
        ("big.bin", "100 byte limit"),
        ("missing.txt", "no such file"),
        ("dir", "is a directory"),
    ] {
        let outcome = harness.call("share_file", json!({"path": path})).await;
        let share = share_item(&outcome);
        assert!(share.error.as_deref().unwrap().contains(expected), "{path}");
        assert_eq!((&share.file_id, &share.url), (&None, &None));
    }
    assert!(harness.shared().is_empty());
}

// ---------------------------------------------------------------------------------------
// Confinement

/// Every tool called with `path` (or a pattern or patch naming it).
fn calls_naming(path: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("write", json!({"path": path, "content": "pwned"})),
        ("read", json!({"path": path})),
        (
            "edit",
            json!({"path": path, "old_string": "secret", "new_string": "pwned"}),
        ),
        ("grep", json!({"pattern": "secret", "path": path})),
        ("glob", json!({"pattern": format!("{path}/*")})),
        ("share_file", json!({"path": path})),
        (
            "apply_patch",
            json!({"patch": format!("*** Begin Patch\n*** Update File: {path}\n-secret\n+pwned\n*** End Patch")}),
        ),
        (
            "apply_patch",
            json!({"patch": format!("*** Begin Patch\n*** Add File: {path}\n+pwned\n*** End Patch")}),
        ),
        (
            "apply_patch",
            json!({"patch": format!("*** Begin Patch\n*** Delete File: {path}\n*** End Patch")}),
        ),
    ]
}

#[tokio::test]
async fn paths_outside_the_workspace_are_refused_by_every_tool() {
    let harness = Harness::new();
    let workspace = harness.workspace().await;
    // The files an escape would reach: next to the workspace, and in its parents.
    let project_dir = workspace.root.parent().unwrap().to_path_buf();
    std::fs::write(project_dir.join("x"), "secret").unwrap();
    for path in [
        "../x",
        "/etc/passwd",
        "/workspace/../../etc/passwd",
        "a/../../x",
        "/workspacex/y",
    ] {
        for (tool, arguments) in calls_naming(path) {
            let outcome = harness.call(tool, arguments).await;
            let error = item_error(&outcome)
                .unwrap_or_else(|| panic!("{tool} {path}: {}", outcome.model_text));
            assert!(
                error.contains("outside /workspace")
                    || error.contains("must be under /workspace")
                    || error.contains("'..'"),
                "{tool} {path}: {error}"
            );
        }
    }
    assert_eq!(
        std::fs::read_to_string(project_dir.join("x")).unwrap(),
        "secret"
    );
    assert!(harness.shared().is_empty());
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    assert!(!passwd.contains("pwned"));
}

#[tokio::test]
async fn symlinks_out_of_the_workspace_are_never_followed() {
    let harness = Harness::new();
    let secret = harness.outside().join("secret.txt");
    std::fs::write(&secret, "secret\n").unwrap();
    let root = harness.workspace().await.root.clone();
    // Links as code in the sandbox could leave them: absolute host paths, paths that are
    // absolute in the sandbox's view but elsewhere, and relative climbs.
    std::os::unix::fs::symlink(&secret, root.join("link")).unwrap();
    std::os::unix::fs::symlink(harness.outside(), root.join("dirlink")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", root.join("passwd")).unwrap();
    std::os::unix::fs::symlink("../../../outside/secret.txt", root.join("climb")).unwrap();
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::os::unix::fs::symlink("../../x", root.join("sub/up")).unwrap();

    for path in [
        "link",
        "dirlink/secret.txt",
        "passwd",
        "climb",
        "sub/up",
        "/workspace/link",
    ] {
        for (tool, arguments) in calls_naming(path) {
            let outcome = harness.call(tool, arguments).await;
            let error = item_error(&outcome)
                .unwrap_or_else(|| panic!("{tool} {path}: {}", outcome.model_text));
            assert!(
                error.contains("outside /workspace"),
                "{tool} {path}: {error}"
            );
        }
    }
    // A search of the whole workspace skips the links.
    let outcome = harness
        .call("grep", json!({"pattern": "secret|root"}))
        .await;
    assert_eq!(grep_item(&outcome).count, Some(0));
    let outcome = harness.call("glob", json!({"pattern": "**"})).await;
    assert_eq!(glob_item(&outcome).count, Some(0));

    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "secret\n");
    let names: Vec<_> = std::fs::read_dir(harness.outside()).unwrap().collect();
    assert_eq!(names.len(), 1, "nothing was created outside");
    assert!(harness.shared().is_empty());
    assert!(
        std::fs::symlink_metadata(root.join("link"))
            .unwrap()
            .is_symlink()
    );
}

#[tokio::test]
async fn symlinks_inside_the_workspace_are_followed_as_the_sandbox_sees_them() {
    let harness = Harness::new();
    harness.put("data/real.txt", "inside\n").await;
    let root = harness.workspace().await.root.clone();
    std::os::unix::fs::symlink("/workspace/data/real.txt", root.join("abs")).unwrap();
    std::os::unix::fs::symlink("data", root.join("rel")).unwrap();

    let outcome = harness.call("read", json!({"path": "abs"})).await;
    let read = read_item(&outcome);
    assert_eq!(read.content.as_deref(), Some("inside\n"));
    assert_eq!(read.file_path, "/workspace/data/real.txt");
    let outcome = harness.call("read", json!({"path": "rel/real.txt"})).await;
    assert_eq!(read_item(&outcome).content.as_deref(), Some("inside\n"));

    // Writing through an inside link writes its target.
    let outcome = harness
        .call("write", json!({"path": "abs", "content": "changed\n"}))
        .await;
    assert_eq!(write_item(&outcome).file_path, "/workspace/data/real.txt");
    assert_eq!(
        std::fs::read_to_string(root.join("data/real.txt")).unwrap(),
        "changed\n"
    );

    let workspace = harness.workspace().await;
    assert_eq!(
        workspace.resolve("abs").unwrap(),
        root.join("data/real.txt")
    );
    assert_eq!(workspace.resolve("/workspace").unwrap(), root);
    assert_eq!(
        workspace.resolve("rel/../new.txt").unwrap(),
        root.join("new.txt")
    );
    assert!(workspace.resolve("").is_err());
}

#[tokio::test]
async fn a_hard_link_to_an_outside_file_is_replaced_not_written_through() {
    let harness = Harness::new();
    let secret = harness.outside().join("hard.txt");
    std::fs::write(&secret, "secret\n").unwrap();
    let root = harness.workspace().await.root.clone();
    std::fs::hard_link(&secret, root.join("hard")).unwrap();

    let outcome = harness
        .call("write", json!({"path": "hard", "content": "pwned\n"}))
        .await;
    assert_eq!(item_error(&outcome), None);
    let outcome = harness
        .call(
            "edit",
            json!({"path": "hard", "old_string": "pwned", "new_string": "again"}),
        )
        .await;
    assert_eq!(item_error(&outcome), None);
    let patch = "*** Begin Patch\n*** Update File: hard\n-again\n+more\n*** End Patch";
    let outcome = harness.call("apply_patch", json!({"patch": patch})).await;
    assert_eq!(item_error(&outcome), None);

    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "secret\n");
    assert_eq!(
        std::fs::read_to_string(root.join("hard")).unwrap(),
        "more\n"
    );
}

// ---------------------------------------------------------------------------------------
// Workspaces

#[tokio::test]
async fn workspaces_of_different_projects_and_conversations_are_separate() {
    let harness = Harness::new();
    let outcome = harness
        .call_in(
            "proj_a",
            "resp_1",
            "write",
            json!({"path": "f.txt", "content": "a"}),
        )
        .await;
    assert_eq!(item_error(&outcome), None);
    for (project, conversation) in [("proj_b", "resp_1"), ("proj_a", "resp_2")] {
        let outcome = harness
            .call_in(project, conversation, "read", json!({"path": "f.txt"}))
            .await;
        assert_eq!(
            item_error(&outcome).as_deref(),
            Some("no such file or directory"),
            "{project}/{conversation}"
        );
        let outcome = harness
            .call_in(project, conversation, "glob", json!({"pattern": "**"}))
            .await;
        assert_eq!(glob_item(&outcome).count, Some(0));
    }
    let outcome = harness
        .call_in("proj_a", "resp_1", "read", json!({"path": "f.txt"}))
        .await;
    assert_eq!(read_item(&outcome).content.as_deref(), Some("a\n"));

    let a = harness.workspaces.get("proj_a", "resp_1").await.unwrap();
    let again = harness.workspaces.get("proj_a", "resp_1").await.unwrap();
    let b = harness.workspaces.get("proj_b", "resp_1").await.unwrap();
    let c = harness.workspaces.get("proj_a", "resp_2").await.unwrap();
    assert!(Arc::ptr_eq(&a, &again));
    assert_eq!(a.id, again.id);
    assert!(a.id.starts_with("ctr_"));
    assert_ne!(a.id, b.id);
    assert_ne!(a.id, c.id);
    assert_ne!(a.root, b.root);
    assert_ne!(a.root, c.root);
    assert!(a.root.starts_with(harness.workspaces.root()));

    // Hostile ids stay single directory names under the root.
    let odd = harness.workspaces.get("../..", "a/b").await.unwrap();
    let relative = odd.root.strip_prefix(harness.workspaces.root()).unwrap();
    assert_eq!(relative.components().count(), 2);
    assert!(odd.root.is_dir());
    let dots = harness.workspaces.get("..", "..").await.unwrap();
    assert_ne!(dots.root, odd.root);
    assert!(dots.root.starts_with(harness.workspaces.root()));
}

#[tokio::test]
async fn expire_idle_removes_idle_workspaces_only() {
    let dir = TempDir::new();
    let workspaces = Workspaces::new(dir.0.clone(), Duration::from_millis(200));
    let idle = workspaces.get("p", "idle").await.unwrap();
    std::fs::write(idle.root.join("f.txt"), "x").unwrap();
    let idle_root = idle.root.clone();
    let idle_id = idle.id.clone();
    drop(idle);
    let held = workspaces.get("p", "held").await.unwrap();

    assert_eq!(workspaces.expire_idle().await, 0, "nothing is idle yet");
    tokio::time::sleep(Duration::from_millis(400)).await;
    let busy = workspaces.get("p", "busy").await.unwrap();
    drop(busy);

    // `idle` is removed; `held` is still in use; `busy` was just used.
    assert_eq!(workspaces.expire_idle().await, 1);
    assert!(!idle_root.exists());
    assert!(held.root.is_dir());
    assert!(workspaces.get("p", "busy").await.unwrap().root.is_dir());

    // The conversation gets a fresh, empty workspace with the same id.
    let again = workspaces.get("p", "idle").await.unwrap();
    assert_eq!(again.id, idle_id);
    assert_eq!(again.root, idle_root);
    assert_eq!(std::fs::read_dir(&again.root).unwrap().count(), 0);
    let leftovers: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(leftovers, ["p"], "no trash is left behind");
}

#[tokio::test]
async fn expire_idle_removes_directories_an_earlier_process_left() {
    let dir = TempDir::new();
    let earlier = Workspaces::new(dir.0.clone(), Duration::from_millis(200));
    let root = earlier.get("p", "old").await.unwrap().root.clone();
    drop(earlier);

    let workspaces = Workspaces::new(dir.0.clone(), Duration::from_millis(200));
    assert_eq!(workspaces.expire_idle().await, 0, "too recent");
    assert!(root.is_dir());
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(workspaces.expire_idle().await, 1);
    assert!(!root.exists());
}

/// Issue 13: code in the sandbox (here a thread standing in for it) swaps a directory of
/// the workspace for a link to a host directory and back, as fast as it can, while the file
/// tools work on paths through it. A tool that checked the path and then opened it would
/// now and then follow the swapped-in link; resolving and opening relative to the
/// workspace's handle never does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_swapped_for_a_link_during_a_call_never_leads_outside() {
    let harness = Harness::new();
    let outside = harness.outside();
    std::fs::write(outside.join("inside.txt"), "SECRET\n").unwrap();
    harness.put("d/inside.txt", "inside\n").await;
    let root = harness.workspace().await.root.clone();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let (root, outside) = (root.clone(), outside.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            // A tool may create `d` while it is away (write makes missing directories):
            // such a directory is thrown away, never the real one.
            let (d, real) = (root.join("d"), root.join("d.real"));
            while !stop.load(Ordering::Relaxed) {
                if std::fs::rename(&d, &real).is_err() {
                    continue;
                }
                if std::os::unix::fs::symlink(&outside, &d).is_ok() {
                    std::thread::yield_now();
                    swaps += 1;
                }
                // Put the real directory back (a tool may recreate `d` meanwhile: retry).
                loop {
                    match std::fs::symlink_metadata(&d) {
                        Ok(meta) if meta.is_symlink() => {
                            let _ = std::fs::remove_file(&d);
                        }
                        Ok(_) => {
                            let _ = std::fs::remove_dir_all(&d);
                        }
                        Err(_) => {}
                    }
                    if std::fs::rename(&real, &d).is_ok() {
                        break;
                    }
                }
            }
            swaps
        })
    };
    for round in 0..400 {
        let outcome = harness.call("read", json!({"path": "d/inside.txt"})).await;
        assert!(
            !outcome.model_text.contains("SECRET"),
            "round {round}: read outside"
        );
        harness
            .call("write", json!({"path": "d/new.txt", "content": "x"}))
            .await;
        harness
            .call(
                "edit",
                json!({"path": "d/inside.txt", "old_string": "SECRET", "new_string": "stolen"}),
            )
            .await;
        let outcome = harness.call("grep", json!({"pattern": "SECRET"})).await;
        assert_eq!(
            grep_item(&outcome).count,
            Some(0),
            "round {round}: grep outside"
        );
        harness
            .call(
                "apply_patch",
                json!({"patch": "*** Begin Patch\n*** Add File: d/added.txt\n+x\n*** End Patch"}),
            )
            .await;
        let outcome = harness
            .call("share_file", json!({"path": "d/inside.txt"}))
            .await;
        assert!(!outcome.model_text.contains("SECRET"));
        let _ = std::fs::remove_file(root.join("d.real/added.txt"));
        let _ = std::fs::remove_file(root.join("d/added.txt"));
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 0);
    let mut names: Vec<String> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["inside.txt"], "nothing was written outside");
    assert_eq!(
        std::fs::read_to_string(outside.join("inside.txt")).unwrap(),
        "SECRET\n"
    );
    assert!(
        harness
            .shared()
            .iter()
            .all(|file| !String::from_utf8_lossy(&file.bytes).contains("SECRET")),
        "nothing outside was shared"
    );
}
