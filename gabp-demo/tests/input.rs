//! The demo game takes input (SPEC/1.0 extensions.md §input): the arrow keys walk the player, through a real
//! Bridge over loopback TCP.

use futures::StreamExt;
use gabp_demo::InProcessGame;
use gabp_session::bridge::{Bridge, SubscriptionItem};
use serde_json::json;

#[tokio::test]
async fn the_arrow_keys_walk_the_player_one_block() {
    let game = InProcessGame::start().await.expect("the demo game starts");
    let bridge = Bridge::connect(game.handle.endpoint(), game.token.clone())
        .await
        .expect("connect");
    assert!(bridge.is_advertised("input/key"));
    let mut moves = bridge.subscribe(["player/move"]).await.expect("subscribe");
    bridge
        .call_tool("player/teleport", json!({"x": 8, "y": 5, "z": 8}))
        .await
        .expect("teleport");
    let _teleported = moves.next().await;
    for (key, x, z) in [
        ("ArrowRight", 9.0, 8.0),
        ("KeyW", 9.0, 7.0),
        ("ArrowLeft", 8.0, 7.0),
    ] {
        let answer = bridge
            .request("input/key", json!({"key": key, "action": "tap"}))
            .await
            .expect(key);
        assert_eq!(answer, json!({}));
        let Some(Ok(SubscriptionItem::Event(moved))) = moves.next().await else {
            panic!("no move for {key}")
        };
        assert_eq!(
            moved.payload["position"],
            json!({"x": x, "y": 5.0, "z": z}),
            "{key}"
        );
    }
    // A release, another key or text walks nowhere.
    for (method, params) in [
        (
            "input/key",
            json!({"key": "ArrowLeft", "action": "release"}),
        ),
        ("input/key", json!({"key": "Space", "action": "tap"})),
        ("input/text", json!({"text": "hi"})),
    ] {
        bridge.request(method, params).await.expect(method);
    }
    let state = bridge
        .call_tool("player/teleport", json!({"x": 8, "y": 5, "z": 7}))
        .await;
    assert!(state.is_ok());
    let Some(Ok(SubscriptionItem::Event(moved))) = moves.next().await else {
        panic!("no move")
    };
    assert_eq!(
        moved.payload["position"],
        json!({"x": 8.0, "y": 5.0, "z": 7.0}),
        "the next move is the teleport: the inputs above moved nothing"
    );
}
