//! The input extension in a Bevy app: keys, text and mouse buttons from a bridge arrive as Bevy's own input
//! messages, so `ButtonInput` and `just_pressed` see them as they would a player's.
#![allow(clippy::unwrap_used)]

mod support;

use bevy_app::Update;
use bevy_ecs::prelude::*;
use bevy_input::keyboard::{KeyCode, KeyboardInput};
use bevy_input::mouse::MouseButton;
use bevy_input::{ButtonInput, InputPlugin};
use gabp_bevy::schemars::JsonSchema;
use gabp_bevy::{AgentCursor, GabpAppExt};
use serde::Serialize;
use serde_json::{json, Value};
use support::Game;

/// What the game saw, frame by frame.
#[derive(Resource, Default, Clone, Serialize, JsonSchema)]
struct Seen {
    jumps: u32,
    left_held_frames: u32,
    typed: String,
    clicks: u32,
    cursor: Option<(f64, f64)>,
}

fn watch(
    keys: Res<'_, ButtonInput<KeyCode>>,
    buttons: Res<'_, ButtonInput<MouseButton>>,
    mut typed: MessageReader<'_, '_, KeyboardInput>,
    cursor: Res<'_, AgentCursor>,
    mut seen: ResMut<'_, Seen>,
) {
    if keys.just_pressed(KeyCode::Space) {
        seen.jumps += 1;
    }
    if keys.pressed(KeyCode::ArrowLeft) {
        seen.left_held_frames += 1;
    }
    for key in typed.read() {
        if let Some(text) = &key.text {
            seen.typed.push_str(text);
        }
    }
    if buttons.just_pressed(MouseButton::Left) {
        seen.clicks += 1;
    }
    seen.cursor = cursor.position;
}

fn seen(_: In<Option<Value>>, seen: Res<'_, Seen>) -> Seen {
    seen.clone()
}

#[tokio::test]
async fn keys_text_and_clicks_arrive_as_bevy_input() {
    let game = Game::start(
        |plugin| plugin,
        |app| {
            app.add_plugins(InputPlugin)
                .init_resource::<Seen>()
                .add_systems(Update, watch)
                .add_gabp_tool("test/seen", seen);
        },
    );
    let bridge = game.connect().await;
    let welcome = serde_json::to_value(&*bridge.welcome()).unwrap();
    assert!(
        welcome["capabilities"]["extensions"]["input"].is_object(),
        "{welcome}"
    );
    let read = || async { bridge.call_tool("test/seen", json!({})).await.unwrap() };

    // A tap is just_pressed once, then let go.
    for _ in 0..2 {
        let answer = bridge
            .request("input/key", json!({"key": "Space", "action": "tap"}))
            .await
            .unwrap();
        assert_eq!(answer, json!({}));
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(read().await["jumps"], 2);

    // A press is held across frames until its release.
    bridge
        .request("input/key", json!({"key": "ArrowLeft", "action": "press"}))
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    bridge
        .request(
            "input/key",
            json!({"key": "ArrowLeft", "action": "release"}),
        )
        .await
        .unwrap();
    let held = read().await["left_held_frames"].as_u64().unwrap();
    assert!(held >= 3, "held for {held} frames");
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert_eq!(
        read().await["left_held_frames"].as_u64().unwrap(),
        held,
        "released"
    );

    bridge
        .request("input/text", json!({"text": "gg wp"}))
        .await
        .unwrap();
    bridge
        .request(
            "input/mouse",
            json!({"button": "left", "action": "click", "position": {"x": 320, "y": 240}}),
        )
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let now = read().await;
    assert_eq!(now["typed"], "gg wp");
    assert_eq!(now["clicks"], 1);
    assert_eq!(now["cursor"], json!([320.0, 240.0]));

    // An unknown key is refused by name (by the bridge's own check of the params, before it is sent; the
    // mod's -32602 is gabp-session's test).
    let refused = bridge
        .request("input/key", json!({"key": "Spacebar", "action": "tap"}))
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("Spacebar"), "{refused}");
    game.stop(bridge).await;
}

#[tokio::test]
async fn without_input_plugin_the_extension_is_not_advertised() {
    let game = Game::start(|plugin| plugin, |_| {});
    let bridge = game.connect().await;
    assert!(!bridge.is_advertised("input/key"));
    game.stop(bridge).await;
}
