//! `gabp record` and `gabp replay` end to end (SPEC/1.0 recording.md): the real binary between the demo game
//! (served in this process) and the raw client of `gabp_testkit::wire`.

mod record_support;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use gabp_demo::InProcessGame;
use gabp_record::{Direction, Record, Recording, Side};
use gabp_testkit::wire::{self, RawClient};
use gabp_transport::{BridgeConfig, Endpoint};
use serde_json::{json, Value};

use record_support::{after_first_frame, Gabp, Tap, PATIENCE};

/// `gabp record --to MOD --out rec.jsonl --bridge-config bridge.json EXTRA...`, presenting `token` to the mod;
/// the recorder and the bridge.json it wrote.
fn record(to: &Endpoint, token: &str, extra: &[&str]) -> (Gabp, BridgeConfig) {
    let to = to.to_string();
    let mut args = vec![
        "record",
        "--to",
        &to,
        "--out",
        "rec.jsonl",
        "--bridge-config",
        "bridge.json",
    ];
    args.extend_from_slice(extra);
    let recorder = Gabp::start(&args, &[("GABP_TOKEN", token)]);
    let endpoint = recorder.listening_on();
    let config = recorder.bridge_json(&recorder.path("bridge.json"));
    assert_eq!(config.endpoint, endpoint);
    (recorder, config)
}

async fn client(config: &BridgeConfig) -> RawClient {
    let mut client = RawClient::connect(&config.endpoint).await.expect("connect");
    client.set_patience(PATIENCE);
    client.hello(config.token.expose_secret()).await;
    client
}

fn teleport(x: i64) -> Value {
    json!({"name": "player/teleport", "arguments": {"x": x, "y": 5, "z": 1}})
}

/// Ends the recorder with `signal`; it must exit 0, leaving no process behind. The recording it wrote.
fn stop(recorder: &mut Gabp, signal: &str) -> Recording {
    recorder.signal(signal);
    let status = recorder.wait();
    assert!(
        status.success(),
        "{status}; stderr:\n{}",
        recorder.stderr_text()
    );
    Recording::read(recorder.path("rec.jsonl")).expect("a valid recording")
}

fn messages(recording: &Recording, direction: Direction) -> Vec<&serde_json::Map<String, Value>> {
    recording
        .records
        .iter()
        .filter_map(|(_, r)| match r {
            Record::Message {
                direction: d,
                message,
                ..
            } if *d == direction => Some(message),
            _ => None,
        })
        .collect()
}

/// The bytes on both sides of the recorder are the same, pipelined calls and events included. The hello is
/// left out: the recorder rewrites it to carry the mod's token (SPEC/1.0 recording.md §5); everything after it
/// must be identical, byte for byte, in both directions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wire_is_unchanged_through_the_recorder_after_the_hello() {
    let game = InProcessGame::start().await.expect("demo game");
    let mod_tap = Tap::start(game.handle.endpoint().clone()).await;
    let (mut recorder, config) = record(&mod_tap.endpoint, game.token.expose_secret(), &[]);
    let bridge_tap = Tap::start(config.endpoint.clone()).await;
    let mut client = RawClient::connect(&bridge_tap.endpoint)
        .await
        .expect("connect");
    client.set_patience(PATIENCE);
    client.hello(config.token.expose_secret()).await;
    client
        .ok(
            "events/subscribe",
            Some(json!({"channels": ["player/move"]})),
        )
        .await;

    // Eight calls and a ping in one write; the ping with a header the mod reads liberally (transport.md §1.2).
    let mut burst = Vec::new();
    let mut ids = HashSet::new();
    for x in 0..8 {
        let (id, message) = wire::request("tools/call", Some(teleport(x)));
        burst.extend(wire::frame(&serde_json::to_vec(&message).unwrap()));
        ids.insert(id);
    }
    let (id, ping) = wire::request("session/ping", None);
    let body = serde_json::to_vec(&ping).unwrap();
    burst.extend(format!("content-length:  000{}\r\n\r\n", body.len()).into_bytes());
    burst.extend(body);
    ids.insert(id);
    client.write_raw(&burst).await;
    let mut answered = HashSet::new();
    while answered.len() < ids.len() {
        answered.insert(client.recv_response().await.id);
    }
    assert_eq!(answered, ids);
    for _ in 0..8 {
        assert_eq!(client.next_event().await.channel.as_str(), "player/move");
    }
    client.shutdown_write().await;
    client.until_closed().await;
    bridge_tap.wait_done(1).await;
    mod_tap.wait_done(1).await;

    let (bridge_up, bridge_down) = bridge_tap.seen.lock()[0].clone();
    let (mod_up, mod_down) = mod_tap.seen.lock()[0].clone();
    assert!(bridge_up.len() > 1000 && bridge_down.len() > 1000);
    assert_eq!(after_first_frame(&bridge_up), after_first_frame(&mod_up));
    assert_eq!(
        bridge_down, mod_down,
        "the welcome, answers and events reach the bridge unchanged"
    );

    let recording = stop(&mut recorder, "TERM");
    assert_eq!(messages(&recording, Direction::BridgeToMod).len(), 11);
    let from_mod = messages(&recording, Direction::ModToBridge);
    assert_eq!(from_mod.len(), 11 + 8);
    assert_eq!(from_mod.iter().filter(|m| m["type"] == "event").count(), 8);
}

/// A recording is complete and valid while the recorder runs: flushed within a second of a bridge leaving, and
/// of the mod leaving; every line passes SCHEMA/1.0/recording.schema.json.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recording_is_valid_after_either_side_leaves_without_a_signal() {
    let game = InProcessGame::start().await.expect("demo game");
    let (mut recorder, config) = record(game.handle.endpoint(), game.token.expose_secret(), &[]);
    let path = recorder.path("rec.jsonl");
    let closed = |connection: u64| {
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            // Valid at every moment: the reader would name a truncated last line.
            if let Ok(r) = Recording::read(&path) {
                let close = r.records.iter().find_map(|(_, rec)| match rec {
                    Record::Close {
                        connection: c, by, ..
                    } if *c == connection => Some(*by),
                    _ => None,
                });
                if let Some(by) = close {
                    return (r, by);
                }
            }
            assert!(
                Instant::now() < deadline,
                "connection {connection} not on disk within 3 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };

    let mut bridge = client(&config).await;
    bridge.ok("session/ping", None).await;
    drop(bridge);
    let (recording, by) = tokio::task::block_in_place(|| closed(0));
    assert_eq!(by, Side::Bridge);
    let identity = recording
        .header
        .mod_identity
        .expect("the welcome names the mod");
    assert_eq!(identity.agent_id, "voxel-demo");

    let mut bridge = client(&config).await;
    bridge.ok("session/ping", None).await;
    // The mod shuts down (it waits for its connections to end, so on a task of its own).
    let handle = game.handle;
    let shutdown = tokio::spawn(handle.shutdown());
    assert!(bridge.until_closed().await.is_empty());
    drop(bridge);
    shutdown.await.unwrap();
    let (_, by) = tokio::task::block_in_place(|| closed(1));
    assert_eq!(by, Side::Mod);

    let text = std::fs::read_to_string(&path).unwrap();
    let schema_path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../SCHEMA/1.0/recording.schema.json"
    );
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a schema");
    for (n, line) in text.lines().enumerate() {
        let value: Value = serde_json::from_str(line).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "line {}: {errors:?}\n{line}", n + 1);
    }
    let recording = stop(&mut recorder, "TERM");
    assert_eq!(
        recording
            .records
            .iter()
            .filter(|(_, r)| matches!(r, Record::Open { .. }))
            .count(),
        2
    );
}

/// SIGINT ends the recording with everything recorded so far on disk, the open connection closed by the
/// recorder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_flushes_what_was_recorded() {
    let game = InProcessGame::start().await.expect("demo game");
    let (mut recorder, config) = record(game.handle.endpoint(), game.token.expose_secret(), &[]);
    let mut bridge = client(&config).await;
    let result = bridge.ok("tools/call", Some(teleport(3))).await;
    let recording = stop(&mut recorder, "INT");
    let answers = messages(&recording, Direction::ModToBridge);
    assert_eq!(answers.last().map(|m| &m["result"]), Some(&result));
    let last = &recording.records.last().expect("records").1;
    assert!(
        matches!(
            last,
            Record::Close {
                by: Side::Recorder,
                ..
            }
        ),
        "{last:?}"
    );
}

/// Neither token reaches the file, nor what --redact names; the header says what was redacted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_and_redacted_pointers_never_reach_the_file() {
    let game = InProcessGame::start().await.expect("demo game");
    let extra = [
        "--redact",
        "/params/arguments/value/secret",
        "--redact",
        "/result/value/secret",
    ];
    let (mut recorder, config) = record(game.handle.endpoint(), game.token.expose_secret(), &extra);
    let mut bridge = client(&config).await;
    let echo = |value: Value| json!({"name": "demo/echo", "arguments": {"value": value}});
    bridge
        .ok(
            "tools/call",
            Some(echo(json!({"secret": "hunter2", "kept": 1}))),
        )
        .await;
    let mod_token = game.token.expose_secret().to_owned();
    bridge
        .ok(
            "tools/call",
            Some(echo(json!({"note": format!("token={mod_token}")}))),
        )
        .await;
    let path = recorder.path("rec.jsonl");
    let recording = stop(&mut recorder, "TERM");
    let text = std::fs::read_to_string(path).unwrap();
    for secret in [mod_token.as_str(), config.token.expose_secret(), "hunter2"] {
        assert!(!text.contains(secret), "{text}");
    }
    assert!(text.contains("token=[redacted]"), "{text}");
    assert_eq!(
        recording.header.redaction.pointers,
        ["/params/arguments/value/secret", "/result/value/secret"]
    );
    let hello = messages(&recording, Direction::BridgeToMod)[0];
    assert_eq!(hello["params"]["token"], "[redacted]");
    let answer = messages(&recording, Direction::ModToBridge)[1];
    assert_eq!(
        answer["result"]["value"],
        json!({"secret": "[redacted]", "kept": 1})
    );
}

/// A bridge presenting anything but the recorder's token (the mod's own, say) is refused with -32101 by the
/// recorder, which never connects to the mod for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridge_without_the_recorders_token_is_refused() {
    let game = InProcessGame::start().await.expect("demo game");
    let mod_tap = Tap::start(game.handle.endpoint().clone()).await;
    let (mut recorder, config) = record(&mod_tap.endpoint, game.token.expose_secret(), &[]);
    let mut bridge = RawClient::connect(&config.endpoint).await.expect("connect");
    let refused = bridge
        .err(
            "session/hello",
            Some(wire::hello_params(game.token.expose_secret())),
        )
        .await;
    assert_eq!(refused.code.0, -32101);
    assert!(bridge.until_closed().await.is_empty());
    assert!(mod_tap.seen.lock().is_empty(), "the mod was contacted");
    let recording = stop(&mut recorder, "TERM");
    let last = &recording.records.last().expect("records").1;
    assert!(
        matches!(
            last,
            Record::Close {
                by: Side::Recorder,
                ..
            }
        ),
        "{last:?}"
    );
}

/// Makes `gabp-testkit/tests/data/python_mod.jsonl`, the committed recording of a mod that is not gabp-rs
/// (`python_mod.py`, Python 3 standard library). Run once when the format changes:
/// `cargo test -p gabp-cli --test record_replay -- --ignored regenerate_the_python_mod_recording`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "test-data generation step, run by hand"]
async fn regenerate_the_python_mod_recording() {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../gabp-testkit/tests/data");
    let token = "707974686f6e2d6d6f642d746f6b656e2d666f722d74657374732d6f6e6c792d";
    let mut python = std::process::Command::new("python3")
        .arg(format!("{data}/python_mod.py"))
        .env("GABP_TOKEN", token)
        .env("GABP_SERVER_PORT", "0")
        .stdout(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("python3");
    let mut line = String::new();
    let stdout = python.stdout.take().expect("stdout");
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .expect("listening line");
    let endpoint: Endpoint = line
        .trim()
        .trim_start_matches("listening on ")
        .parse()
        .expect("endpoint");
    let (mut recorder, config) = record(&endpoint, token, &[]);
    let mut bridge = client(&config).await;
    bridge.ok("tools/list", None).await;
    bridge
        .ok("events/subscribe", Some(json!({"channels": ["py/sum"]})))
        .await;
    // Two calls in one write, each followed by an event.
    let add = |a: i64, b: i64| {
        wire::request(
            "tools/call",
            Some(json!({"name": "py/add", "arguments": {"a": a, "b": b}})),
        )
    };
    let ((first, one), (second, two)) = (add(1, 2), add(40, 2));
    let burst = [
        wire::frame(&serde_json::to_vec(&one).unwrap()),
        wire::frame(&serde_json::to_vec(&two).unwrap()),
    ];
    bridge.write_raw(&burst.concat()).await;
    assert_eq!(
        bridge.response(first).await.result(),
        Some(&json!({"sum": 3}))
    );
    assert_eq!(
        bridge.response(second).await.result(),
        Some(&json!({"sum": 42}))
    );
    bridge.next_event().await;
    bridge.next_event().await;
    bridge.ok("session/ping", None).await;
    bridge.ok("session/goodbye", None).await;
    bridge.shutdown_write().await;
    bridge.until_closed().await;
    stop(&mut recorder, "TERM");
    std::fs::copy(
        recorder.path("rec.jsonl"),
        format!("{data}/python_mod.jsonl"),
    )
    .expect("copy");
    record_support::kill_group(python.id());
    let _ = python.wait();
    assert_eq!(record_support::left_in_group(python.id()), 0);
}
