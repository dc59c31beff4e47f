//! The C# bindings (`bindings/csharp/Gabp.cs`) on Mono, Unity's runtime: `tests/csharp/BindingsMod.cs` is
//! compiled with `mcs`, run with `mono` against the library, and driven by a Rust bridge and by
//! `tests/csharp/BridgeHarness.cs`, a harness through the bindings' bridge side. Skipped, with a message,
//! without Mono (Debian's `mono-mcs` and `mono-runtime`; `.ci/run` installs them).
#![cfg(unix)]
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use futures::StreamExt;
use gabp_session::bridge::SubscriptionItem;
use gabp_session::Bridge;
use gabp_transport::{Endpoint, Token};
use gabp_types::methods::{AttentionCurrent, AttentionCurrentParams};
use serde_json::json;
use support::{free_port, have, library_dir, TOKEN};

/// Kills the mod when the test ends, however it ends.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Compiles `tests/csharp/NAME.cs` with the bindings, as mcs 6.8 (C# 7.2) takes them, to `dir/NAME.exe`.
fn compile(dir: &Path, name: &str) -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = dir.join(format!("{name}.exe"));
    let compiled = Command::new("mcs")
        .args(["-langversion:7.2", "-warnaserror+"])
        .arg(format!("-out:{}", exe.display()))
        .arg(crate_dir.join("bindings/csharp/Gabp.cs"))
        .arg(crate_dir.join(format!("tests/csharp/{name}.cs")))
        .output()
        .unwrap();
    assert!(
        compiled.status.success(),
        "mcs {name}: {}{}",
        String::from_utf8_lossy(&compiled.stdout),
        String::from_utf8_lossy(&compiled.stderr)
    );
    exe
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_csharp_mod_on_mono_serves_every_kind_of_tool() {
    if !have("mcs") || !have("mono") {
        eprintln!("SKIPPED: no Mono (mcs and mono, Debian's mono-mcs and mono-runtime); .ci/run installs them");
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let exe = compile(out.path(), "BindingsMod");
    let harness = compile(out.path(), "BridgeHarness");

    let port = free_port();
    let token = TOKEN;
    let mut child = Command::new("mono")
        .arg(&exe)
        .env("LD_LIBRARY_PATH", library_dir())
        .env("HOME", out.path())
        .env("GABP_SERVER_PORT", port.to_string())
        .env("GABP_TOKEN", token)
        .env_remove("GABS_GAME_ID")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut running = Running(child);
    let first = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).map(|_| line)
    });
    let first = tokio::time::timeout(Duration::from_secs(60), first)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first.trim(), format!("listening on tcp://127.0.0.1:{port}"));

    let bridge = Bridge::connect(&Endpoint::tcp_v4(port), Token::new(token).unwrap())
        .await
        .unwrap();
    let echoed = bridge
        .call_tool("demo/echo", json!({"value": ["ü", 1.5]}))
        .await
        .unwrap();
    assert_eq!(echoed, json!({"value": ["ü", 1.5]}));
    let refused = bridge.call_tool("demo/echo", json!({})).await.unwrap_err();
    assert!(refused.to_string().contains("value"), "{refused}");

    let mut events = bridge.subscribe(["world/ticked"]).await.unwrap();
    let tick = bridge.call_tool("world/tick", json!({})).await.unwrap();
    assert_eq!(tick, json!({"ticks": 1, "thread": "game"}));
    let Some(Ok(SubscriptionItem::Event(event))) = events.next().await else {
        panic!("no event")
    };
    assert_eq!(event.payload, json!({"tick": 1}));

    let later = bridge
        .call_tool("demo/later", json!({"n": 21}))
        .await
        .unwrap();
    assert_eq!(later, json!({"doubled": 42}));
    let thrown = bridge.call_tool("demo/throw", json!({})).await.unwrap_err();
    assert!(
        thrown
            .to_string()
            .contains("InvalidOperationException: the chunk is not loaded"),
        "{thrown}"
    );
    let coded = bridge.call_tool("demo/code", json!({})).await.unwrap_err();
    assert_eq!(coded.code().map(|c| c.0), Some(-32010), "{coded}");

    let raised = bridge
        .call_tool("demo/raise_error", json!({}))
        .await
        .unwrap();
    let current = bridge
        .call::<AttentionCurrent>(&AttentionCurrentParams::default())
        .await
        .unwrap();
    let item = current.attention.expect("an open item");
    assert_eq!(raised["attentionId"], item.attention_id.as_str());
    assert!(item.blocking && item.summary.as_str().contains("the save file is corrupt"));
    bridge.call_tool("demo/resolve", json!({})).await.unwrap();
    let current = bridge
        .call::<AttentionCurrent>(&AttentionCurrentParams::default())
        .await
        .unwrap();
    assert!(current.attention.is_none());

    // Resources: text, binary (base64), and a reader's exception as the read's error.
    let world = bridge.read_resource("gabp://game/world").await.unwrap();
    assert_eq!(world.content, json!(r#"{"name":"Ödland","size":16}"#));
    let icon =
        serde_json::to_value(bridge.read_resource("gabp://mod/icon").await.unwrap()).unwrap();
    assert_eq!(icon["encoding"], "base64");
    assert_eq!(icon["content"], "iVBORwD/");
    let save = bridge.read_resource("gabp://game/save").await.unwrap_err();
    assert!(save.to_string().contains("no save loaded"), "{save}");

    // A test harness in C# drives the C# mod through the bindings' bridge side.
    let endpoint = format!("tcp://127.0.0.1:{port}");
    let ran = tokio::task::spawn_blocking(move || {
        Command::new("mono")
            .arg(&harness)
            .args([endpoint.as_str(), token])
            .env("LD_LIBRARY_PATH", library_dir())
            .output()
    })
    .await
    .unwrap()
    .unwrap();
    let said = String::from_utf8_lossy(&ran.stdout);
    assert!(
        ran.status.success() && said.contains("harness: all checks passed"),
        "BridgeHarness: {said}{}",
        String::from_utf8_lossy(&ran.stderr)
    );

    // The end of its stdin stops it cleanly.
    drop(running.0.stdin.take());
    let status = tokio::task::spawn_blocking(move || running.0.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status}");
}
