//! Resources of a mod built through the C ABI: text and binary, answered at once or later, read by a
//! gabp-session bridge with `resources/list` and `resources/read`.
#![allow(clippy::unwrap_used, clippy::undocumented_unsafe_blocks)]

mod support;

use std::ffi::{c_char, c_void};

use base64::Engine as _;
use gabp::*;
use gabp_session::Bridge;
use gabp_transport::{Endpoint, Token};
use gabp_types::methods::ResourcesListParams;
use serde_json::{json, Value};
use support::{free_port, last_error, ok, s, TOKEN};

const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0xff];

/// `gabp://game/world`: text, answered inside the callback; a JSON reply is refused first.
unsafe extern "C" fn world(_user: *mut c_void, call: u64) {
    let (p, n) = s("{}");
    assert_eq!(unsafe { gabp_call_reply(call, p, n) }, GabpStatus::State);
    assert!(
        last_error().contains("gabp_call_reply_resource"),
        "{}",
        last_error()
    );
    // A text resource's content must be UTF-8.
    let bad = [b'{', 0xff];
    assert_eq!(
        unsafe { gabp_call_reply_resource(call, bad.as_ptr(), bad.len()) },
        GabpStatus::Utf8
    );
    let text = r#"{"size":16,"name":"Ödland"}"#;
    ok(unsafe { gabp_call_reply_resource(call, text.as_ptr(), text.len()) });
    assert_eq!(
        unsafe { gabp_call_reply_resource(call, text.as_ptr(), text.len()) },
        GabpStatus::CallEnded
    );
}

/// `gabp://mod/icon`: binary, answered later from a thread of its own.
unsafe extern "C" fn icon(_user: *mut c_void, call: u64) {
    std::thread::spawn(move || {
        ok(unsafe { gabp_call_reply_resource(call, PNG.as_ptr(), PNG.len()) });
    });
}

/// `gabp://game/save`: fails.
unsafe extern "C" fn save(_user: *mut c_void, call: u64) {
    let (p, n) = s("no save loaded");
    ok(unsafe { gabp_call_fail(call, 0, p, n) });
}

/// `demo/echo`: a tool call is not answered with resource content.
unsafe extern "C" fn echo(_user: *mut c_void, call: u64, args: *const c_char, len: usize) {
    assert_eq!(
        unsafe { gabp_call_reply_resource(call, PNG.as_ptr(), PNG.len()) },
        GabpStatus::State
    );
    assert!(last_error().contains("gabp_call_reply"), "{}", last_error());
    ok(unsafe { gabp_call_reply(call, args, len) });
}

#[allow(clippy::too_many_arguments)]
fn add(
    m: u64,
    uri: &str,
    name: &str,
    description: &str,
    mime: &str,
    flags: u32,
    read: GabpResourceFn,
) -> GabpStatus {
    let (u, ul) = s(uri);
    let (n, nl) = s(name);
    let (d, dl) = s(description);
    let (t, tl) = s(mime);
    unsafe {
        gabp_mod_add_resource(
            m,
            u,
            ul,
            n,
            nl,
            d,
            dl,
            t,
            tl,
            flags,
            read,
            std::ptr::null_mut(),
        )
    }
}

#[test]
fn a_c_game_serves_text_and_binary_resources() {
    let home = tempfile::tempdir().unwrap();
    let port = free_port();
    std::env::set_var("HOME", home.path());
    std::env::set_var("XDG_CONFIG_HOME", home.path());
    std::env::set_var("GABP_SERVER_PORT", port.to_string());
    std::env::set_var("GABP_TOKEN", TOKEN);
    std::env::remove_var("GABS_GAME_ID");

    let mut m = 0;
    let (a, al) = s("restest");
    let (v, vl) = s("1.0.0");
    ok(unsafe { gabp_mod_new(a, al, v, vl, &mut m) });
    ok(add(
        m,
        "gabp://game/world",
        "World",
        "Size and name of the world",
        "application/json",
        0,
        Some(world),
    ));
    ok(add(
        m,
        "gabp://mod/icon",
        "Icon",
        "",
        "image/png",
        GABP_RESOURCE_BINARY,
        Some(icon),
    ));
    ok(add(m, "gabp://game/save", "Save", "", "", 0, Some(save)));
    let (n, nl) = s("demo/echo");
    ok(unsafe {
        gabp_mod_add_tool(
            m,
            n,
            nl,
            std::ptr::null(),
            0,
            std::ptr::null(),
            0,
            0,
            Some(echo),
            std::ptr::null_mut(),
        )
    });
    // Bad input: codes with messages.
    assert_eq!(add(m, "gabp://x/y", "X", "", "", 0, None), GabpStatus::Null);
    assert_eq!(
        add(m, "gabp://x/y", "X", "", "", 8, Some(save)),
        GabpStatus::Invalid
    );
    assert!(last_error().contains("gabp://x/y"), "{}", last_error());
    assert_eq!(add(m, "", "X", "", "", 0, Some(save)), GabpStatus::Invalid);
    assert_eq!(
        add(m, "gabp://x/y", "", "", "", 0, Some(save)),
        GabpStatus::Invalid
    );
    ok(gabp_mod_start(m));
    assert_eq!(
        add(m, "gabp://late/one", "Late", "", "", 0, Some(save)),
        GabpStatus::State
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let bridge = Bridge::connect(&Endpoint::tcp_v4(port), Token::new(TOKEN).unwrap())
            .await
            .unwrap();
        let listed = bridge
            .list_resources(ResourcesListParams::default())
            .await
            .unwrap();
        let listed = serde_json::to_value(&listed).unwrap();
        let world_info = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["uri"] == "gabp://game/world")
            .cloned()
            .unwrap();
        assert_eq!(world_info["name"], "World");
        assert_eq!(world_info["mimeType"], "application/json");
        assert_eq!(world_info["description"], "Size and name of the world");

        let read = bridge.read_resource("gabp://game/world").await.unwrap();
        assert_eq!(
            read.content,
            Value::String(r#"{"size":16,"name":"Ödland"}"#.to_owned())
        );
        let read =
            serde_json::to_value(bridge.read_resource("gabp://mod/icon").await.unwrap()).unwrap();
        assert_eq!(read["encoding"], "base64");
        assert_eq!(read["mimeType"], "image/png");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(read["content"].as_str().unwrap())
            .unwrap();
        assert_eq!(bytes, PNG);
        let failed = bridge.read_resource("gabp://game/save").await.unwrap_err();
        assert!(failed.to_string().contains("no save loaded"), "{failed}");
        assert_eq!(
            bridge
                .call_tool("demo/echo", json!({"a": 1}))
                .await
                .unwrap(),
            json!({"a": 1})
        );
    });
    ok(gabp_mod_free(m));
}
