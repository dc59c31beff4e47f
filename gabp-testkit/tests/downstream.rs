//! How a project that uses GABP tests its own code with gabp-testkit, written as that project would (in its
//! `tests/`, with `gabp-testkit` as a dev-dependency): its bridge code against a scripted [`MockMod`], and its
//! own mod's [`ModServer`] through [`pair_with`]. Run with `cargo test -p gabp-testkit --test downstream`.

use std::time::Duration;

use futures::StreamExt;
use gabp_session::bridge::{Bridge, SubscriptionItem};
use gabp_session::schemars::{self, JsonSchema};
use gabp_session::server::{CallError, EventPublisher, ModServer, Tool};
use gabp_session::Error;
use gabp_testkit::{pair_with, Fault, MockMod, MockTool};
use gabp_transport::Token;
use gabp_types::ErrorCode;
use serde::{Deserialize, Serialize};
use serde_json::json;

// ---- The project's bridge code: builds a column of blocks through any mod that has `world/place_block`.

/// Places `height` stone blocks upwards from `(x, 0, z)`; returns how many the game placed.
async fn build_column(bridge: &Bridge, x: i64, z: i64, height: i64) -> Result<usize, Error> {
    let mut placed = 0;
    for y in 0..height {
        let args = json!({"x": x, "y": y, "z": z, "blockType": "stone"});
        if bridge.call_tool("world/place_block", args).await?["success"] == true {
            placed += 1;
        }
    }
    Ok(placed)
}

#[tokio::test]
async fn the_bridge_code_places_one_block_per_level() -> Result<(), Box<dyn std::error::Error>> {
    let mock = MockMod::builder()
        .tool(MockTool::with("world/place_block", |args| {
            Ok(json!({"success": args["y"].as_i64() < Some(3)}))
        }))
        .build()?;
    let pair = mock.pair().connect().await?;

    assert_eq!(build_column(&pair.bridge, 4, 7, 5).await?, 3);
    let calls = pair.mock.calls_to("world/place_block");
    let levels: Vec<_> = calls.iter().map(|c| c.arguments["y"].clone()).collect();
    assert_eq!(levels, [0, 1, 2, 3, 4]);
    assert!(calls
        .iter()
        .all(|c| c.arguments["x"] == 4 && c.arguments["z"] == 7));
    pair.recorder.assert_bridge_sent_strictly_valid();
    Ok(())
}

#[tokio::test]
async fn the_bridge_code_stops_at_the_first_failure() -> Result<(), Box<dyn std::error::Error>> {
    let mock = MockMod::builder()
        .tool(MockTool::failing(
            "world/place_block",
            CallError::new("the world is read-only"),
        ))
        .build()?;
    let pair = mock.pair().connect().await?;

    let error = build_column(&pair.bridge, 0, 0, 5).await.unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::TOOL_EXECUTION_FAILED));
    assert_eq!(pair.mock.calls().len(), 1, "no call after the failure");
    Ok(())
}

#[tokio::test]
async fn the_bridge_code_reports_a_lost_connection() -> Result<(), Box<dyn std::error::Error>> {
    let mock = MockMod::builder()
        .tool(MockTool::returning(
            "world/place_block",
            json!({"success": true}),
        ))
        .build()?;
    let pair = mock.pair().connect().await?;
    // The connection ends after two more messages: the first call and its answer.
    pair.faults.inject(Fault::drop_after(2));

    let error = build_column(&pair.bridge, 0, 0, 5).await.unwrap_err();
    assert!(matches!(error, Error::Disconnected), "{error:?}");
    assert_eq!(pair.mock.calls().len(), 1);
    Ok(())
}

// ---- The project's mod: the server its game builds.

#[derive(Deserialize, JsonSchema)]
struct Teleport {
    x: f64,
    y: f64,
    z: f64,
}

#[derive(Serialize, JsonSchema)]
struct Position {
    x: f64,
    y: f64,
    z: f64,
}

async fn teleport(events: EventPublisher, to: Teleport) -> Result<Position, CallError> {
    if to.y < 0.0 {
        return Err(CallError::new("below the world"));
    }
    let position = Position {
        x: to.x,
        y: to.y,
        z: to.z,
    };
    events.publish("player/move", &position)?;
    Ok(position)
}

fn game_server(token: Token) -> Result<ModServer, Box<dyn std::error::Error>> {
    Ok(ModServer::builder()
        .app("My Game", "1.0.0")
        .token(token)
        .channel("player/move")
        .tool(Tool::new("player/teleport", teleport).tags(["player"]))
        .build()?)
}

#[tokio::test]
async fn the_mod_teleports_and_announces_the_move() -> Result<(), Box<dyn std::error::Error>> {
    let pair = pair_with(game_server(Token::generate()?)?).await?;
    let mut moves = pair.bridge.subscribe(["player/move"]).await?;

    let at = pair
        .bridge
        .call_tool("player/teleport", json!({"x": 1.0, "y": 64.0, "z": -2.5}))
        .await?;
    assert_eq!(at, json!({"x": 1.0, "y": 64.0, "z": -2.5}));
    let next = tokio::time::timeout(Duration::from_secs(5), moves.next()).await?;
    let Some(Ok(SubscriptionItem::Event(moved))) = next else {
        panic!("expected the move event, got {next:?}");
    };
    assert_eq!((moved.seq, moved.payload), (0, at));
    pair.recorder.assert_sent_strictly_valid();
    Ok(())
}

#[tokio::test]
async fn the_mod_refuses_bad_arguments_and_impossible_moves(
) -> Result<(), Box<dyn std::error::Error>> {
    let pair = pair_with(game_server(Token::generate()?)?).await?;

    let untyped = json!({"x": "north", "y": 1.0, "z": 0.0});
    let error = pair
        .bridge
        .call_tool("player/teleport", untyped)
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::INVALID_PARAMS));
    let below = json!({"x": 0.0, "y": -1.0, "z": 0.0});
    let error = pair
        .bridge
        .call_tool("player/teleport", below)
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::TOOL_EXECUTION_FAILED));
    assert!(pair.recorder.events("player/move").is_empty());

    let tools = pair.bridge.list_tools().await?;
    let schema = &tools[0].input_schema;
    assert_eq!(schema["required"], json!(["x", "y", "z"]));
    Ok(())
}
