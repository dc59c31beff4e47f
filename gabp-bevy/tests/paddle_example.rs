//! The paddle example, run as a process the way a launcher runs it (the GABS environment, its own process
//! group) and driven over TCP: pause, place the ball, step 10 ticks and read its `Transform` (exactly 10
//! units on), tap a key and see the paddle move, hear a bounce, and stop at the end of its stdin.
#![cfg(unix)]
#![allow(clippy::unwrap_used)]

mod support;

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use gabp_session::bridge::SubscriptionItem;
use gabp_session::Bridge;
use gabp_transport::{Endpoint, Token};
use serde_json::json;
use support::{built, TOKEN};

const TRANSFORM: &str = "bevy_transform::components::transform::Transform";

/// Kills the game however the test ends.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The x of the `Transform` of the entity that has component `marker` (a type path suffix).
async fn x_of(bridge: &Bridge, marker: &str) -> f64 {
    let found = bridge
        .call_tool(
            "ecs/query",
            json!({"components": [TRANSFORM], "with": [format!("paddle::{marker}")]}),
        )
        .await
        .unwrap();
    let entities = found["entities"].as_array().unwrap();
    assert_eq!(entities.len(), 1, "{found}");
    let translation = &entities[0]["components"][TRANSFORM]["translation"];
    // A Vec3 is written as [x, y, z] (or {x, y, z} without bevy_math's serde support).
    translation[0]
        .as_f64()
        .or_else(|| translation["x"].as_f64())
        .unwrap_or_else(|| panic!("{found}"))
}

#[tokio::test]
async fn the_paddle_game_is_paused_stepped_played_and_heard() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let home = tempfile::tempdir().unwrap();
    let binary = built("gabp-bevy", "--example", "paddle");
    let child = Command::new(&binary)
        .env("GABP_SERVER_PORT", port.to_string())
        .env("GABP_TOKEN", TOKEN)
        .env_remove("GABS_GAME_ID")
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
    let mut game = Running(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    let bridge = loop {
        match Bridge::connect(&Endpoint::tcp_v4(port), Token::new(TOKEN).unwrap()).await {
            Ok(bridge) => break bridge,
            Err(e) if Instant::now() > deadline => panic!("the game did not serve: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };

    bridge.request("time/pause", json!({})).await.unwrap();
    let ball = bridge
        .call_tool("ecs/query", json!({"components": ["paddle::Ball"]}))
        .await
        .unwrap()["entities"][0]["entity"]
        .clone();
    bridge
        .call_tool(
            "ecs/mutate",
            json!({"entity": ball, "component": TRANSFORM, "path": ".translation.x", "value": 0.0}),
        )
        .await
        .unwrap();
    bridge
        .call_tool(
            "ecs/mutate",
            json!({"entity": ball, "component": "paddle::Ball", "path": ".velocity", "value": 1.0}),
        )
        .await
        .unwrap();
    let from = x_of(&bridge, "Ball").await;
    assert_eq!(from, 0.0);
    bridge
        .request("time/step", json!({"ticks": 10}))
        .await
        .unwrap();
    assert_eq!(x_of(&bridge, "Ball").await, 10.0, "exactly 10 ticks' worth");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(x_of(&bridge, "Ball").await, 10.0, "paused, it stays");

    // A keystroke moves the paddle one unit, paused or not (input is not paused with time).
    let paddle = x_of(&bridge, "Paddle").await;
    bridge
        .request("input/key", json!({"key": "ArrowRight", "action": "tap"}))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(x_of(&bridge, "Paddle").await, paddle + 1.0);

    // Ten more ticks reach the wall at 20: a bounce.
    let mut bounces = bridge.subscribe(["ball/bounced"]).await.unwrap();
    bridge
        .request("time/step", json!({"ticks": 10}))
        .await
        .unwrap();
    let item = tokio::time::timeout(Duration::from_secs(5), bounces.next())
        .await
        .unwrap();
    let Some(Ok(SubscriptionItem::Event(event))) = item else {
        panic!("no bounce: {item:?}")
    };
    assert_eq!(event.payload, json!({"x": 20.0}));
    assert_eq!(x_of(&bridge, "Ball").await, 20.0);

    bridge.close().await;
    drop(game.0.stdin.take());
    let status = tokio::task::spawn_blocking(move || game.0.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status}");
}
