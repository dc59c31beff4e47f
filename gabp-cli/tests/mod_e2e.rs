//! End-to-end tests of `gabp mod`, the demo game, over TCP, WebSocket, a Unix socket and stdio, driven by a raw
//! client (frames written and read by hand, every frame the mod writes decoded strictly; never our own `Bridge`).

mod mod_support;
mod surface_support;

use std::os::unix::fs::{FileTypeExt, PermissionsExt};

use gabp_testkit::wire::{hello_params, request, BlockingClient};
use gabp_types::{ErrorCode, Message};
use mod_support::{Launch, TOKEN};
use serde_json::json;
use surface_support::exercise_surface;

/// The whole surface over a loopback socket transport (`tcp` or `ws`): the same suite for each.
fn serves_the_whole_surface_and_sigterm_stops_it(listen: &str) {
    let mut m = Launch::new(&["--listen", listen, "--token", TOKEN]).spawn(false);
    let endpoint = m.listening_on();
    let prefix = listen.trim_end_matches('0');
    assert!(
        endpoint.starts_with(prefix) && !endpoint.ends_with(":0"),
        "{endpoint}"
    );
    let mut c = m.connect(&endpoint);
    exercise_surface(&mut c);
    // The mod keeps serving other bridges after one leaves.
    let mut other = m.connect(&endpoint);
    other.hello(TOKEN);
    m.signal("TERM");
    assert!(other.until_closed().is_empty());
    m.assert_clean_exit();
    assert!(m.more_stdout().is_empty(), "{:?}", m.more_stdout());
}

#[test]
fn tcp_serves_the_whole_surface_and_sigterm_stops_it() {
    serves_the_whole_surface_and_sigterm_stops_it("tcp://127.0.0.1:0");
}

#[test]
fn websocket_serves_the_whole_surface_and_sigterm_stops_it() {
    serves_the_whole_surface_and_sigterm_stops_it("ws://127.0.0.1:0");
}

#[test]
fn unix_socket_serves_the_whole_surface_and_sigterm_removes_the_socket() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("voxel.sock");
    let listen = format!("unix://{}", path.display());
    let mut m = Launch::new(&["--listen", &listen, "--token", TOKEN]).spawn(false);
    assert_eq!(m.listening_on(), listen);
    let meta = std::fs::metadata(&path).expect("socket exists");
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let mut c = m.connect(&listen);
    exercise_surface(&mut c);
    m.signal("TERM");
    m.assert_clean_exit();
    assert!(!path.exists(), "the socket file is removed on SIGTERM");
}

#[test]
fn listen_unix_makes_a_fresh_socket_and_sigint_removes_it() {
    let mut m = Launch::new(&["--listen", "unix", "--token", TOKEN]).spawn(false);
    let endpoint = m.listening_on();
    let path = std::path::PathBuf::from(endpoint.strip_prefix("unix://").expect("unix endpoint"));
    assert!(
        path.starts_with(m.home.path()),
        "{endpoint} in XDG_RUNTIME_DIR"
    );
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    assert!(name.starts_with("gabp-") && name.len() > 30, "{name}");
    let mut c = m.connect(&endpoint);
    c.hello(TOKEN);
    c.ok("session/ping", None);
    m.signal("INT");
    assert!(c.until_closed().is_empty());
    m.assert_clean_exit();
    assert!(!path.exists(), "the socket file is removed on SIGINT");
}

#[test]
fn stdio_serves_the_whole_surface_and_exits_after_goodbye() {
    let mut m = Launch::new(&["--stdio", "--token", TOKEN]).spawn(true);
    let mut c = m.stdio();
    exercise_surface(&mut c);
    m.assert_clean_exit();
}

#[test]
fn stdio_exits_when_stdin_closes() {
    let mut m = Launch::new(&["--stdio", "--token", TOKEN]).spawn(true);
    let mut c = m.stdio();
    c.hello(TOKEN);
    c.ok(
        "tools/call",
        Some(json!({"name": "demo/echo", "arguments": {"value": 1}})),
    );
    c.shutdown_write();
    assert!(c.until_closed().is_empty());
    m.assert_clean_exit();
    // Only frames went to stdout (the raw client would have failed on anything else); logs went to stderr.
    assert!(m.stderr_text().contains("serving the demo game on stdio"));
}

#[test]
fn stdio_exits_when_stdin_closes_before_hello() {
    let mut m = Launch::new(&["--stdio", "--token", TOKEN]).spawn(true);
    let mut c = m.stdio();
    c.shutdown_write();
    assert!(c.until_closed().is_empty());
    m.assert_clean_exit();
}

#[test]
fn wrong_token_is_refused_and_the_connection_closed() {
    let mut m = Launch::new(&["--listen", "tcp://127.0.0.1:0", "--token", TOKEN]).spawn(false);
    let endpoint = m.listening_on();
    let mut c = m.connect(&endpoint);
    let wrong = "0000000000000000000000000000000000000000000000000000000000000000";
    let e = c.err("session/hello", Some(hello_params(wrong)));
    assert_eq!(e.code, ErrorCode::AUTHENTICATION_FAILED);
    assert!(!e.message.contains(wrong) && !e.message.contains(TOKEN));
    assert!(c.until_closed().is_empty(), "closed after -32101");
    // The mod still serves the right token.
    let mut good = m.connect(&endpoint);
    good.hello(TOKEN);
    m.signal("TERM");
    m.assert_clean_exit();
    assert!(
        !m.stderr_text().contains(TOKEN),
        "the token is never logged"
    );

    // Over stdio, the refused bridge was the only one: the mod exits.
    let mut m = Launch::new(&["--stdio", "--token", TOKEN]).spawn(true);
    let mut c = m.stdio();
    let e = c.err("session/hello", Some(hello_params(wrong)));
    assert_eq!(e.code, ErrorCode::AUTHENTICATION_FAILED);
    assert!(c.until_closed().is_empty());
    m.assert_clean_exit();
}

/// Sends `demo/sleep` and a ping; once the ping is answered the mod has read the sleep too.
fn sleep_in_flight(c: &mut BlockingClient) -> gabp_types::MessageId {
    let (sleep, request) = request(
        "tools/call",
        Some(json!({"name": "demo/sleep", "arguments": {"ms": 1500}})),
    );
    c.send_value(&request);
    c.ok("session/ping", None);
    sleep
}

#[test]
fn sigterm_answers_calls_in_flight_before_closing() {
    let mut m = Launch::new(&["--listen", "tcp://127.0.0.1:0", "--token", TOKEN]).spawn(false);
    let endpoint = m.listening_on();
    let mut c = m.connect(&endpoint);
    c.hello(TOKEN);
    let sleep = sleep_in_flight(&mut c);
    m.signal("TERM");
    let answer = c.response(sleep);
    assert_eq!(answer.result(), Some(&json!({"sleptMs": 1500})));
    assert!(c.until_closed().is_empty());
    m.assert_clean_exit();

    let mut m = Launch::new(&["--stdio", "--token", TOKEN]).spawn(true);
    let mut c = m.stdio();
    c.hello(TOKEN);
    let sleep = sleep_in_flight(&mut c);
    m.signal("TERM");
    let answer = c.response(sleep);
    assert_eq!(answer.result(), Some(&json!({"sleptMs": 1500})));
    assert!(c.until_closed().is_empty());
    m.assert_clean_exit();
}

#[test]
fn frames_pass_strict_decoding_even_for_bad_input() {
    // Garbage and oversized input are answered with strictly valid error responses; the session goes on.
    let mut m = Launch::new(&["--stdio", "--token", TOKEN]).spawn(true);
    let mut c = m.stdio();
    c.send_frame(b"not json!");
    match c.next_message() {
        Some(Message::Response(r)) => {
            assert_eq!(
                r.error_object().map(|e| e.code),
                Some(ErrorCode::PARSE_ERROR)
            );
        }
        other => panic!("{other:?}"),
    }
    c.hello(TOKEN);
    c.ok("session/ping", None);
    c.shutdown_write();
    assert!(c.until_closed().is_empty());
    m.assert_clean_exit();
}

#[test]
fn hostile_glob_patterns_are_refused_without_noise() {
    // SPEC/1.0 gabp.md §4.4: a glob past the mod's bounds is -32602; nothing panics, stderr stays small.
    let mut m = Launch::new(&["--stdio", "--token", TOKEN]).spawn(true);
    let mut c = m.stdio();
    c.hello(TOKEN);
    let stars = "*".repeat(87_380);
    for (method, params, pointer) in [
        (
            "tools/list",
            json!({"filter": {"namePattern": stars}}),
            "/params/filter/namePattern",
        ),
        (
            "resources/list",
            json!({"pattern": stars}),
            "/params/pattern",
        ),
        (
            "events/subscribe",
            json!({"channels": [stars]}),
            "/params/channels/0",
        ),
    ] {
        let e = c.err(method, Some(params));
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{method}: {e:?}");
        assert!(e.message.contains(pointer), "{method}: {}", e.message);
        assert!(e.message.len() < 200, "{method}: {}", e.message);
    }
    c.ok("session/ping", None);
    c.shutdown_write();
    assert!(c.until_closed().is_empty());
    m.assert_clean_exit();
    let stderr = m.stderr_text();
    assert!(stderr.len() < 4096, "{} bytes on stderr", stderr.len());
}
