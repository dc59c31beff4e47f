//! `gabp replay` end to end (SPEC/1.0 recording.md §6): recordings made in the test with `gabp record` from the
//! demo game, replayed as a mod to the raw client of `gabp_testkit::wire`, and as the bridge against live demo
//! games.

mod record_support;

use std::process::Command;

use gabp_demo::InProcessGame;
use gabp_testkit::wire::RawClient;
use gabp_transport::BridgeConfig;
use serde_json::{json, Value};

use record_support::{Gabp, PATIENCE};

/// A session with the demo game, recorded: hello, a subscription, a teleport (and its event), a block and the
/// status (which counts the calls). Returns the recording's path (in `dir`) and what the mod answered.
async fn recorded_session(dir: &std::path::Path) -> (std::path::PathBuf, Vec<Value>) {
    let game = InProcessGame::start().await.expect("demo game");
    let to = game.handle.endpoint().to_string();
    let args = [
        "record",
        "--to",
        &to,
        "--out",
        "rec.jsonl",
        "--bridge-config",
        "bridge.json",
    ];
    let mut recorder = Gabp::start(&args, &[("GABP_TOKEN", game.token.expose_secret())]);
    recorder.listening_on();
    let config = recorder.bridge_json(&recorder.path("bridge.json"));
    let mut client = RawClient::connect(&config.endpoint).await.expect("connect");
    client.set_patience(PATIENCE);
    let mut answers = vec![client.hello(config.token.expose_secret()).await];
    answers.push(
        client
            .ok(
                "events/subscribe",
                Some(json!({"channels": ["player/move"]})),
            )
            .await,
    );
    answers.push(client.ok("tools/call", Some(teleport(2))).await);
    answers.push(serde_json::to_value(client.next_event().await).expect("an event as JSON"));
    let block = json!({"name": "world/get_block", "arguments": {"x": 0, "y": 2, "z": 0}});
    answers.push(client.ok("tools/call", Some(block)).await);
    answers.push(
        client
            .ok(
                "tools/call",
                Some(json!({"name": "demo/status", "arguments": {}})),
            )
            .await,
    );
    client.shutdown_write().await;
    client.until_closed().await;
    recorder.signal("TERM");
    assert!(recorder.wait().success(), "{}", recorder.stderr_text());
    let path = dir.join("demo.jsonl");
    std::fs::copy(recorder.path("rec.jsonl"), &path).expect("copy the recording");
    (path, answers)
}

fn teleport(x: i64) -> Value {
    json!({"name": "player/teleport", "arguments": {"x": x, "y": 5, "z": 1}})
}

/// Serves a recording with `gabp replay --as-mod`: the welcome and every answer as recorded, events after
/// the request that caused them; unmatched requests answered with the closest recorded one and the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_as_mod_answers_like_the_recorded_mod() {
    let dir = tempfile::tempdir().unwrap();
    let (path, recorded) = recorded_session(dir.path()).await;
    let path = path.to_str().unwrap().to_owned();
    let args = [
        "replay",
        &path,
        "--as-mod",
        "--no-timing",
        "--bridge-config",
        "bridge.json",
    ];
    let mut replay = Gabp::start(&args, &[]);
    let endpoint = replay.listening_on();
    let config = replay.bridge_json(&replay.path("bridge.json"));
    assert_eq!(config.endpoint, endpoint);

    let mut client = RawClient::connect(&endpoint).await.expect("connect");
    client.set_patience(PATIENCE);
    assert_eq!(
        client.hello(config.token.expose_secret()).await,
        recorded[0]
    );
    assert_eq!(
        client
            .ok(
                "events/subscribe",
                Some(json!({"channels": ["player/move"]}))
            )
            .await,
        recorded[1]
    );
    assert_eq!(
        client.ok("tools/call", Some(teleport(2))).await,
        recorded[2]
    );
    assert_eq!(
        serde_json::to_value(client.next_event().await).unwrap(),
        recorded[3]
    );

    let other = client.err("tools/call", Some(teleport(9))).await;
    assert_eq!(other.code.0, -32602);
    assert!(
        other
            .message
            .contains("/params/arguments/x: recorded 2, got 9"),
        "{}",
        other.message
    );
    assert!(other.message.contains("player/teleport") || other.message.contains("tools/call"));
    let line = other
        .data
        .as_ref()
        .and_then(|d| d["closestLine"].as_u64())
        .expect("closestLine");
    assert!(
        other.message.contains(&format!("line {line}")),
        "{}",
        other.message
    );
    let unrecorded = client.err("state/get", None).await;
    assert_eq!(unrecorded.code.0, -32601);
    assert!(
        unrecorded.message.contains("none was recorded"),
        "{}",
        unrecorded.message
    );

    // The status was recorded after two calls; a replay answers the same, whatever happened since.
    let status = client
        .ok(
            "tools/call",
            Some(json!({"name": "demo/status", "arguments": {}})),
        )
        .await;
    assert_eq!(status, recorded[5]);
    replay.signal("TERM");
    assert!(replay.wait().success(), "{}", replay.stderr_text());
}

/// `gabp replay --as-bridge`: nothing differs against a fresh demo game (ids, seq and timestamps aside), exit
/// 0; against one whose state moved on, each difference is named with its line and field, exit 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_as_bridge_reports_differences_from_the_recording() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = recorded_session(dir.path()).await;
    let path = path.to_str().unwrap();
    let game = InProcessGame::start().await.expect("demo game");
    let endpoint = game.handle.endpoint().to_string();
    let token = game.token.expose_secret().to_owned();
    let replay = |extra: &[&str]| {
        let mut args = vec!["replay", path, "--as-bridge", "--connect", &endpoint];
        args.extend_from_slice(extra);
        let mut replay = Gabp::start(&args, &[("GABP_TOKEN", &token)]);
        let status = replay.wait();
        (
            status.code(),
            replay.more_stdout().join("\n"),
            replay.stderr_text(),
        )
    };

    let (code, stdout, stderr) = replay(&[]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.ends_with("compared 5 answers and 1 events: 0 differences"),
        "{stdout}"
    );

    // The same calls again on the same game: demo/status now counts the first replay's calls too.
    let (code, stdout, stderr) = replay(&[]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("the answer to tools/call differs"),
        "{stdout}"
    );
    assert!(
        stdout.contains("/result/toolCalls: recorded 2, got 4"),
        "{stdout}"
    );
    assert!(stdout.ends_with("1 difference"), "{stdout}");

    let (code, stdout, _) = replay(&["--ignore", "/result/toolCalls"]);
    assert_eq!(code, Some(0), "{stdout}");
}

/// A recording whose second line is 100 MB (a sparse file) is refused at once, naming the line, without
/// reading it whole.
#[test]
fn a_hundred_megabyte_line_is_refused_with_its_line_number() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    let header = r#"{"kind":"header","format":"gabp-recording","version":1,"recorder":{"name":"t","version":"0"},"redaction":{"hello":[],"pointers":[],"tokens":true,"replacement":"[redacted]"}}"#;
    std::fs::write(&path, format!("{header}\n")).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(header.len() as u64 + 1 + 100 * 1024 * 1024)
        .unwrap();
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_gabp"))
        .args([
            "replay",
            path.to_str().unwrap(),
            "--as-mod",
            "--no-bridge-config",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("line 2: longer than 8388608 bytes"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(started.elapsed() < PATIENCE);
}

/// Both commands document themselves, with examples.
#[test]
fn help_has_examples() {
    for command in ["record", "replay"] {
        let out = Command::new(env!("CARGO_BIN_EXE_gabp"))
            .args([command, "--help"])
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && help.contains("Examples:"), "{help}");
        assert!(help.contains(&format!("gabp {command} ")), "{help}");
    }
}

/// Reads the bridge.json `gabp replay --as-mod` wrote with a token from GABP_TOKEN.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_as_mod_takes_its_token_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = recorded_session(dir.path()).await;
    let token = "7265706c61792d746f6b656e2d666f722d74657374732d6f6e6c792d30313233";
    let path = path.to_str().unwrap().to_owned();
    let mut replay = Gabp::start(&["replay", &path, "--as-mod"], &[("GABP_TOKEN", token)]);
    let endpoint = replay.listening_on();
    let config: BridgeConfig = replay.bridge_json(&replay.path("gabp/bridge.json"));
    assert_eq!(config.endpoint, endpoint);
    assert!(config.token.verify(token));
    replay.signal("INT");
    assert!(replay.wait().success(), "{}", replay.stderr_text());
}
