//! The demo game's sheep, its time control and its picture, through a real Bridge over loopback TCP.

use gabp_demo::{InProcessGame, PLAYER_COLOUR};
use gabp_session::bridge::Bridge;
use gabp_types::methods::{
    StepTicks, TimeParams, TimePause, TimeResume, TimeStep, TimeStepParams, ToolResult,
};
use serde_json::{json, Value};

async fn connect() -> (InProcessGame, Bridge) {
    let game = InProcessGame::start().await.expect("the demo game starts");
    let bridge = Bridge::connect(game.handle.endpoint(), game.token.clone())
        .await
        .expect("connect");
    (game, bridge)
}

fn sheep(entities: &Value) -> Vec<(i64, i64, u64)> {
    entities["entities"]
        .as_array()
        .expect("entities")
        .iter()
        .map(|e| {
            (
                e["x"].as_i64().expect("x"),
                e["z"].as_i64().expect("z"),
                e["moves"].as_u64().expect("moves"),
            )
        })
        .collect()
}

#[tokio::test]
async fn paused_sheep_stand_still_and_a_step_of_three_moves_each_three_blocks() {
    let (game, bridge) = connect().await;
    let paused = bridge
        .call::<TimePause>(&TimeParams {})
        .await
        .expect("pause");
    assert!(paused.paused);
    let before = bridge
        .call_tool("world/entities", json!({}))
        .await
        .expect("entities");
    assert_eq!(
        before["tick"], paused.tick,
        "no tick ran after the pause was answered"
    );
    assert_eq!(sheep(&before).len(), 3);
    // Two game ticks' time (50 ms each) later, nothing has moved.
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    let still = bridge
        .call_tool("world/entities", json!({}))
        .await
        .expect("entities");
    assert_eq!(still, before);

    let step = TimeStepParams {
        ticks: StepTicks::new(3).expect("3 ticks"),
    };
    let stepped = bridge.call::<TimeStep>(&step).await.expect("step");
    assert_eq!(stepped.tick, paused.tick + 3);
    let after = bridge
        .call_tool("world/entities", json!({}))
        .await
        .expect("entities");
    assert_eq!(after["tick"], paused.tick + 3);
    for ((x0, z0, m0), (x1, z1, m1)) in sheep(&before).into_iter().zip(sheep(&after)) {
        assert_eq!(m1 - m0, 3, "one block per tick");
        assert!((x1 - x0).abs() + (z1 - z0).abs() <= 3);
        assert_eq!(
            ((x1 - x0).abs() + (z1 - z0).abs()) % 2,
            1,
            "three unit moves change the parity"
        );
    }

    let resumed = bridge
        .call::<TimeResume>(&TimeParams {})
        .await
        .expect("resume");
    assert!(!resumed.paused);
    bridge.close().await;
    drop(game);
}

#[tokio::test]
async fn world_render_returns_a_real_png_with_the_player_in_red() {
    let (game, bridge) = connect().await;
    let value = bridge
        .call_tool("world/render", json!({}))
        .await
        .expect("render");
    let result = ToolResult::from_value(value);
    assert_eq!(result.value["width"], 128);
    assert_eq!(result.value["scale"], 8);
    assert_eq!(result.content.len(), 1);
    let item = &result.content[0];
    assert_eq!((item.kind(), item.mime_type()), ("image", "image/png"));
    let png = item.decode().expect("base64");
    assert!(png.len() <= 64 * 1024, "{} bytes", png.len());
    assert_eq!(result.value["pngBytes"], png.len());

    let mut reader = png::Decoder::new(std::io::Cursor::new(png))
        .read_info()
        .expect("a PNG");
    let mut pixels = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut pixels).expect("a frame");
    assert_eq!((info.width, info.height), (128, 128));
    // The player stands at (8.5, 8.5): the middle of block (8, 8) is red.
    let at = |px: usize, py: usize| {
        let i = (py * 128 + px) * 3;
        [pixels[i], pixels[i + 1], pixels[i + 2]]
    };
    assert_eq!(at(8 * 8 + 4, 8 * 8 + 4), PLAYER_COLOUR);

    let big = bridge
        .call_tool("world/render", json!({"scale": 32}))
        .await
        .expect("scale 32");
    assert_eq!(big["width"], 512);
    for bad in [json!(0), json!(33), json!("8")] {
        let e = bridge
            .call_tool("world/render", json!({ "scale": bad }))
            .await
            .unwrap_err();
        assert_eq!(e.code().map(|c| c.0), Some(-32602), "{bad}");
    }
    bridge.close().await;
    drop(game);
}

#[tokio::test]
async fn a_game_that_cannot_listen_names_the_endpoint() {
    let (game, _bridge) = connect().await;
    let taken = game.handle.endpoint().clone();
    let error = match InProcessGame::start_at(&taken, game.token.clone()).await {
        Err(error) => error,
        Ok(_) => panic!("a second game listened on {taken}"),
    };
    assert!(
        matches!(&error, gabp_demo::DemoError::Listen { endpoint, .. } if *endpoint == taken.to_string()),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(text.starts_with("the demo game cannot listen: "), "{text}");
    assert_eq!(text.matches(&taken.to_string()).count(), 1, "{text}");
}
