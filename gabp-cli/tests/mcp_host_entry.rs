//! `gabp mcp --print-config`: the entry an MCP host needs, with absolute paths, and an entry that works when a
//! host starts it as written (no shell, no PATH lookup).
#![cfg(unix)]

mod mcp_support;

use std::path::Path;
use std::process::Command;

use mcp_support::{write_config, STEP};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::Value;

fn print_config(args: &[&str], cwd: &Path, home: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_gabp"))
        .args(["mcp", "--print-config"])
        .args(args)
        .current_dir(cwd)
        .env("HOME", home)
        .output()
        .expect("run gabp");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the entry is JSON")
}

#[test]
fn the_entry_names_this_binary_and_the_config_dir_by_absolute_paths() {
    let home = tempfile::tempdir().expect("temp dir");
    let entry = print_config(&["--config-dir", "games"], home.path(), home.path());
    let server = &entry["mcpServers"]["gabp"];
    let binary = std::fs::canonicalize(env!("CARGO_BIN_EXE_gabp")).expect("binary path");
    assert_eq!(server["command"], binary.to_string_lossy().as_ref());
    let dir = home.path().join("games");
    assert_eq!(
        server["args"],
        serde_json::json!(["mcp", "--config-dir", dir.to_string_lossy()])
    );

    let entry = print_config(&["--mirror-tools"], home.path(), home.path());
    let args = &entry["mcpServers"]["gabp"]["args"];
    assert_eq!(
        args[2],
        home.path().join(".gabs").to_string_lossy().as_ref()
    );
    assert_eq!(args[3], "--mirror-tools");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_starts_the_entry_as_written_gets_an_mcp_server() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_config(dir.path(), &["voxel"]);
    let config_dir = dir.path().to_string_lossy().into_owned();
    let entry = print_config(&["--config-dir", &config_dir], dir.path(), dir.path());
    let server = &entry["mcpServers"]["gabp"];
    let mut command = tokio::process::Command::new(server["command"].as_str().expect("command"));
    for arg in server["args"].as_array().expect("args") {
        command.arg(arg.as_str().expect("an argument is a string"));
    }
    // A host's environment: no PATH to find anything by, no working directory of ours.
    command.env_clear().env("HOME", dir.path()).current_dir("/");
    let transport = TokioChildProcess::new(command).expect("start the entry");
    let client = tokio::time::timeout(STEP, ().serve(transport))
        .await
        .expect("initialize in time")
        .expect("initialize");
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "games_list"), "{tools:?}");
    client.cancel().await.expect("close");
}
