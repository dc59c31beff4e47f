//! Attention end to end over TCP with `gabp mod` (the demo game in its own process) and our bridge with the
//! attention gate: raise an error, see `attention/opened`, see a game-bound call refused by the gate without
//! reaching the mod (its tool counter does not move), acknowledge, see `attention/cleared`, call again.
#![allow(clippy::unwrap_used)]

use std::process::Stdio;
use std::time::Duration;

use futures::StreamExt;
use gabp_attention::{AttentionGate, BlockedByAttention};
use gabp_session::bridge::{Bridge, Subscription, SubscriptionItem};
use gabp_session::Error;
use gabp_transport::{Endpoint, Token};
use gabp_types::{AttentionState, Event};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

const TOKEN: &str = "61747465-6e74-696f-6e2d-6532652d746f6b656e2d666f722d7465737473";
const PATIENCE: Duration = Duration::from_secs(60);

/// `gabp mod` on an ephemeral loopback port, killed when dropped; its configuration lives in a temporary home.
struct GameProcess {
    child: tokio::process::Child,
    endpoint: Endpoint,
    _home: tempfile::TempDir,
}

async fn start_game() -> GameProcess {
    let home = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_gabp"))
        .args(["mod", "--listen", "tcp://127.0.0.1:0", "--token", TOKEN])
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path())
        .env_remove("GABP_SERVER_PORT")
        .env_remove("GABP_TOKEN")
        .env_remove("GABS_GAME_ID")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(PATIENCE, lines.next_line())
        .await
        .expect("gabp mod printed no line in time")
        .unwrap()
        .expect("gabp mod closed its stdout");
    let endpoint = line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("first line: {line:?}"))
        .parse()
        .unwrap();
    GameProcess {
        child,
        endpoint,
        _home: home,
    }
}

fn token() -> Token {
    Token::new(TOKEN).unwrap()
}

/// How many tool calls the game executed (`demo/status` is tagged `status`: it answers while attention
/// blocks, and does not count itself).
async fn tool_calls(bridge: &Bridge) -> u64 {
    bridge.call_tool("demo/status", json!({})).await.unwrap()["toolCalls"]
        .as_u64()
        .unwrap()
}

async fn next_on(subscription: &mut Subscription, channel: &str) -> Event {
    loop {
        let item = tokio::time::timeout(PATIENCE, subscription.next())
            .await
            .expect("no attention event in time")
            .expect("the subscription ended")
            .unwrap();
        if let SubscriptionItem::Event(event) = item {
            if event.channel.as_str() == channel {
                return event;
            }
        }
    }
}

#[tokio::test]
async fn raise_block_ack_and_call_again_over_tcp() {
    let mut game = start_game().await;

    // A bridge with the attention gate on its call path.
    let builder = Bridge::builder(token()).request_timeout(PATIENCE);
    let gate = AttentionGate::new(&builder.service());
    let bridge = builder
        .layer(gate.layer())
        .connect(&game.endpoint)
        .await
        .unwrap();
    gate.sync().await;
    assert_eq!(
        gate.is_supported(),
        Some(true),
        "the demo game serves attention"
    );
    assert!(gate.current().is_none());
    let mut attention = bridge
        .subscribe(["attention/opened", "attention/cleared"])
        .await
        .unwrap();

    let place = json!({"x": 3, "y": 5, "z": 3, "blockType": "stone"});
    bridge
        .call_tool("world/place_block", place.clone())
        .await
        .unwrap();
    assert_eq!(tool_calls(&bridge).await, 1);

    // Raise: the game records an error; the item opens, blocking.
    let raised = bridge
        .call_tool(
            "demo/raise_error",
            json!({"message": "chunk 0,0 failed to save: disk full"}),
        )
        .await
        .unwrap();
    let id = raised["attentionId"].as_str().unwrap().to_owned();
    let opened = next_on(&mut attention, "attention/opened").await;
    assert_eq!(opened.payload["attentionId"], id.as_str());
    assert_eq!(opened.payload["blocking"], true);
    assert_eq!(opened.payload["causalMethod"], "demo/raise_error");
    let before = tool_calls(&bridge).await;
    assert_eq!(before, 2);

    // A game-bound call is refused by the gate: not executed, nothing sent.
    let refused = bridge
        .call_tool("world/place_block", place.clone())
        .await
        .unwrap_err();
    let blocked = BlockedByAttention::from_error(&refused)
        .unwrap_or_else(|| panic!("not refused by the gate: {refused}"));
    assert!(!blocked.executed());
    assert_eq!(blocked.attention.attention_id.as_str(), id);
    assert!(
        matches!(refused, Error::Rejected { .. }),
        "local, not the mod's answer"
    );
    assert_eq!(
        tool_calls(&bridge).await,
        before,
        "the mod's tool counter did not move"
    );

    // Acknowledge: the gate reopens, the game publishes the cleared item.
    let ack = gate.ack().await.unwrap();
    assert!(ack.acknowledged && ack.current_attention.is_none());
    let cleared = next_on(&mut attention, "attention/cleared").await;
    assert_eq!(cleared.payload["attentionId"], id.as_str());
    let state: AttentionState = serde_json::from_value(cleared.payload["state"].clone()).unwrap();
    assert_eq!(state, AttentionState::Cleared);
    assert_eq!(
        bridge
            .request("attention/current", Value::Null)
            .await
            .unwrap(),
        json!({"attention": null})
    );

    // Call again: it runs.
    let placed = bridge.call_tool("world/place_block", place).await.unwrap();
    assert_eq!(placed["success"], true);
    assert_eq!(tool_calls(&bridge).await, before + 1);

    bridge.goodbye(None).await.unwrap();
    game.child.kill().await.unwrap();
}
