//! The mod side of the C ABI, driven as a C game would drive it (extern "C" callbacks, handles, a game loop
//! calling pump) and checked with a gabp-session bridge over TCP.
#![allow(clippy::unwrap_used, unsafe_code, clippy::undocumented_unsafe_blocks)]

mod support;

use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use futures::StreamExt;
use gabp::*;
use gabp_session::bridge::SubscriptionItem;
use gabp_session::Bridge;
use gabp_transport::{Endpoint, Token};
use gabp_types::methods::{AttentionCurrent, AttentionCurrentParams};
use serde_json::{json, Value};
use support::{free_port, last_error, ok, s, TOKEN};

fn args_of(args: *const c_char, len: usize) -> Value {
    let bytes = unsafe { std::slice::from_raw_parts(args.cast::<u8>(), len) };
    serde_json::from_slice(bytes).unwrap()
}

/// `demo/echo`: answers its arguments later, from a thread of its own.
unsafe extern "C" fn echo(_user: *mut c_void, call: u64, args: *const c_char, len: usize) {
    let value = args_of(args, len)["value"].to_string();
    std::thread::spawn(move || {
        let answer = format!("{{\"value\":{value}}}");
        let (p, n) = s(&answer);
        ok(unsafe { gabp_call_reply(call, p, n) });
        // A second answer is refused, never a crash.
        assert_eq!(
            unsafe { gabp_call_reply(call, p, n) },
            GabpStatus::CallEnded
        );
        assert!(last_error().contains("already"), "{}", last_error());
    });
}

/// `world/tick`: on the main thread, counts the calls in the `user` counter.
unsafe extern "C" fn tick(user: *mut c_void, call: u64, _args: *const c_char, _len: usize) {
    let count = unsafe { &*(user as *const AtomicU64) };
    let n = count.fetch_add(1, Ordering::SeqCst) + 1;
    let answer = format!("{{\"ticks\":{n}}}");
    let (p, l) = s(&answer);
    ok(unsafe { gabp_call_reply(call, p, l) });
}

/// `demo/forget`: returns without answering, on the main thread.
unsafe extern "C" fn forget(_user: *mut c_void, _call: u64, _args: *const c_char, _len: usize) {}

/// `demo/fail`: fails with a code and message, and answers bad JSON first.
unsafe extern "C" fn fail(_user: *mut c_void, call: u64, _args: *const c_char, _len: usize) {
    let (p, n) = s("{not json");
    assert_eq!(unsafe { gabp_call_reply(call, p, n) }, GabpStatus::Json);
    let (p, n) = s("the chunk is not loaded");
    ok(unsafe { gabp_call_fail(call, -32010, p, n) });
}

fn add_tool(
    m: u64,
    name: &str,
    schema: &str,
    flags: u32,
    f: GabpToolFn,
    user: *mut c_void,
) -> GabpStatus {
    let (n, nl) = s(name);
    let (d, dl) = s("A test tool. It does one thing.");
    let (sc, scl) = s(schema);
    unsafe { gabp_mod_add_tool(m, n, nl, d, dl, sc, scl, flags, f, user) }
}

#[test]
fn a_c_game_serves_tools_events_and_main_thread_calls() {
    let home = tempfile::tempdir().unwrap();
    let port = free_port();
    let token = TOKEN;
    std::env::set_var("HOME", home.path());
    std::env::set_var("XDG_CONFIG_HOME", home.path());
    std::env::set_var("GABP_SERVER_PORT", port.to_string());
    std::env::set_var("GABP_TOKEN", token);
    std::env::remove_var("GABS_GAME_ID");

    assert_eq!(gabp_abi_version(), GABP_ABI_VERSION);
    let mut m = 0;
    let (a, al) = s("ctest");
    let (v, vl) = s("1.0.0");
    ok(unsafe { gabp_mod_new(a, al, v, vl, &mut m) });
    let ticks = Box::leak(Box::new(AtomicU64::new(0)));
    let echo_schema = r#"{"type":"object","properties":{"value":{}},"required":["value"]}"#;
    ok(add_tool(
        m,
        "demo/echo",
        echo_schema,
        GABP_TOOL_READ_ONLY,
        Some(echo),
        std::ptr::null_mut(),
    ));
    ok(add_tool(
        m,
        "world/tick",
        "",
        GABP_TOOL_MAIN_THREAD,
        Some(tick),
        (ticks as *const AtomicU64).cast_mut().cast(),
    ));
    ok(add_tool(
        m,
        "demo/forget",
        "",
        GABP_TOOL_MAIN_THREAD,
        Some(forget),
        std::ptr::null_mut(),
    ));
    ok(add_tool(
        m,
        "demo/fail",
        "",
        0,
        Some(fail),
        std::ptr::null_mut(),
    ));
    let (c, cl) = s("player/move");
    ok(unsafe { gabp_mod_add_channel(m, c, cl) });
    ok(gabp_mod_enable_attention(m));
    assert_eq!(gabp_mod_enable_attention(m), GabpStatus::State);

    // Bad input is an error code with a message, never a crash.
    assert_eq!(
        add_tool(m, "x/y", "[1]", 0, Some(echo), std::ptr::null_mut()),
        GabpStatus::Json
    );
    assert!(last_error().contains("input schema"), "{}", last_error());
    assert_eq!(
        add_tool(m, "x/y", "", 0, None, std::ptr::null_mut()),
        GabpStatus::Null
    );
    assert_eq!(
        add_tool(m, "x/y", "", 64, Some(echo), std::ptr::null_mut()),
        GabpStatus::Invalid
    );
    let bad = [b'a', 0xff];
    assert_eq!(
        unsafe { gabp_mod_add_channel(m, bad.as_ptr().cast(), 2) },
        GabpStatus::Utf8
    );
    assert_eq!(
        unsafe { gabp_mod_add_channel(m, std::ptr::null(), 4) },
        GabpStatus::Null
    );

    ok(gabp_mod_start(m));
    assert_eq!(gabp_mod_start(m), GabpStatus::State);
    assert_eq!(
        add_tool(m, "late/tool", "", 0, Some(echo), std::ptr::null_mut()),
        GabpStatus::State
    );
    let mut endpoint = GabpString {
        ptr: std::ptr::null_mut(),
        len: 0,
    };
    ok(unsafe { gabp_mod_endpoint(m, &mut endpoint) });
    let text = unsafe { std::slice::from_raw_parts(endpoint.ptr.cast::<u8>(), endpoint.len) };
    assert_eq!(
        std::str::from_utf8(text).unwrap(),
        format!("tcp://127.0.0.1:{port}")
    );
    unsafe { gabp_string_free(&mut endpoint) };
    assert!(endpoint.ptr.is_null());
    unsafe { gabp_string_free(&mut endpoint) };

    // The game loop: waits for main-thread work and pumps it.
    let stop = Arc::new(AtomicBool::new(false));
    let game = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Acquire) {
                let mut work = false;
                ok(unsafe { gabp_mod_wait(m, 50_000, &mut work) });
                ok(unsafe { gabp_mod_pump(m, 2_000, std::ptr::null_mut()) });
            }
        })
    };

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let bridge = Bridge::connect(&Endpoint::tcp_v4(port), Token::new(token).unwrap())
            .await
            .unwrap();
        let tools = bridge.tools().await.unwrap();
        let echo_tool = tools
            .iter()
            .find(|t| t.name.as_str() == "demo/echo")
            .unwrap();
        assert!(echo_tool.has_tag("read-only"));

        let answer = bridge
            .call_tool("demo/echo", json!({"value": [1, "two"]}))
            .await
            .unwrap();
        assert_eq!(answer, json!({"value": [1, "two"]}));
        // The input schema is checked before the callback runs.
        let refused = bridge.call_tool("demo/echo", json!({})).await.unwrap_err();
        assert!(refused.to_string().contains("value"), "{refused}");

        assert_eq!(
            bridge.call_tool("world/tick", json!({})).await.unwrap(),
            json!({"ticks": 1})
        );
        assert_eq!(
            bridge.call_tool("world/tick", json!({})).await.unwrap(),
            json!({"ticks": 2})
        );
        let forgot = bridge
            .call_tool("demo/forget", json!({}))
            .await
            .unwrap_err();
        assert!(forgot.to_string().contains("without answering"), "{forgot}");
        let failed = bridge.call_tool("demo/fail", json!({})).await.unwrap_err();
        assert!(
            failed.to_string().contains("the chunk is not loaded"),
            "{failed}"
        );
        assert_eq!(failed.code().map(|c| c.0), Some(-32010), "{failed:?}");

        let mut events = bridge.subscribe(["player/move"]).await.unwrap();
        let (c, cl) = s("player/move");
        let (p, pl) = s(r#"{"x":3}"#);
        let mut seq = 0;
        ok(unsafe { gabp_mod_publish(m, c, cl, p, pl, &mut seq) });
        let Some(Ok(SubscriptionItem::Event(event))) = events.next().await else {
            panic!("no event")
        };
        assert_eq!(event.payload, json!({"x": 3}));
        assert_eq!(event.seq, seq);
        // An attention item is open, blocking, until the game resolves it.
        let (msg, ml) = s("the save file is corrupt");
        let mut id = GabpString {
            ptr: std::ptr::null_mut(),
            len: 0,
        };
        ok(unsafe { gabp_attention_open(m, GabpSeverity::Error as i32, msg, ml, true, &mut id) });
        let opened = unsafe { std::slice::from_raw_parts(id.ptr.cast::<u8>(), id.len) };
        let opened = std::str::from_utf8(opened).unwrap().to_owned();
        unsafe { gabp_string_free(&mut id) };
        assert_eq!(
            unsafe { gabp_attention_open(m, 9, msg, ml, true, std::ptr::null_mut()) },
            GabpStatus::Invalid
        );
        let current = bridge
            .call::<AttentionCurrent>(&AttentionCurrentParams::default())
            .await
            .unwrap();
        let item = current.attention.expect("an open item");
        assert_eq!(item.attention_id.as_str(), opened);
        assert!(item.blocking);
        ok(gabp_attention_resolve(m));
        let current = bridge
            .call::<AttentionCurrent>(&AttentionCurrentParams::default())
            .await
            .unwrap();
        assert!(current.attention.is_none());

        let (u, ul) = s("no/such");
        assert_eq!(
            unsafe { gabp_mod_publish(m, u, ul, p, pl, std::ptr::null_mut()) },
            GabpStatus::Invalid
        );

        // The game loop ends with a main-thread call waiting for it: stopping the mod answers the call at
        // once, not at its time limit.
        stop.store(true, Ordering::Release);
        ok(gabp_mod_wake(m));
        game.join().unwrap();
        let waiting = tokio::spawn({
            let bridge = bridge.clone();
            async move { bridge.call_tool("world/tick", json!({})).await }
        });
        let mut work = false;
        while !work {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            ok(unsafe { gabp_mod_wait(m, 0, &mut work) });
        }
        let (stopped, stopping) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || stopped.send(gabp_mod_stop(m)));
        let refused = waiting.await.unwrap().unwrap_err();
        let error = refused
            .error_object()
            .unwrap_or_else(|| panic!("{refused:?}"));
        assert_eq!(error.code.0, -32401, "{refused:?}");
        assert_eq!(error.data.as_ref().unwrap()["reason"], "shutting_down");
        ok(stopping.await.unwrap());
        assert_eq!(
            ticks.load(Ordering::SeqCst),
            2,
            "the waiting call did not run"
        );
    });

    ok(gabp_mod_free(m));
    // A freed handle is an error that says so.
    assert_eq!(gabp_mod_start(m), GabpStatus::Handle);
    assert!(last_error().contains("already freed"), "{}", last_error());
    assert_eq!(gabp_mod_stop(12_345_678), GabpStatus::Handle);
    let mut cancelled = false;
    assert_eq!(
        unsafe { gabp_call_is_cancelled(987_654_321, &mut cancelled) },
        GabpStatus::Handle
    );
}
