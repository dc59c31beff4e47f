//! The bridge side of the C ABI, driven as a C test harness would drive it, against a gabp-session mod:
//! connect (endpoint and token, or bridge.json), call with a time limit, subscribe with a callback, close.
#![allow(clippy::unwrap_used, clippy::undocumented_unsafe_blocks)]

mod support;

use std::ffi::c_void;
use std::sync::mpsc;
use std::time::Duration;

use gabp::*;
use gabp_session::server::{CallError, EventPublisher, ModServer, ServeHandle, Tool};
use gabp_transport::{BridgeConfig, Endpoint, Listener, Token};
use serde_json::{json, Value};
use support::{empty, last_error, ok, s, take, TOKEN};

/// A mod with `demo/echo`, a slow `demo/sleep` and a `player/move` channel, served on a runtime of its own.
struct Game {
    runtime: tokio::runtime::Runtime,
    serve: Option<ServeHandle>,
    events: EventPublisher,
    endpoint: String,
}

impl Game {
    fn start() -> Game {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let builder = ModServer::builder()
            .app("bridge-test", "1.0.0")
            .token(Token::new(TOKEN).unwrap())
            .tool(Tool::new("demo/echo", |args: Value| async move {
                Ok::<_, CallError>(args)
            }))
            .tool(Tool::new("demo/nested", |args: Value| async move {
                // A bridge call from a thread that runs async tasks is refused, never a hang.
                let b = args["bridge"].as_u64().unwrap_or(0);
                let (status, _) = call(b, "demo/echo", "{}", 1_000);
                Ok::<_, CallError>(json!({"status": status as i32}))
            }))
            .tool(Tool::new("demo/sleep", |args: Value| async move {
                let ms = args["ms"].as_u64().unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok::<_, CallError>(json!({"slept": ms}))
            }))
            .channel("player/move");
        let events = builder.event_publisher();
        let server = builder.build().unwrap();
        let serve = runtime
            .block_on(async { server.serve(Listener::bind(&Endpoint::tcp_v4(0)).await.unwrap()) });
        let endpoint = serve.endpoint().to_string();
        Game {
            runtime,
            serve: Some(serve),
            events,
            endpoint,
        }
    }
}

impl Drop for Game {
    fn drop(&mut self) {
        if let Some(serve) = self.serve.take() {
            self.runtime.block_on(serve.shutdown());
        }
    }
}

fn connect(endpoint: &str, token: &str) -> (GabpStatus, u64) {
    let (e, el) = s(endpoint);
    let (t, tl) = s(token);
    let mut b = 0;
    let status = unsafe { gabp_bridge_connect(e, el, t, tl, &mut b) };
    (status, b)
}

fn call(b: u64, tool: &str, args: &str, timeout_ms: u64) -> (GabpStatus, Option<Value>) {
    let (t, tl) = s(tool);
    let (a, al) = s(args);
    let mut out = empty();
    let status = unsafe { gabp_bridge_call(b, t, tl, a, al, timeout_ms, &mut out) };
    let answer = (!out.ptr.is_null()).then(|| serde_json::from_str(&take(out)).unwrap());
    (status, answer)
}

/// Sends each event the callback gets, as (channel, seq, payload, missed), to the `mpsc::Sender` in `user`.
unsafe extern "C" fn on_event(user: *mut c_void, event: *const GabpEvent) {
    let sender = unsafe { &*(user as *const mpsc::Sender<(String, u64, Value, u64)>) };
    let event = unsafe { &*event };
    let text = |ptr: *const std::ffi::c_char, len: usize| {
        let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
        String::from_utf8(bytes.to_vec()).unwrap()
    };
    let payload = text(event.payload, event.payload_len);
    let payload = if payload.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&payload).unwrap()
    };
    let _ = sender.send((
        text(event.channel, event.channel_len),
        event.seq,
        payload,
        event.missed,
    ));
}

#[test]
fn a_harness_calls_tools_with_a_time_limit() {
    let game = Game::start();
    let (status, b) = connect(&game.endpoint, TOKEN);
    ok(status);

    let (status, answer) = call(b, "demo/echo", r#"{"value":[1,"two"]}"#, 5_000);
    ok(status);
    assert_eq!(answer.unwrap(), json!({"value": [1, "two"]}));
    // No arguments is `{}`.
    let (status, answer) = call(b, "demo/echo", "", 0);
    ok(status);
    assert_eq!(answer.unwrap(), json!({}));

    // The time limit: TIMEOUT, and nothing written to `out`.
    let (status, answer) = call(b, "demo/sleep", r#"{"ms":2000}"#, 100);
    assert_eq!(status, GabpStatus::Timeout, "{}", last_error());
    assert!(answer.is_none());
    assert!(last_error().contains("demo/sleep") || last_error().contains("tools/call"));
    let (status, answer) = call(b, "demo/sleep", r#"{"ms":10}"#, 5_000);
    ok(status);
    assert_eq!(answer.unwrap(), json!({"slept": 10}));

    // The mod's errors: REMOTE, with its error object in `out`.
    let (status, answer) = call(b, "no/such", "{}", 0);
    assert_eq!(status, GabpStatus::Remote, "{}", last_error());
    let error = answer.unwrap();
    assert_eq!(error["code"], -32400, "{error}");
    assert!(last_error().contains("no/such"), "{}", last_error());

    // Bad input from the harness: codes with messages, never a crash.
    assert_eq!(call(b, "demo/echo", "[1]", 0).0, GabpStatus::Json);
    assert!(last_error().contains("arguments"), "{}", last_error());
    assert_eq!(call(b, "demo/echo", "{oops", 0).0, GabpStatus::Json);
    assert_eq!(call(b, "", "{}", 0).0, GabpStatus::Invalid);
    let bad = [b'a', 0xff];
    let mut out = empty();
    assert_eq!(
        unsafe { gabp_bridge_call(b, bad.as_ptr().cast(), 2, std::ptr::null(), 0, 0, &mut out) },
        GabpStatus::Utf8
    );
    let (t, tl) = s("demo/echo");
    assert_eq!(
        unsafe { gabp_bridge_call(b, t, tl, std::ptr::null(), 0, 0, std::ptr::null_mut()) },
        GabpStatus::Null
    );

    // Calls from several threads run at once.
    let started = std::time::Instant::now();
    let threads: Vec<_> = (0..4)
        .map(|_| std::thread::spawn(move || call(b, "demo/sleep", r#"{"ms":300}"#, 5_000).0))
        .collect();
    for t in threads {
        ok(t.join().unwrap());
    }
    assert!(started.elapsed() < Duration::from_millis(1_100));

    ok(gabp_bridge_close(b));
    assert_eq!(call(b, "demo/echo", "{}", 0).0, GabpStatus::Handle);
    assert!(last_error().contains("already freed"), "{}", last_error());
    assert_eq!(gabp_bridge_close(b), GabpStatus::Handle);
}

#[test]
fn a_harness_subscribes_with_a_callback() {
    let game = Game::start();
    let (status, b) = connect(&game.endpoint, TOKEN);
    ok(status);
    let (tx, rx) = mpsc::channel::<(String, u64, Value, u64)>();
    let user = Box::into_raw(Box::new(tx));
    let (c, cl) = s("player/move");
    let mut sub = 0;
    ok(unsafe { gabp_bridge_subscribe(b, c, cl, Some(on_event), user.cast(), &mut sub) });

    let mut published = Vec::new();
    for x in 0..5 {
        published.push(
            game.events
                .publish("player/move", json!({"x": x}))
                .unwrap()
                .seq,
        );
    }
    for (x, seq) in published.iter().enumerate() {
        let (channel, got_seq, payload, missed) = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(channel, "player/move");
        assert_eq!(got_seq, *seq);
        assert_eq!(payload, json!({"x": x}));
        assert_eq!(missed, 0);
    }

    // A channel the mod does not offer is named; no callback is a NULL error.
    let (u, ul) = s("no/such");
    let mut other = 0;
    assert_eq!(
        unsafe { gabp_bridge_subscribe(b, u, ul, Some(on_event), user.cast(), &mut other) },
        GabpStatus::Invalid,
    );
    assert!(last_error().contains("no/such"), "{}", last_error());
    assert_eq!(
        unsafe { gabp_bridge_subscribe(b, c, cl, None, user.cast(), &mut other) },
        GabpStatus::Null
    );

    // After free, the callback is not called again.
    ok(gabp_subscription_free(sub));
    assert_eq!(gabp_subscription_free(sub), GabpStatus::Handle);
    game.events
        .publish("player/move", json!({"x": 99}))
        .unwrap();
    let (status, _) = call(b, "demo/echo", "{}", 0);
    ok(status);
    assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());

    ok(gabp_bridge_close(b));
    drop(unsafe { Box::from_raw(user) });
}

#[test]
fn a_harness_connects_through_bridge_json_and_says_what_failed() {
    let game = Game::start();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bridge.json");
    let config = BridgeConfig::new(
        Token::new(TOKEN).unwrap(),
        game.endpoint.parse::<Endpoint>().unwrap(),
    );
    let _published = config.publish(&path).unwrap();
    let path_text = path.to_str().unwrap();
    let (p, pl) = s(path_text);
    let mut b = 0;
    ok(unsafe { gabp_bridge_discover(p, pl, &mut b) });
    let (status, answer) = call(b, "demo/echo", r#"{"via":"bridge.json"}"#, 0);
    ok(status);
    assert_eq!(answer.unwrap(), json!({"via": "bridge.json"}));
    ok(gabp_bridge_close(b));

    // A file that is not there: IO, naming it.
    let missing = dir.path().join("missing.json");
    let missing = missing.to_str().unwrap();
    let (p, pl) = s(missing);
    assert_eq!(
        unsafe { gabp_bridge_discover(p, pl, &mut b) },
        GabpStatus::Io
    );
    assert!(last_error().contains("missing.json"), "{}", last_error());

    // A wrong token is the mod's refusal; an endpoint that does not parse is INVALID; nobody there is IO.
    let wrong = "f".repeat(64);
    assert_eq!(
        connect(&game.endpoint, &wrong).0,
        GabpStatus::Remote,
        "{}",
        last_error()
    );
    assert_eq!(connect("carrier-pigeon://x", TOKEN).0, GabpStatus::Invalid);
    assert!(last_error().contains("endpoint"), "{}", last_error());
    let port = support::free_port();
    assert_eq!(
        connect(&format!("tcp://127.0.0.1:{port}"), TOKEN).0,
        GabpStatus::Io
    );
    assert_eq!(
        unsafe { gabp_bridge_connect(std::ptr::null(), 3, std::ptr::null(), 0, &mut b) },
        GabpStatus::Null
    );
}

/// What the callbacks of the next test share: the bridge, and what each saw.
struct Seen {
    bridge: u64,
    own: std::sync::atomic::AtomicU64,
    sender: std::sync::Mutex<mpsc::Sender<String>>,
}

/// Calls the same bridge from inside the callback, then frees its own subscription.
unsafe extern "C" fn call_then_free(user: *mut c_void, _event: *const GabpEvent) {
    let seen = unsafe { &*(user as *const Seen) };
    let (status, answer) = call(seen.bridge, "demo/echo", r#"{"from":"callback"}"#, 5_000);
    let own = seen.own.load(std::sync::atomic::Ordering::Acquire);
    let freed = gabp_subscription_free(own);
    let _ = seen.sender.lock().unwrap().send(format!(
        "{status:?} {} {freed:?}",
        answer.map(|a| a.to_string()).unwrap_or_default()
    ));
}

/// Takes 100 ms per event.
unsafe extern "C" fn slow(user: *mut c_void, _event: *const GabpEvent) {
    std::thread::sleep(Duration::from_millis(100));
    let seen = unsafe { &*(user as *const Seen) };
    let _ = seen.sender.lock().unwrap().send("slow".to_owned());
}

#[test]
fn callbacks_may_call_the_bridge_and_free_themselves_and_never_hold_calls_up() {
    let game = Game::start();
    let (status, b) = connect(&game.endpoint, TOKEN);
    ok(status);
    let (tx, rx) = mpsc::channel();
    let seen = Box::leak(Box::new(Seen {
        bridge: b,
        own: std::sync::atomic::AtomicU64::new(0),
        sender: std::sync::Mutex::new(tx),
    }));
    let user = (seen as *const Seen).cast_mut().cast::<c_void>();
    let (c, cl) = s("player/move");
    let mut sub = 0;
    ok(unsafe { gabp_bridge_subscribe(b, c, cl, Some(call_then_free), user, &mut sub) });
    seen.own.store(sub, std::sync::atomic::Ordering::Release);
    for x in 0..3 {
        game.events.publish("player/move", json!({"x": x})).unwrap();
    }
    let first = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(first, r#"Ok {"from":"callback"} Ok"#);
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "a subscription that freed itself gets no more events"
    );
    assert_eq!(gabp_subscription_free(sub), GabpStatus::Handle);

    // A slow callback: the queue waits for it, calls do not.
    let mut slow_sub = 0;
    ok(unsafe { gabp_bridge_subscribe(b, c, cl, Some(slow), user, &mut slow_sub) });
    for x in 0..30 {
        game.events.publish("player/move", json!({"x": x})).unwrap();
    }
    assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), "slow");
    let (status, answer) = call(b, "demo/echo", r#"{"quick":true}"#, 1_000);
    ok(status);
    assert_eq!(answer.unwrap(), json!({"quick": true}));

    // From a mod's tool callback (a thread that runs async tasks), bridge calls are refused.
    let (status, answer) = call(b, "demo/nested", &format!(r#"{{"bridge":{b}}}"#), 5_000);
    ok(status);
    assert_eq!(answer.unwrap()["status"], GabpStatus::State as i32);

    // Closing ends the slow subscription's callbacks at once; its handle is still freed by the caller.
    ok(gabp_bridge_close(b));
    while rx.try_recv().is_ok() {}
    assert!(
        rx.recv_timeout(Duration::from_millis(400)).is_err(),
        "no callback after close"
    );
    ok(gabp_subscription_free(slow_sub));
}
