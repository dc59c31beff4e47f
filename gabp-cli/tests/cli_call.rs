//! `gabp call` end to end against the demo game: KEY=VALUE params and `--args`, "did you mean" for unknown
//! names, names that cannot be GABP names refused before anything is sent, `--timeout`, subcommand
//! suggestions, `--save-images`, and Ctrl-C sending `tools/cancel` (seen through `gabp record`).

mod cli_support;
mod mod_support;
mod record_support;

use std::time::{Duration, Instant};

use cli_support::{one_error_line, run, text};
use gabp_demo::InProcessGame;
use gabp_record::{Direction, Record, Recording};
use gabp_session::bridge::Bridge;
use mod_support::{Launch, TOKEN};
use record_support::{Gabp, PATIENCE};
use serde_json::{json, Value};

/// A `gabp mod` on a free loopback port with [`TOKEN`]; its endpoint.
fn tcp_mod() -> (mod_support::ModProcess, String) {
    let mut game = Launch::new(&["--token", TOKEN]).spawn(false);
    let endpoint = game.listening_on();
    (game, endpoint)
}

/// `gabp call --connect ENDPOINT --token TOKEN ARGS...`.
fn call(endpoint: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["call", "--connect", endpoint, "--token", TOKEN];
    all.extend_from_slice(args);
    run(&all)
}

fn json_of(out: &std::process::Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

#[test]
fn key_value_pairs_and_args_are_a_tools_arguments() {
    let (_game, endpoint) = tcp_mod();
    let grass = json!({"block": "grass", "x": 3, "y": 4, "z": 3});
    let out = call(&endpoint, &["world/get_block", "x=3", "y=4", "z=3"]);
    assert_eq!(json_of(&out), grass);
    let out = call(
        &endpoint,
        &["--args", r#"{"x": 3, "y": 4}"#, "world/get_block", "z=3"],
    );
    assert_eq!(json_of(&out), grass);
    // A value that is not JSON is a string.
    let out = call(&endpoint, &["demo/echo", "value=steve"]);
    assert_eq!(json_of(&out), json!({"value": "steve"}));
    let out = call(&endpoint, &["demo/echo", r#"value=["a", 1]"#]);
    assert_eq!(json_of(&out), json!({"value": ["a", 1]}));
    // Neither PARAMS_JSON nor pairs.
    let line = one_error_line(&call(&endpoint, &["demo/echo", "value=1", "x"]), TOKEN);
    assert!(line.contains("`x` is not KEY=VALUE"), "{line}");
}

#[test]
fn call_connects_over_a_websocket() {
    let mut game = Launch::new(&["--listen", "ws://127.0.0.1:0", "--token", TOKEN]).spawn(false);
    let endpoint = game.listening_on();
    assert!(endpoint.starts_with("ws://127.0.0.1:"), "{endpoint}");
    let out = call(&endpoint, &["world/get_block", "x=3", "y=4", "z=3"]);
    assert_eq!(
        json_of(&out),
        json!({"block": "grass", "x": 3, "y": 4, "z": 3})
    );
    let line = one_error_line(&call(&endpoint, &["world/get_blok", "x=1"]), TOKEN);
    assert!(line.ends_with("; did you mean world/get_block?"), "{line}");
}

#[test]
fn unknown_names_get_a_suggestion() {
    let (_game, endpoint) = tcp_mod();
    let line = one_error_line(&call(&endpoint, &["world/get_blok", "x=1"]), TOKEN);
    assert!(
        line.starts_with("error: world/get_blok: -32601 ")
            && line.ends_with("; did you mean world/get_block?"),
        "{line}"
    );
    let line = one_error_line(
        &call(&endpoint, &["tools/call", r#"{"name": "demo/ecoh"}"#]),
        TOKEN,
    );
    assert!(
        line.starts_with("error: tools/call: -32400 ")
            && line.ends_with("; did you mean demo/echo?"),
        "{line}"
    );
    let line = one_error_line(&call(&endpoint, &["tools/lst"]), TOKEN);
    assert!(line.ends_with("; did you mean tools/list?"), "{line}");
    // Nothing close: no suggestion.
    let line = one_error_line(&call(&endpoint, &["no/such_method"]), TOKEN);
    assert!(!line.contains("did you mean"), "{line}");

    // A mistyped subcommand: clap's suggestion, exit status 2.
    let out = run(&["cal", "tools/list"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("'call'"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_name_that_cannot_be_a_gabp_name_is_refused_before_connecting() {
    // Nothing listens there: the name is refused first.
    let free_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let nothing_there = format!("tcp://127.0.0.1:{free_port}");
    for name in ["Tools/List", "ping", "world/", "world get"] {
        let line = one_error_line(&call(&nothing_there, &[name]), TOKEN);
        assert!(
            line.starts_with(&format!("error: `{name}` is not a method or tool name"))
                && line.contains("^[a-z][a-z0-9_-]*(/[a-z][a-z0-9_-]*)+$"),
            "{line}"
        );
    }
}

#[test]
fn timeout_bounds_the_wait_for_the_answer() {
    let (_game, endpoint) = tcp_mod();
    let line = one_error_line(
        &call(&endpoint, &["--timeout", "200ms", "demo/sleep", "ms=20000"]),
        TOKEN,
    );
    assert_eq!(
        line,
        "error: demo/sleep: no answer within 200ms (--timeout sets how long to wait)"
    );
    let out = call(&endpoint, &["--timeout", "60", "demo/sleep", "ms=1"]);
    assert_eq!(json_of(&out), json!({"sleptMs": 1}));
    let out = call(&endpoint, &["--timeout", "soon", "tools/list"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("is not a duration"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn save_images_writes_the_png_and_prints_a_note_instead_of_its_data() {
    let (_game, endpoint) = tcp_mod();
    let dir = tempfile::tempdir().expect("tempdir");
    let shots = dir.path().join("shots");
    let shots_arg = shots.display().to_string();
    let out = call(&endpoint, &["--save-images", &shots_arg, "world/render"]);
    let result = json_of(&out);
    let file = shots.join("world_render-1.png");
    assert_eq!(
        text(&out.stderr),
        format!(
            "saved {} ({} bytes)\n",
            file.display(),
            std::fs::metadata(&file).expect("the file").len()
        )
    );
    let bytes = std::fs::read(&file).expect("the png");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes.as_slice()));
    let reader = decoder.read_info().expect("a valid PNG");
    assert_eq!((reader.info().width, reader.info().height), (128, 128));
    let note = result["_content"][0]["data"].as_str().expect("a note");
    assert_eq!(
        note,
        format!("<saved to {}, {} bytes>", file.display(), bytes.len())
    );
    assert_eq!(result["width"], 128);

    // Without the flag, not on a terminal: the data as it came.
    let result = json_of(&call(&endpoint, &["world/render"]));
    let data = result["_content"][0]["data"].as_str().expect("data");
    assert!(data.starts_with("iVBORw0KGgo"), "{data}");
}

/// The `demo/sleep` calls the demo game has executed.
async fn tool_calls(bridge: &Bridge) -> u64 {
    let status = bridge
        .call_tool("demo/status", json!({}))
        .await
        .expect("demo/status");
    status["toolCalls"].as_u64().expect("toolCalls")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_the_tool_call_and_exits_130() {
    let game = InProcessGame::start().await.expect("the demo game");
    let observer = Bridge::builder(game.token.clone())
        .connect(game.handle.endpoint())
        .await
        .expect("connect");
    let to = game.handle.endpoint().to_string();
    let mut recorder = Gabp::start(
        &[
            "record",
            "--to",
            &to,
            "--out",
            "rec.jsonl",
            "--bridge-config",
            "bridge.json",
        ],
        &[("GABP_TOKEN", game.token.expose_secret())],
    );
    let endpoint = recorder.listening_on().to_string();
    let config = recorder.bridge_json(&recorder.path("bridge.json"));

    let mut caller = Gabp::start(
        &["call", "--connect", &endpoint, "demo/sleep", "ms=30000"],
        &[
            ("GABP_TOKEN", config.token.expose_secret()),
            ("RUST_LOG", "off"),
        ],
    );
    // Interrupt once the game runs the call.
    let deadline = Instant::now() + PATIENCE;
    while tool_calls(&observer).await == 0 {
        assert!(
            Instant::now() < deadline,
            "the call never arrived; stderr:\n{}",
            caller.stderr_text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    caller.signal("INT");
    let status = caller.wait();
    assert_eq!(status.code(), Some(130), "{}", caller.stderr_text());
    assert_eq!(
        caller.stderr_text(),
        "cancelled: demo/sleep (tools/cancel sent)"
    );

    recorder.signal("INT");
    assert!(recorder.wait().success(), "{}", recorder.stderr_text());
    let recording = Recording::read(recorder.path("rec.jsonl")).expect("a valid recording");
    let sent = |direction: Direction| -> Vec<serde_json::Map<String, Value>> {
        recording
            .records
            .iter()
            .filter_map(|(_, r)| match r {
                Record::Message {
                    direction: d,
                    message,
                    ..
                } if *d == direction => Some(message.clone()),
                _ => None,
            })
            .collect()
    };
    let requests = sent(Direction::BridgeToMod);
    let sleep_id = requests
        .iter()
        .find(|m| m["method"] == "tools/call" && m["params"]["name"] == "demo/sleep")
        .map(|m| m["id"].clone())
        .expect("the tool call");
    let cancel = requests
        .iter()
        .find(|m| m["method"] == "tools/cancel")
        .expect("a tools/cancel request");
    assert_eq!(cancel["params"]["id"], sleep_id);
    // The mod stopped the call: it answers the cancel `cancelled: true`.
    let answers = sent(Direction::ModToBridge);
    let answer = answers
        .iter()
        .find(|m| m.get("id") == Some(&cancel["id"]))
        .expect("the answer to tools/cancel");
    assert_eq!(answer["result"]["cancelled"], true, "{answer:?}");
    game.handle.shutdown().await;
}
