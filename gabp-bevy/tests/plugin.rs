//! A headless Bevy app served by GabpPlugin, driven by a gabp-session bridge over TCP: tools as systems, a
//! forwarded message, time control over `Time<Virtual>` and `FixedMain`, the runner waking for calls.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy_app::{App, AppExit, FixedUpdate, Update};
use bevy_ecs::prelude::*;
use bevy_time::{Fixed, Time, TimePlugin};
use futures::StreamExt;
use gabp_bevy::schemars::JsonSchema;
use gabp_bevy::{GabpAppExt, GabpPlugin, GabpRunnerPlugin};
use gabp_session::bridge::SubscriptionItem;
use gabp_session::Bridge;
use gabp_transport::{Endpoint, ExplicitSettings, ModSettings, Token};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// The game: a ball that moves one step each fixed tick.
#[derive(Resource, Default)]
struct Ball {
    x: i64,
}

#[derive(Message, Serialize)]
struct Bounced {
    x: i64,
}

#[derive(Resource)]
struct Stop(Arc<AtomicBool>);

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

fn stop_when_told(stop: Res<'_, Stop>, mut exit: MessageWriter<'_, AppExit>) {
    if stop.0.load(Ordering::Acquire) {
        exit.write(AppExit::Success);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port()
}

/// Runs the game on a thread of its own at `frame` per frame; the returned flag stops it.
fn start_game(port: u16, frame: Duration) -> (Arc<AtomicBool>, std::thread::JoinHandle<AppExit>) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let game = std::thread::spawn(move || {
        let explicit = ExplicitSettings {
            endpoint: Some(Endpoint::tcp_v4(port)),
            token: Some(Token::new(TOKEN).unwrap()),
            ..ExplicitSettings::default()
        };
        let home = tempfile::tempdir().unwrap();
        let home_path = home.path().as_os_str().to_owned();
        let env =
            |name: &str| (name == "HOME" || name == "XDG_CONFIG_HOME").then(|| home_path.clone());
        let settings = ModSettings::resolve_or_default(explicit, env).unwrap();
        let mut app = App::new();
        app.add_plugins((TimePlugin, GabpRunnerPlugin::new(frame)))
            .add_plugins(GabpPlugin::new("bevy-test", "1.0.0").settings(settings))
            .insert_resource(Time::<Fixed>::from_hz(60.0))
            .init_resource::<Ball>()
            .insert_resource(Stop(flag))
            .add_gabp_read_only_tool("ball/get", "Where the ball is", get_ball)
            .add_gabp_tool("ball/place", place_ball)
            .add_gabp_event::<Bounced>("ball/bounced")
            .add_systems(FixedUpdate, roll)
            .add_systems(Update, stop_when_told);
        app.run()
    });
    (stop, game)
}

async fn connect(port: u16) -> Bridge {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match Bridge::connect(&Endpoint::tcp_v4(port), Token::new(TOKEN).unwrap()).await {
            Ok(bridge) => return bridge,
            Err(e) if Instant::now() > deadline => panic!("the game did not start serving: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

async fn x(bridge: &Bridge) -> i64 {
    bridge.call_tool("ball/get", json!({})).await.unwrap()["x"]
        .as_i64()
        .unwrap()
}

#[tokio::test]
async fn a_bevy_app_serves_tools_events_and_time_control() {
    let port = free_port();
    let (stop, game) = start_game(port, Duration::from_millis(16));
    let bridge = connect(port).await;

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

    stop.store(true, Ordering::Release);
    bridge.close().await;
    assert_eq!(game.join().unwrap(), AppExit::Success);
}

#[tokio::test]
async fn the_runner_wakes_for_a_call_on_an_idle_app() {
    // A frame every 30 s: only the runner's wake can answer within the test's bound.
    let port = free_port();
    let (stop, game) = start_game(port, Duration::from_secs(30));
    let bridge = connect(port).await;
    let started = Instant::now();
    for _ in 0..5 {
        x(&bridge).await;
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "calls waited for frames: {:?}",
        started.elapsed()
    );
    stop.store(true, Ordering::Release);
    // The stop flag is read in the next frame, which this call starts.
    let _ = x(&bridge).await;
    bridge.close().await;
    assert_eq!(game.join().unwrap(), AppExit::Success);
}
