//! Main-thread dispatch: tools marked for the game thread run only inside `pump`,
//! with deadlines; the connection never waits for the game thread.

mod server_support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use gabp_session::server::{CallError, MainThread, ModServer, ServerLimits, Tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use server_support::{code, connect_hello, data, request, result};

#[derive(Deserialize, JsonSchema)]
struct Spawn {
    kind: String,
}

fn server(limits: ServerLimits, runs: Arc<AtomicUsize>) -> ModServer {
    server_support::builder()
        .limits(limits)
        .tool(
            Tool::on_main_thread("world/spawn", move |s: Spawn| {
                runs.fetch_add(1, Ordering::SeqCst);
                let thread = thread::current().name().unwrap_or_default().to_owned();
                Ok::<_, CallError>(json!({ "spawned": s.kind, "thread": thread }))
            })
            .timeout(Duration::from_millis(300)),
        )
        .tool(Tool::on_main_thread("world/crash", |_: Value| {
            if true {
                panic!("the game thread tool panicked on purpose");
            }
            Ok::<Value, CallError>(Value::Null)
        }))
        .tool(
            Tool::on_main_thread("world/raw", |args: Map<String, Value>| {
                Ok::<_, CallError>(json!({ "got": args }))
            })
            .input_schema(json!({"type": "object"}))
            .output_schema(json!({})),
        )
        .tool(Tool::new("demo/echo", |v: Value| async move {
            Ok::<_, CallError>(v)
        }))
        .build()
        .expect("build")
}

/// A game loop on its own thread, pumping once per "frame" until stopped.
fn game_loop(main_thread: MainThread, stop: Arc<AtomicBool>) -> thread::JoinHandle<usize> {
    thread::Builder::new()
        .name("game".into())
        .spawn(move || {
            let mut ran = 0;
            while !stop.load(Ordering::SeqCst) {
                ran += main_thread.pump(Duration::from_millis(4)).ran;
                thread::sleep(Duration::from_millis(2));
            }
            ran
        })
        .expect("spawn the game thread")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_run_on_the_game_thread_inside_pump() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(ServerLimits::default(), runs.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let game = game_loop(server.main_thread(), stop.clone());
    let mut client = connect_hello(&server).await;
    let r = client
        .call_tool("world/spawn", json!({"kind": "creeper"}))
        .await;
    assert_eq!(result(&r), json!({"spawned": "creeper", "thread": "game"}));
    let r = client.call_tool("world/raw", json!({"a": 1})).await;
    assert_eq!(result(&r), json!({"got": {"a": 1}}));
    stop.store(true, Ordering::SeqCst);
    assert_eq!(game.join().unwrap(), 2);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_call_never_pumped_times_out_and_never_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(ServerLimits::default(), runs.clone());
    let mut client = connect_hello(&server).await;
    let r = client
        .call_tool("world/spawn", json!({"kind": "pig"}))
        .await;
    assert_eq!(code(&r), Some(-32403));
    assert_eq!(data(&r)["timeoutMs"], 300);
    // The game thread comes back too late: the call is dropped, not run.
    let report = server.main_thread().pump(Duration::from_millis(50));
    assert_eq!(report.ran, 0);
    assert_eq!(report.expired + report.cancelled, 1);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn the_connection_never_waits_for_the_game_thread() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(ServerLimits::default(), runs.clone());
    let mut client = connect_hello(&server).await;
    let (spawn_id, spawn) = request(
        "tools/call",
        Some(json!({"name": "world/spawn", "arguments": {"kind": "cow"}})),
    );
    client.send_value(&spawn).await;
    // Nobody pumps: other requests are answered meanwhile.
    for i in 0..5 {
        let r = client.call_tool("demo/echo", json!({ "i": i })).await;
        assert_eq!(result(&r), json!({ "i": i }));
    }
    assert!(client.call("session/ping", None).await.result().is_some());
    assert_eq!(server.main_thread().pending(), 1);
    // Now the game thread runs it.
    let report = server.main_thread().pump(Duration::from_millis(50));
    assert_eq!(report.ran, 1);
    let r = client.recv_response().await;
    assert_eq!(r.id, spawn_id);
    assert_eq!(result(&r)["spawned"], "cow");
}

#[tokio::test]
async fn a_full_queue_is_answered_at_once_and_retryable() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(
        ServerLimits::default().with_main_thread_queue(2),
        runs.clone(),
    );
    let mut client = connect_hello(&server).await;
    let mut ids = Vec::new();
    for kind in ["a", "b"] {
        let (id, msg) = request(
            "tools/call",
            Some(json!({"name": "world/spawn", "arguments": {"kind": kind}})),
        );
        ids.push(id);
        client.send_value(&msg).await;
    }
    // Wait until both are queued (requests are handled in order, answers may come in any order).
    while server.main_thread().pending() < 2 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let r = client.call_tool("world/spawn", json!({"kind": "c"})).await;
    assert_eq!(code(&r), Some(-32401));
    assert_eq!(r.error_object().unwrap().retryable(), Some(true));
    assert_eq!(server.main_thread().pump(Duration::from_millis(50)).ran, 2);
    for _ in 0..2 {
        let r = client.recv_response().await;
        assert!(ids.contains(&r.id));
        assert!(r.result().is_some());
    }
}

#[tokio::test]
async fn a_game_loop_that_closes_answers_its_waiting_calls_at_once_without_running_them() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(ServerLimits::default(), runs.clone());
    let mut client = connect_hello(&server).await;
    let (queued_id, queued) = request(
        "tools/call",
        Some(json!({"name": "world/spawn", "arguments": {"kind": "cow"}})),
    );
    client.send_value(&queued).await;
    while server.main_thread().pending() < 1 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // The game exits: the waiting call is answered now, not at its 300 ms limit (-32403).
    server.main_thread().close();
    assert!(server.main_thread().is_closed());
    let r = client.recv_response().await;
    assert_eq!(r.id, queued_id);
    assert_eq!(code(&r), Some(-32401), "{r:?}");
    assert_eq!(data(&r)["reason"], "shutting_down");
    assert_eq!(r.error_object().unwrap().retryable(), Some(false));
    // A call that arrives afterwards is refused the same way; other tools still answer.
    let r = client
        .call_tool("world/spawn", json!({"kind": "pig"}))
        .await;
    assert_eq!(data(&r)["reason"], "shutting_down", "{r:?}");
    let r = client.call_tool("demo/echo", json!({"i": 1})).await;
    assert_eq!(result(&r), json!({"i": 1}));
    assert_eq!(server.main_thread().pump(Duration::from_millis(50)).ran, 0);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_panic_on_the_game_thread_is_an_internal_error() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(ServerLimits::default(), runs.clone());
    let mut client = connect_hello(&server).await;
    let (id, msg) = request("tools/call", Some(json!({"name": "world/crash"})));
    client.send_value(&msg).await;
    while server.main_thread().pending() < 1 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert_eq!(server.main_thread().pump(Duration::from_millis(50)).ran, 1);
    let r = client.recv_response().await;
    assert_eq!(r.id, id);
    assert_eq!(code(&r), Some(-32603));
    // The pump and the connection go on.
    let (id, msg) = request(
        "tools/call",
        Some(json!({"name": "world/spawn", "arguments": {"kind": "x"}})),
    );
    client.send_value(&msg).await;
    while server.main_thread().pending() < 1 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    server.main_thread().pump(Duration::from_millis(50));
    let r = client.recv_response().await;
    assert_eq!(r.id, id);
    assert!(r.result().is_some());
}

#[tokio::test]
async fn arguments_are_checked_before_anything_is_queued() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(ServerLimits::default(), runs.clone());
    let mut client = connect_hello(&server).await;
    let r = client.call_tool("world/spawn", json!({"kind": 5})).await;
    assert_eq!(code(&r), Some(-32602));
    assert_eq!(server.main_thread().pending(), 0);
}
