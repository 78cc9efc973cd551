//! The administration commands against the store directly: projects, keys with roles,
//! connectors (add, list, show, test, rotate, rm) against a real token-protected MCP server,
//! `agentd secrets rotate` moving every sealed value to a new key, and a connector refused
//! without a secret key on a non-loopback address.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use testkit::mcp::{McpFixture, Transport};

const TOKEN: &str = "cli-connector-token-93af";
const OLD_KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
const NEW_KEY: &str = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=";

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn agentd(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"));
    command
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .env_remove("AGENTD_SECRET_KEY")
        .env_remove("AGENTD_SECRET_KEY_FILE")
        .env_remove("AGENTD_SECRET_KEYS_OLD")
        .env_remove("AGENTD_LISTEN")
        .env("AGENTD_ALLOW_PRIVATE_NETWORKS", "127.0.0.0/8");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("agentd runs")
}

fn ok(output: &Output) -> String {
    assert!(
        output.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn json(output: &Output) -> Value {
    serde_json::from_str(&ok(output)).unwrap()
}

#[tokio::test]
async fn projects_keys_connectors_and_secret_rotation_from_the_command_line() {
    let dir = Dir(std::env::temp_dir().join(format!("agentd-cli-admin-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    let fixture = McpFixture::start_with_token("auth", Transport::StreamableHttp, TOKEN).await;
    let old = [("AGENTD_SECRET_KEY", OLD_KEY), ("CONNECTOR_TOKEN", TOKEN)];

    let created = json(&agentd(&dir.0, &old, &["projects", "create", "alpha"]));
    assert_eq!(created["name"], "alpha");
    let key = ok(&agentd(
        &dir.0,
        &old,
        &[
            "keys",
            "create",
            "--project",
            "alpha",
            "--role",
            "member",
            "--name",
            "ci",
        ],
    ));
    let key = key.lines().last().unwrap();
    assert!(key.starts_with("agd_"));
    let keys = json(&agentd(
        &dir.0,
        &old,
        &["keys", "list", "--project", "alpha"],
    ));
    assert_eq!(keys["data"][0]["role"], "member");
    assert_eq!(keys["data"][0]["name"], "ci");
    assert!(!keys.to_string().contains(key));

    let added = agentd(
        &dir.0,
        &old,
        &[
            "connectors",
            "add",
            "--project",
            "alpha",
            "--id",
            "connector_cli",
            "--label",
            "docs",
            "--url",
            &fixture.url,
            "--authorization-env",
            "CONNECTOR_TOKEN",
        ],
    );
    let added_text = ok(&added);
    assert!(!added_text.contains(TOKEN));
    let list = json(&agentd(
        &dir.0,
        &old,
        &["connectors", "list", "--project", "alpha"],
    ));
    assert_eq!(list["data"][0]["id"], "connector_cli");
    assert_eq!(list["data"][0]["authorization"]["set"], true);
    let test = json(&agentd(
        &dir.0,
        &old,
        &["connectors", "test", "connector_cli", "--project", "alpha"],
    ));
    assert_eq!(test["ok"], true, "{test}");

    // A new key: the old one only opens; after `secrets rotate` the new key alone suffices.
    let both = [
        ("AGENTD_SECRET_KEY", NEW_KEY),
        ("AGENTD_SECRET_KEYS_OLD", OLD_KEY),
    ];
    let rotated = ok(&agentd(&dir.0, &both, &["secrets", "rotate"]));
    assert!(rotated.contains("sealed 1 stored values"), "{rotated}");
    let only_new = [("AGENTD_SECRET_KEY", NEW_KEY)];
    let test = json(&agentd(
        &dir.0,
        &only_new,
        &["connectors", "test", "connector_cli", "--project", "alpha"],
    ));
    assert_eq!(test["ok"], true, "{test}");
    let only_old = agentd(
        &dir.0,
        &[("AGENTD_SECRET_KEY", OLD_KEY)],
        &["connectors", "test", "connector_cli", "--project", "alpha"],
    );
    assert!(!only_old.status.success());

    let shown = json(&agentd(
        &dir.0,
        &only_new,
        &["connectors", "show", "connector_cli", "--project", "alpha"],
    ));
    assert_eq!(shown["status"], "ok");
    ok(&agentd(
        &dir.0,
        &only_new,
        &["connectors", "rm", "connector_cli", "--project", "alpha"],
    ));
    let list = json(&agentd(
        &dir.0,
        &only_new,
        &["connectors", "list", "--project", "alpha"],
    ));
    assert_eq!(list["data"], serde_json::json!([]));

    // No secret key on a non-loopback address: refused, saying what to set.
    let refused = agentd(
        &dir.0,
        &[
            ("AGENTD_LISTEN", "0.0.0.0:8080"),
            ("CONNECTOR_TOKEN", TOKEN),
        ],
        &[
            "connectors",
            "add",
            "--project",
            "alpha",
            "--label",
            "x",
            "--url",
            &fixture.url,
            "--authorization-env",
            "CONNECTOR_TOKEN",
        ],
    );
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("AGENTD_SECRET_KEY"), "{stderr}");
    assert!(!stderr.contains(TOKEN));

    // Deleting the project takes its keys with it.
    ok(&agentd(&dir.0, &only_new, &["projects", "rm", "alpha"]));
    let projects = json(&agentd(&dir.0, &only_new, &["projects", "list"]));
    assert!(!projects.to_string().contains("alpha"));
}
