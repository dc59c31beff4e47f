//! `gabp mcp`'s `games_time` and `games_input` against the demo game (`gabp mod`): an agent pauses the game,
//! steps it exact ticks and walks its player with keys (SPEC/1.0 extensions.md §time-control, §input); while a
//! blocking attention item is open, steps and keys are refused and pausing is not.
#![cfg(unix)]
#![allow(clippy::unwrap_used)]

mod mcp_support;

use std::time::{Duration, Instant};

use mcp_support::Mcp;
use serde_json::{json, Value};

/// The `player/move` events read so far, waiting up to 5 s for `count` of them.
async fn moves(mcp: &Mcp, count: usize) -> Vec<Value> {
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while got.len() < count && Instant::now() < deadline {
        let batch = mcp.ok("games_events", json!({"waitMs": 1000})).await;
        got = batch["events"].as_array().unwrap().clone();
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_pauses_steps_and_walks_the_player_through_the_hub() {
    let mcp = Mcp::start(&["voxel"], &[]).await;
    mcp.ok("games_start", json!({"gameId": "voxel"})).await;

    let paused = mcp.ok("games_time", json!({"action": "pause"})).await;
    assert_eq!(paused["paused"], true, "{paused}");
    let tick = paused["tick"].as_u64().unwrap();
    let stepped = mcp
        .ok("games_time", json!({"action": "step", "ticks": 3}))
        .await;
    assert_eq!(
        stepped,
        json!({"gameId": "voxel", "paused": true, "tick": tick + 3})
    );
    // The sheep walked exactly those ticks, and stand still while paused.
    let world = mcp
        .ok("games_call_tool", json!({"tool": "voxel_world_entities"}))
        .await;
    assert_eq!(world["tick"], tick + 3);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let status = mcp.ok("games_time", json!({"action": "status"})).await;
    assert_eq!(status["tick"], tick + 3);

    mcp.ok("games_subscribe", json!({"channels": ["player/move"]}))
        .await;
    mcp.ok("games_input", json!({"key": "ArrowLeft"})).await;
    mcp.ok(
        "games_input",
        json!({"key": "ArrowRight", "action": "press"}),
    )
    .await;
    let walked = moves(&mcp, 2).await;
    assert_eq!(walked.len(), 2, "{walked:?}");
    let x = |e: &Value| e["payload"]["position"]["x"].as_f64().unwrap();
    assert_eq!(x(&walked[1]), x(&walked[0]) + 1.0, "{walked:?}");

    // Arguments are checked before anything reaches the game.
    for (args, path) in [
        (json!({"action": "step"}), "/ticks"),
        (json!({"action": "jump"}), "/action"),
        (json!({"action": "pause", "ticks": 2}), "/ticks"),
    ] {
        let (message, error) = mcp.err("games_time", args).await;
        assert_eq!(error["path"], path, "{message}");
    }
    let (message, error) = mcp
        .err("games_input", json!({"key": "KeyA", "text": "a"}))
        .await;
    assert_eq!(error["code"], "invalid_argument", "{message}");
    let (message, _) = mcp.err("games_input", json!({"key": "NoSuchKey"})).await;
    assert!(message.contains("-32602"), "{message}");

    // A blocking attention item stops steps and keys without their reaching the game; pausing still works.
    mcp.ok(
        "games_call_tool",
        json!({"tool": "voxel_demo_raise_error", "arguments": {"message": "the autosave failed"}}),
    )
    .await;
    let (message, blocked) = mcp
        .err("games_time", json!({"action": "step", "ticks": 1}))
        .await;
    assert_eq!(blocked["code"], "blocked_by_attention", "{message}");
    let (message, blocked) = mcp.err("games_input", json!({"key": "ArrowLeft"})).await;
    assert_eq!(blocked["code"], "blocked_by_attention", "{message}");
    let still = mcp.ok("games_time", json!({"action": "pause"})).await;
    assert_eq!(still["tick"], tick + 3, "the refused step did not run");
    assert_eq!(
        moves(&mcp, 3).await.len(),
        2,
        "the refused key did not walk"
    );
}
