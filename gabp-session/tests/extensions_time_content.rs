//! The `time-control` and `content` extensions (SPEC/1.0 extensions.md §time-control, §content), on the wire
//! with a raw client (whose decoder is strict) and through a real Bridge.

mod server_support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use gabp_session::bridge::Bridge;
use gabp_session::server::{CallContext, CallError, ModServer, Tool};
use gabp_types::methods::{
    ContentItem, StepTicks, TimeParams, TimePause, TimeStep, TimeStepParams, ToolResult,
    WithContent,
};
use serde_json::{json, Value};
use server_support::{ask, code, connect_hello, data, result};

/// A mod with time control and two tools that return pictures: `art/small` (3 bytes) and `art/big` (`n`
/// bytes), and `art/broken`, which sends a `_content` that is not valid.
fn server(max_content_bytes: usize) -> ModServer {
    server_support::builder()
        .limits(server_support::limits().with_max_content_bytes(max_content_bytes))
        .time_control(true)
        .tool(Tool::new("art/small", |_: Value| async {
            Ok::<_, CallError>(WithContent::new(
                json!({ "name": "dot" }),
                vec![ContentItem::image("image/png", b"png")],
            ))
        }))
        .tool(Tool::new("art/big", |ctx: CallContext, p: Value| async move {
            let n = p["n"].as_u64().unwrap_or(0) as usize;
            assert_eq!(ctx.max_content_bytes(), 1000);
            Ok::<_, CallError>(WithContent::new(
                json!({}),
                vec![ContentItem::audio("audio/wav", &vec![7; n])],
            ))
        }))
        .tool(Tool::new("art/broken", |_: Value| async {
            Ok::<_, CallError>(json!({ "_content": [{"type": "image", "mimeType": "text/plain", "data": "AA=="}] }))
        }))
        .build()
        .expect("build")
}

/// The game loop: a tick every `period`, each taking `tick_time`, through the clock; stops when dropped.
struct GameLoop {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    ticks: Arc<AtomicU64>,
}

impl GameLoop {
    fn start(server: &ModServer, period: Duration, tick_time: Duration) -> GameLoop {
        let main_thread = server.main_thread();
        let clock = main_thread.clock().expect("time control is on");
        let stop = Arc::new(AtomicBool::new(false));
        let ticks = Arc::new(AtomicU64::new(0));
        let (stopping, counted) = (stop.clone(), ticks.clone());
        let thread = std::thread::spawn(move || {
            while !stopping.load(Ordering::Acquire) {
                if !clock.is_stepping() {
                    main_thread.wait(period);
                }
                main_thread.pump(Duration::from_millis(1));
                clock.run_tick(|| {
                    std::thread::sleep(tick_time);
                    counted.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        GameLoop {
            stop,
            thread: Some(thread),
            ticks,
        }
    }
}

impl Drop for GameLoop {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.join().expect("the game loop panicked");
        }
    }
}

#[tokio::test]
async fn the_welcome_advertises_time_control_and_content() {
    let welcome = server(1000).welcome().clone();
    let extensions = welcome
        .capabilities
        .extensions
        .as_ref()
        .expect("extensions");
    assert_eq!(
        extensions.get("time-control").map(|e| json!(e)),
        Some(json!({"channel": "time/changed", "maxStepTicks": 10000}))
    );
    assert_eq!(
        extensions.get("content").map(|e| json!(e)),
        Some(json!({"types": ["image", "audio"], "maxBytes": 1000}))
    );
    for method in ["time/status", "time/pause", "time/resume", "time/step"] {
        assert!(welcome.capabilities.has_method(method), "{method}");
    }
    assert!(welcome.capabilities.has_event("time/changed"));

    // Without time control: nothing advertised, and the methods are unknown.
    let plain = server_support::builder().build().expect("build");
    assert!(plain.main_thread().clock().is_none());
    let caps = &plain.welcome().capabilities;
    assert!(!caps.has_method("time/pause") && !caps.has_event("time/changed"));
    assert!(caps
        .extensions
        .as_ref()
        .unwrap()
        .get("time-control")
        .is_none());
    let mut client = connect_hello(&plain).await;
    assert_eq!(
        code(&ask(&mut client, "time/pause", None).await),
        Some(-32601)
    );
}

#[tokio::test]
async fn pause_twice_announces_once_and_resume_announces_again() {
    let server = server(1000);
    let mut client = connect_hello(&server).await;
    let subscribed = ask(
        &mut client,
        "events/subscribe",
        Some(json!({"channels": ["time/changed"]})),
    )
    .await;
    assert_eq!(result(&subscribed)["subscribed"], json!(["time/changed"]));
    let first = ask(&mut client, "time/pause", None).await;
    assert_eq!(result(&first), json!({"paused": true, "tick": 0}));
    let second = ask(&mut client, "time/pause", Some(json!({}))).await;
    assert_eq!(result(&second), json!({"paused": true, "tick": 0}));
    let event = client.next_event().await;
    assert_eq!((event.channel.as_str(), event.seq), ("time/changed", 0));
    assert_eq!(event.payload, json!({"paused": true, "tick": 0}));
    assert!(
        client.try_event(Duration::from_millis(100)).await.is_none(),
        "the second pause changed nothing"
    );
    // The game's own pause button is announced the same way.
    server.main_thread().clock().unwrap().resume();
    let event = client.next_event().await;
    assert_eq!(
        (event.seq, event.payload["paused"].clone()),
        (1, json!(false))
    );
    assert_eq!(
        result(&ask(&mut client, "time/status", None).await)["paused"],
        false
    );
}

#[tokio::test]
async fn a_step_of_0_or_10001_ticks_is_invalid_params_naming_ticks() {
    let server = server(1000);
    let mut client = connect_hello(&server).await;
    for ticks in [json!(0), json!(10_001), json!(-3), json!("3")] {
        let answer = ask(&mut client, "time/step", Some(json!({ "ticks": ticks }))).await;
        assert_eq!(code(&answer), Some(-32602), "{ticks}");
        assert!(
            data(&answer).to_string().contains("/params/ticks"),
            "{ticks}: {answer:?}"
        );
    }
    assert_eq!(
        code(&ask(&mut client, "time/step", None).await),
        Some(-32602)
    );
    let extra = ask(&mut client, "time/status", Some(json!({"x": 1}))).await;
    assert_eq!(code(&extra), Some(-32602));
}

#[tokio::test]
async fn a_step_answers_after_its_ticks_with_the_counter() {
    let server = server(1000);
    let game = GameLoop::start(&server, Duration::from_millis(5), Duration::ZERO);
    let mut client = connect_hello(&server).await;
    let paused = result(&ask(&mut client, "time/pause", None).await);
    let before = paused["tick"].as_u64().unwrap();
    assert_eq!(game.ticks.load(Ordering::SeqCst), before);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        game.ticks.load(Ordering::SeqCst),
        before,
        "paused: no tick runs"
    );
    let stepped = result(&ask(&mut client, "time/step", Some(json!({"ticks": 3}))).await);
    assert_eq!(stepped, json!({"paused": true, "tick": before + 3}));
    assert_eq!(game.ticks.load(Ordering::SeqCst), before + 3);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        game.ticks.load(Ordering::SeqCst),
        before + 3,
        "still paused after the step"
    );
    // A long step runs at once, not at the frame rate: 2000 ticks well within the time limit.
    let long = result(&ask(&mut client, "time/step", Some(json!({"ticks": 2000}))).await);
    assert_eq!(long["tick"], before + 2003);
    let resumed = result(&ask(&mut client, "time/resume", None).await);
    assert_eq!(resumed["paused"], false);
    drop(game);
}

#[tokio::test]
async fn a_pause_during_a_tick_is_answered_once_the_tick_has_ended() {
    let server = server(1000);
    // Each tick takes 150 ms: a pause is almost sure to arrive during one.
    let game = GameLoop::start(&server, Duration::ZERO, Duration::from_millis(150));
    let mut client = connect_hello(&server).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let paused = result(&ask(&mut client, "time/pause", None).await);
    let tick = paused["tick"].as_u64().unwrap();
    // No tick was running when the answer was written, and none runs after it.
    assert_eq!(game.ticks.load(Ordering::SeqCst), tick);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(game.ticks.load(Ordering::SeqCst), tick);
    drop(game);
}

#[tokio::test]
async fn a_bridge_controls_time_with_typed_calls() {
    let server = server(1000);
    let game = GameLoop::start(&server, Duration::from_millis(5), Duration::ZERO);
    let (mod_side, bridge_side) = tokio::io::duplex(64 * 1024);
    tokio::spawn(server.serve_connection(gabp_transport::Connection::new(mod_side)));
    let bridge = Bridge::over(
        gabp_transport::Connection::new(bridge_side),
        server_support::token(),
    )
    .await
    .expect("connect");
    let paused = bridge
        .call::<TimePause>(&TimeParams {})
        .await
        .expect("pause");
    assert!(paused.paused);
    let step = TimeStepParams {
        ticks: StepTicks::new(5).unwrap(),
    };
    let stepped = bridge.call::<TimeStep>(&step).await.expect("step");
    assert_eq!(stepped.tick, paused.tick + 5);
    bridge.close().await;
    drop(game);
}

#[tokio::test]
async fn content_items_travel_beside_the_value_and_are_strictly_valid() {
    let server = server(1000);
    let mut client = connect_hello(&server).await;
    let answer = ask(
        &mut client,
        "tools/call",
        Some(json!({"name": "art/small"})),
    )
    .await;
    // The raw client decoded the answer strictly; the result passes the result check too.
    let value = result(&answer);
    gabp_types::decode::check_result("tools/call", &value).expect("strict");
    let split = ToolResult::from_value(value);
    assert_eq!(split.value, json!({"name": "dot"}));
    assert_eq!(split.content.len(), 1);
    assert_eq!(split.content[0].mime_type(), "image/png");
    assert_eq!(split.content[0].decode().as_deref(), Some(&b"png"[..]));
    // The outputSchema describes the value alone.
    let listed = result(&ask(&mut client, "tools/list", None).await);
    let small = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "art/small")
        .unwrap();
    assert!(!small["outputSchema"].to_string().contains("_content"));
}

#[tokio::test]
async fn content_over_the_limit_is_an_error_not_a_cut_picture() {
    let server = server(1000);
    let mut client = connect_hello(&server).await;
    let fits = ask(
        &mut client,
        "tools/call",
        Some(json!({"name": "art/big", "arguments": {"n": 1000}})),
    )
    .await;
    assert_eq!(ToolResult::from_value(result(&fits)).content_bytes(), 1000);
    let over = ask(
        &mut client,
        "tools/call",
        Some(json!({"name": "art/big", "arguments": {"n": 1001}})),
    )
    .await;
    assert_eq!(code(&over), Some(-32603));
    assert_eq!(data(&over)["maxBytes"], 1000);
    assert_eq!(data(&over)["contentBytes"], 1001);
    let message = &over.error_object().unwrap().message;
    assert!(
        message.contains("1001") && message.contains("1000"),
        "{message}"
    );
}

#[tokio::test]
async fn invalid_content_items_are_refused_by_the_mod_itself() {
    let server = server(1000);
    let mut client = connect_hello(&server).await;
    let answer = ask(
        &mut client,
        "tools/call",
        Some(json!({"name": "art/broken"})),
    )
    .await;
    assert_eq!(code(&answer), Some(-32603));
    assert_eq!(data(&answer)["pointer"], "/result/_content/0/mimeType");
}
