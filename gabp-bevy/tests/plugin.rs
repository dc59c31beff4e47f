//! A headless Bevy app served by GabpPlugin, driven by a gabp-session bridge over TCP: tools as systems, a
//! forwarded message, time control over `Time<Virtual>` and `FixedMain`, the runner waking for calls.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy_app::{AppExit, FixedUpdate, Update};
use bevy_ecs::prelude::*;
use bevy_time::{Fixed, Time};
use futures::StreamExt;
use gabp_bevy::schemars::JsonSchema;
use gabp_bevy::GabpAppExt;
use gabp_session::bridge::SubscriptionItem;
use gabp_session::Bridge;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use support::Game;

/// The game: a ball that moves one step each fixed tick.
#[derive(Resource, Default)]
struct Ball {
    x: i64,
}

#[derive(Message, Serialize)]
struct Bounced {
    x: i64,
}

#[derive(Deserialize, JsonSchema)]
struct Place {
    x: i64,
}

#[derive(Serialize, JsonSchema)]
struct Where {
    x: i64,
}

fn roll(mut ball: ResMut<'_, Ball>, mut bounced: MessageWriter<'_, Bounced>) {
    ball.x += 1;
    if ball.x % 5 == 0 {
        bounced.write(Bounced { x: ball.x });
    }
}

fn get_ball(_: In<Option<Value>>, ball: Res<'_, Ball>) -> Where {
    Where { x: ball.x }
}

fn place_ball(In(place): In<Place>, mut ball: ResMut<'_, Ball>) -> Where {
    ball.x = place.x;
    Where { x: ball.x }
}

/// The ball game on a thread of its own, at `frame` per frame.
fn start_game(frame: Duration) -> Game {
    Game::start_at(
        frame,
        |plugin| plugin,
        |app| {
            app.insert_resource(Time::<Fixed>::from_hz(60.0))
                .init_resource::<Ball>()
                .add_gabp_read_only_tool("ball/get", "Where the ball is", get_ball)
                .add_gabp_tool("ball/place", place_ball)
                .add_gabp_event::<Bounced>("ball/bounced")
                .add_systems(FixedUpdate, roll);
        },
    )
}

async fn x(bridge: &Bridge) -> i64 {
    bridge.call_tool("ball/get", json!({})).await.unwrap()["x"]
        .as_i64()
        .unwrap()
}

#[tokio::test]
async fn a_bevy_app_serves_tools_events_and_time_control() {
    let game = start_game(Duration::from_millis(16));
    let bridge = game.connect().await;

    let tools = bridge.tools().await.unwrap();
    let get = tools
        .iter()
        .find(|t| t.name.as_str() == "ball/get")
        .unwrap();
    assert!(get.has_tag("read-only"));
    assert!(tools.iter().any(|t| t.name.as_str() == "ball/place"));
    let welcome = serde_json::to_value(&*bridge.welcome()).unwrap();
    assert!(
        welcome.to_string().contains("time-control"),
        "time control is advertised: {welcome}"
    );

    // Arguments are checked against the system's input type.
    let refused = bridge
        .call_tool("ball/place", json!({"x": "far"}))
        .await
        .unwrap_err();
    let gabp_session::Error::InvalidParams { errors, .. } = &refused else {
        panic!("{refused:?}")
    };
    assert!(errors[0].path.ends_with("/x"), "{errors:?}");

    // Paused, the ball stays; each step is exactly one fixed tick.
    let paused = bridge.request("time/pause", json!({})).await.unwrap();
    assert_eq!(paused["paused"], true, "{paused}");
    let at = x(&bridge).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(x(&bridge).await, at, "a paused game does not move");
    let stepped = bridge
        .request("time/step", json!({"ticks": 10}))
        .await
        .unwrap();
    assert_eq!(stepped["paused"], true, "{stepped}");
    assert_eq!(x(&bridge).await, at + 10);

    // The same steps from the same state give the same world.
    let mut events = bridge.subscribe(["ball/bounced"]).await.unwrap();
    for _ in 0..2 {
        bridge
            .call_tool("ball/place", json!({"x": 0}))
            .await
            .unwrap();
        bridge
            .request("time/step", json!({"ticks": 7}))
            .await
            .unwrap();
        assert_eq!(x(&bridge).await, 7);
    }
    // Each run passed x = 5 once: a forwarded message each.
    for _ in 0..2 {
        let item = tokio::time::timeout(Duration::from_secs(5), events.next())
            .await
            .unwrap();
        let Some(Ok(SubscriptionItem::Event(event))) = item else {
            panic!("no event: {item:?}")
        };
        assert_eq!(event.payload, json!({"x": 5}));
    }

    let status = bridge.request("time/status", json!({})).await.unwrap();
    assert_eq!(status["paused"], true);
    bridge.request("time/resume", json!({})).await.unwrap();
    let from = x(&bridge).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while x(&bridge).await == from {
        assert!(Instant::now() < deadline, "a resumed game moves");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    game.stop(bridge).await;
}

#[tokio::test]
async fn the_runner_wakes_for_a_call_on_an_idle_app() {
    // A frame every 30 s: only the runner's wake can answer within the test's bound.
    let game = start_game(Duration::from_secs(30));
    let bridge = game.connect().await;
    let started = Instant::now();
    for _ in 0..5 {
        x(&bridge).await;
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "calls waited for frames: {:?}",
        started.elapsed()
    );
    game.ask_to_stop();
    // The stop flag is read in the next frame, which this call starts, unless the frame that answered the
    // last call reads it first: then this call is refused as the app exits, or finds the connection closed.
    match bridge.call_tool("ball/get", json!({})).await {
        Ok(_) | Err(gabp_session::Error::Disconnected) => {}
        Err(e) => assert_shutting_down(&e),
    }
    game.stop(bridge).await;
}

fn assert_shutting_down(e: &gabp_session::Error) {
    let error = e.error_object().unwrap_or_else(|| panic!("{e:?}"));
    assert_eq!(error.code.0, -32401, "{e:?}");
    assert_eq!(
        error.data.as_ref().unwrap()["reason"],
        "shutting_down",
        "{e:?}"
    );
    assert_eq!(error.retryable(), Some(false));
}

/// Asked to quit: the app exits in this frame, once another call waits for the next.
#[derive(Resource)]
struct Quit;

/// Set once the quitting frame is past its calls and waits for one more.
#[derive(Resource, Clone, Default)]
struct Exiting(Arc<AtomicBool>);

fn quit(_: In<Option<Value>>, mut commands: Commands<'_, '_>) -> Where {
    commands.insert_resource(Quit);
    Where { x: 0 }
}

fn exit_once_a_call_waits(
    quit: Option<Res<'_, Quit>>,
    exiting: Res<'_, Exiting>,
    server: Res<'_, gabp_bevy::GabpServer>,
    mut exit: MessageWriter<'_, AppExit>,
) {
    if quit.is_none() {
        return;
    }
    exiting.0.store(true, Ordering::Release);
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.main_thread().pending() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    exit.write(AppExit::Success);
}

#[tokio::test]
async fn a_call_waiting_for_a_frame_when_the_app_exits_is_answered_at_once() {
    // A frame every 30 s, and calls whose time limit is 30 s: only the answer on exit is quick.
    let exiting = Exiting::default();
    let flag = exiting.0.clone();
    let game = Game::start_at(
        Duration::from_secs(30),
        |plugin| plugin,
        move |app| {
            app.init_resource::<Ball>()
                .insert_resource(exiting)
                .add_gabp_read_only_tool("ball/get", "Where the ball is", get_ball)
                .add_gabp_tool("game/quit", quit)
                .add_systems(Update, exit_once_a_call_waits);
        },
    );
    let bridge = game.connect().await;
    bridge.call_tool("game/quit", json!({})).await.unwrap();
    // The frame's calls have run; this one waits for a frame that never comes.
    while !flag.load(Ordering::Acquire) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let started = Instant::now();
    let refused = bridge.call_tool("ball/get", json!({})).await.unwrap_err();
    assert_shutting_down(&refused);
    // Not at the shutdown's 5 s bound, nor the call's 30 s limit.
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    game.stop(bridge).await;
}
