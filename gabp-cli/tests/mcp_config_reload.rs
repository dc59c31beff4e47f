#![allow(clippy::unwrap_used)]
//! `gabp mcp` with an invalid config.json keeps serving and says what is wrong; the file is read again when it
//! changes; game tool calls take their time limit from `timeouts.toolCallSeconds` or the call's `_meta`.
#![cfg(unix)]

mod mcp_support;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use mcp_support::{eventually, text, Mcp, STEP};
use rmcp::model::{CallToolRequestParams, RequestMetaObject};
use serde_json::{json, Value};

/// How soon a change of config.json takes effect.
const RELOAD_WITHIN: Duration = Duration::from_secs(2);

fn read_config(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap()
}

fn write(dir: &Path, config: &Value) {
    // Written whole and renamed into place, as editors do, so a poll never sees half a file.
    let tmp = dir.join("config.json.tmp");
    std::fs::write(&tmp, config.to_string()).unwrap();
    std::fs::rename(tmp, dir.join("config.json")).unwrap();
}

fn broken(valid: &Value) -> Value {
    let mut config = valid.clone();
    config["games"]["voxel"]["launchMode"] = json!("Steam");
    config
}

/// Calls `games_list` until `check` holds on its result, for up to `limit`.
async fn games_list_until(mcp: &Mcp, limit: Duration, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let result = mcp.call("games_list", json!({})).await;
        let mut seen = result.structured_content.clone().unwrap_or(Value::Null);
        seen["_isError"] = json!(result.is_error == Some(true));
        seen["_text"] = json!(text(&result));
        if check(&seen) || Instant::now() >= deadline {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_config_is_reported_by_the_tools_and_a_fixed_one_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    mcp_support::write_config(dir.path(), &["voxel"]);
    let valid = read_config(dir.path());
    write(dir.path(), &broken(&valid));
    let file = dir.path().join("config.json");
    let mcp = Mcp::start_in(dir, &["--mirror-tools"]).await;

    // The server runs; every tool that needs the games says what is wrong, naming the file and the field.
    for (tool, args) in [
        ("games_list", json!({})),
        ("games_status", json!({})),
        ("games_start", json!({"gameId": "voxel"})),
        ("games_call_tool", json!({"tool": "voxel_demo_echo"})),
        ("voxel_demo_echo", json!({"value": 1})),
    ] {
        let (message, e) = mcp.err(tool, args).await;
        assert_eq!(e["code"], "config_invalid", "{tool}: {message}");
        assert_eq!(e["field"], "/games/voxel/launchMode", "{tool}: {e}");
        assert!(
            message.starts_with(&format!("config_invalid: {}: ", file.display())),
            "{tool}: {message}"
        );
        assert!(
            message.contains("field /games/voxel/launchMode: expected one of DirectPath"),
            "{tool}: {message}"
        );
    }

    // Fixed: within 2 s the games are there.
    write(&mcp.config_dir(), &valid);
    let fixed = Instant::now();
    let listed = games_list_until(&mcp, STEP, |l| l["_isError"] == false).await;
    assert!(
        fixed.elapsed() <= RELOAD_WITHIN,
        "read again after {:?}",
        fixed.elapsed()
    );
    assert_eq!(listed["games"][0]["gameId"], "voxel", "{listed}");
    assert!(listed.get("configProblem").is_none(), "{listed}");
    mcp.ok("games_start", json!({"gameId": "voxel"})).await;
    mcp.ok("voxel_demo_echo", json!({"value": 1})).await;

    // Broken again: the last valid configuration stays, games_list says what is wrong, the game runs on.
    write(&mcp.config_dir(), &broken(&valid));
    let listed = games_list_until(&mcp, STEP, |l| l.get("configProblem").is_some()).await;
    assert_eq!(listed["_isError"], false, "{listed}");
    assert_eq!(listed["games"][0]["gameId"], "voxel", "{listed}");
    assert_eq!(listed["games"][0]["status"], "connected", "{listed}");
    assert_eq!(
        listed["configProblem"]["field"], "/games/voxel/launchMode",
        "{listed}"
    );
    assert!(
        listed["_text"]
            .as_str()
            .unwrap()
            .starts_with("Warning: config_invalid: "),
        "{listed}"
    );
    mcp.ok("voxel_demo_echo", json!({"value": 1})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_keeps_a_running_game_adds_games_and_tells_of_a_changed_tool_list() {
    let mcp = Mcp::start(&["voxel"], &["--mirror-tools"]).await;
    mcp.ok("games_start", json!({"gameId": "voxel"})).await;
    let pid = mcp.ok("games_status", json!({"gameId": "voxel"})).await["pid"].clone();
    let tools = mcp.client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "voxel_demo_echo"));
    let changes_before = mcp.heard.tool_list_changed.load(Ordering::SeqCst);

    // Another game, and the running one's mirrored tools limited.
    let mut config = read_config(&mcp.config_dir());
    config["games"]["extra"] = config["games"]["voxel"].clone();
    config["games"]["extra"]["id"] = json!("extra");
    config["games"]["voxel"]["mirrorTools"] = json!(["world/*"]);
    write(&mcp.config_dir(), &config);

    let listed = games_list_until(&mcp, STEP, |l| l["count"] == 2).await;
    assert_eq!(listed["count"], 2, "{listed}");
    assert!(
        eventually(STEP, || {
            mcp.heard.tool_list_changed.load(Ordering::SeqCst) > changes_before
        })
        .await,
        "no tools/list_changed after the reload"
    );
    let tools = mcp.client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"voxel_world_get_block"), "{names:?}");
    assert!(!names.contains(&"voxel_demo_echo"), "{names:?}");

    // The running game was not disturbed.
    let status = mcp.ok("games_status", json!({"gameId": "voxel"})).await;
    assert_eq!(status["status"], "connected", "{status}");
    assert_eq!(status["pid"], pid, "{status}");
    mcp.ok("voxel_demo_echo", json!({"value": 1})).await;
    let extra = mcp.ok("games_status", json!({"gameId": "extra"})).await;
    assert_eq!(extra["status"], "stopped", "{extra}");
}

fn with_timeout_meta(name: &str, args: Value, seconds: Value) -> CallToolRequestParams {
    let mut meta = RequestMetaObject::new();
    meta.insert("gabp/timeoutSeconds".to_owned(), seconds);
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let mut params = CallToolRequestParams::new(name.to_owned()).with_arguments(args);
    params.meta = Some(meta);
    params
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_tool_call_takes_its_time_limit_from_meta_or_the_config() {
    let dir = tempfile::tempdir().unwrap();
    mcp_support::write_config(dir.path(), &["voxel"]);
    let mut config = read_config(dir.path());
    config["timeouts"]["toolCallSeconds"] = json!(1.5);
    write(dir.path(), &config);
    let mcp = Mcp::start_in(dir, &[]).await;
    mcp.ok("games_start", json!({"gameId": "voxel"})).await;
    let sleep = json!({"ms": 20000});

    // Without _meta: timeouts.toolCallSeconds.
    let asked = Instant::now();
    let (message, e) = mcp.err("voxel_demo_sleep", sleep.clone()).await;
    assert_eq!(e["code"], "timeout", "{message}");
    assert!(message.contains("within 1.5 s"), "{message}");
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "{:?}",
        asked.elapsed()
    );

    // With _meta, on a mirrored tool and through games_call_tool.
    for (name, args) in [
        ("voxel_demo_sleep", sleep.clone()),
        (
            "games_call_tool",
            json!({"gameId": "voxel", "tool": "demo/sleep", "arguments": sleep}),
        ),
    ] {
        let asked = Instant::now();
        let result = tokio::time::timeout(
            STEP,
            mcp.client
                .call_tool(with_timeout_meta(name, args, json!(0.5))),
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(result.is_error, Some(true), "{name}");
        let message = text(&result);
        assert_eq!(
            result.structured_content.unwrap()["code"],
            "timeout",
            "{name}: {message}"
        );
        assert!(message.contains("within 0.5 s"), "{name}: {message}");
        assert!(
            asked.elapsed() < Duration::from_secs(10),
            "{:?}",
            asked.elapsed()
        );
    }

    // A short call within the limit answers.
    let done = tokio::time::timeout(
        STEP,
        mcp.client.call_tool(with_timeout_meta(
            "voxel_demo_sleep",
            json!({"ms": 10}),
            json!(30),
        )),
    )
    .await
    .unwrap()
    .unwrap();
    assert_ne!(done.is_error, Some(true), "{}", text(&done));

    // A bad value is an invalid-params error naming the member.
    for bad in [json!(0), json!(-1), json!(3601), json!("5")] {
        let error = tokio::time::timeout(
            STEP,
            mcp.client.call_tool(with_timeout_meta(
                "voxel_demo_sleep",
                json!({"ms": 10}),
                bad.clone(),
            )),
        )
        .await
        .unwrap()
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("_meta/gabp/timeoutSeconds") && error.contains("-32602"),
            "{bad}: {error}"
        );
    }
}
