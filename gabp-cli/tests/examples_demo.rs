//! `EXAMPLES/1.0/` is a transcript of a session with the demo game: its requests, sent verbatim to
//! `gabp mod --stdio`, must produce the example responses and events. Values are compared exactly, except
//! those that cannot be the same twice (clock readings, versions, random ids), which are compared by shape.
//!
//! The session runs in this order (the file numbers group the examples by kind, not by time): hello,
//! tools/list, events/subscribe, every tool call, time control with the sheep and the picture, the three events
//! the tool calls cause, events/unsubscribe, resources, state, attention, input, env, ping, goodbye.
//!
//! After a deliberate change of the demo game, rewrite the responses and events from a real run with
//! `GABP_BLESS_EXAMPLES=1 cargo test -p gabp-cli --test examples_demo` and review the diff. Blessing keeps
//! the example's value wherever the comparison is by shape, so reruns do not churn.

mod mod_support;

use std::path::{Path, PathBuf};

use gabp_testkit::wire::BlockingClient;
use gabp_types::{ErrorCode, Event, Message, Response};
use mod_support::Launch;
use serde_json::{json, Value};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../EXAMPLES/1.0")
}

fn load(file: &str) -> Value {
    let path = examples().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn blessing() -> bool {
    std::env::var_os("GABP_BLESS_EXAMPLES").is_some_and(|v| v == "1")
}

/// Keys in the order the example files write them (envelope first, then what reads naturally); other keys
/// follow in alphabetical order.
const KEY_ORDER: [&str; 47] = [
    "v",
    "id",
    "type",
    "method",
    "params",
    "result",
    "error",
    "channel",
    "seq",
    "payload",
    "state",
    "timestamp",
    "field",
    "code",
    "message",
    "data",
    "uri",
    "name",
    "title",
    "description",
    "content",
    "mimeType",
    "encoding",
    "size",
    "inputSchema",
    "outputSchema",
    "tags",
    "deprecated",
    "version",
    "properties",
    "required",
    "additionalProperties",
    "methods",
    "events",
    "resources",
    "extensions",
    "limits",
    "x",
    "y",
    "z",
    "block",
    "blockType",
    "playerId",
    "position",
    "slot",
    "item",
    "count",
];

fn key_rank(key: &str) -> (usize, &str) {
    (
        KEY_ORDER
            .iter()
            .position(|k| *k == key)
            .unwrap_or(KEY_ORDER.len()),
        key,
    )
}

fn write_pretty(value: &Value, indent: usize, out: &mut String) {
    let pad = |n: usize| "  ".repeat(n);
    match value {
        Value::Object(map) if !map.is_empty() => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by_key(|k| key_rank(k));
            out.push_str("{\n");
            for (i, key) in keys.iter().enumerate() {
                out.push_str(&pad(indent + 1));
                out.push_str(&serde_json::to_string(key).expect("key"));
                out.push_str(": ");
                write_pretty(&map[key.as_str()], indent + 1, out);
                out.push_str(if i + 1 < keys.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(indent));
            out.push('}');
        }
        Value::Array(items) if !items.is_empty() => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                out.push_str(&pad(indent + 1));
                write_pretty(item, indent + 1, out);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(indent));
            out.push(']');
        }
        scalar => out.push_str(&serde_json::to_string(scalar).expect("scalar")),
    }
}

/// A message as an example file: two-space indentation, keys in [`KEY_ORDER`], a final newline.
fn example_text(message: &Value) -> String {
    let mut out = String::new();
    write_pretty(message, 0, &mut out);
    out.push('\n');
    out
}

/// Whether two values have the same shape: the same JSON type; objects with the same keys, recursively.
fn same_shape(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_shape(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => x.iter().zip(y).all(|(v, w)| same_shape(v, w)),
        (Value::Number(x), Value::Number(y)) => x.is_f64() == y.is_f64(),
        (x, y) => std::mem::discriminant(x) == std::mem::discriminant(y),
    }
}

/// Compares `expected` with `actual`: by shape at the `loose` JSON pointers, exactly elsewhere (numbers by
/// value, so `5` equals `5.0`). Collects the differences.
fn compare(expected: &Value, actual: &Value, loose: &[&str], path: &str, diffs: &mut Vec<String>) {
    if loose.contains(&path) {
        if !same_shape(expected, actual) {
            diffs.push(format!(
                "{path}: expected the shape of {expected}, got {actual}"
            ));
        }
        return;
    }
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for key in e.keys().chain(a.keys().filter(|k| !e.contains_key(*k))) {
                let at = format!("{path}/{key}");
                match (e.get(key), a.get(key)) {
                    (Some(x), Some(y)) => compare(x, y, loose, &at, diffs),
                    (Some(x), None) => diffs.push(format!("{at}: missing (expected {x})")),
                    (None, Some(y)) => diffs.push(format!("{at}: unexpected {y}")),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            for (i, (x, y)) in e.iter().zip(a).enumerate() {
                compare(x, y, loose, &format!("{path}/{i}"), diffs);
            }
        }
        (Value::Number(e), Value::Number(a)) if e.as_f64() == a.as_f64() => {}
        (e, a) if e == a => {}
        (e, a) => diffs.push(format!("{path}: expected {e}, got {a}")),
    }
}

/// `actual` with the clock readings and random ids at the `loose` pointers taken from `expected` (for
/// blessing: they would change on every run). Other loose values, such as versions, are written as they are.
fn keep_loose(expected: &Value, actual: &Value, loose: &[&str]) -> Value {
    let mut out = actual.clone();
    let volatile = |pointer: &&&str| {
        pointer
            .rsplit('/')
            .next()
            .is_some_and(|last| ["id", "timestamp", "tick"].contains(&last))
    };
    for pointer in loose.iter().filter(volatile) {
        if let (Some(old), Some(slot)) = (expected.pointer(pointer), out.pointer_mut(pointer)) {
            if same_shape(old, slot) {
                *slot = old.clone();
            }
        }
    }
    out
}

/// Checks (or, when blessing, rewrites) the example `file` against `actual`.
fn check(file: &str, actual: Value, loose: &[&str], diffs: &mut Vec<String>) {
    let expected = load(file);
    if blessing() {
        let blessed = keep_loose(&expected, &actual, loose);
        std::fs::write(examples().join(file), example_text(&blessed)).expect("write example");
        return;
    }
    let mut found = Vec::new();
    compare(&expected, &actual, loose, "", &mut found);
    diffs.extend(found.into_iter().map(|d| format!("{file}: {d}")));
}

fn response_value(response: &Response) -> Value {
    serde_json::to_value(Message::Response(response.clone())).expect("serialize")
}

fn event_value(event: &Event) -> Value {
    serde_json::to_value(Message::Event(event.clone())).expect("serialize")
}

/// Sends the request of `request_file` verbatim; returns the response.
fn send_example(c: &mut BlockingClient, request_file: &str) -> Response {
    c.send_request(&load(request_file))
}

/// Sends an example request and checks the answer against the example response.
fn exchange(
    c: &mut BlockingClient,
    request_file: &str,
    response_file: &str,
    loose: &[&str],
    diffs: &mut Vec<String>,
) -> Response {
    let response = send_example(c, request_file);
    check(response_file, response_value(&response), loose, diffs);
    response
}

/// The bytes of a resource's `content`: the text, or the base64 decoded.
fn content_bytes(message: &Value) -> Vec<u8> {
    use base64::Engine as _;
    let content = message["result"]["content"].as_str().unwrap_or_default();
    match message["result"]["encoding"].as_str() {
        Some("base64") => base64::engine::general_purpose::STANDARD
            .decode(content)
            .unwrap_or_default(),
        _ => content.as_bytes().to_vec(),
    }
}

/// A resource's `content` parsed as JSON (both demo resources hold JSON).
fn decoded_content(message: &Value) -> Value {
    serde_json::from_slice(&content_bytes(message)).unwrap_or(Value::Null)
}

#[test]
fn example_requests_sent_to_the_demo_game_produce_the_example_responses() {
    let hello = load("handshake/001_session-hello.req.json");
    let token = hello["params"]["token"].as_str().expect("token").to_owned();
    let mut m = Launch::new(&["--stdio", "--token", &token]).spawn(true);
    let mut c = m.stdio();
    let mut diffs = Vec::new();
    let d = &mut diffs;

    let welcome = exchange(
        &mut c,
        "handshake/001_session-hello.req.json",
        "handshake/002_session-hello.res.json",
        &["/result/app/version", "/result/serverInfo/version"],
        d,
    );
    let serves_attention = welcome
        .result()
        .and_then(|w| w["capabilities"]["methods"].as_array())
        .is_some_and(|m| m.contains(&json!("attention/current")));

    exchange(
        &mut c,
        "tools/010_tools-list.req.json",
        "tools/011_tools-list.res.json",
        &[],
        d,
    );
    exchange(
        &mut c,
        "events/030_events-subscribe.req.json",
        "events/031_events-subscribe.res.json",
        &[],
        d,
    );
    for (request, response) in [
        (
            "012_tools-call-get-block.req.json",
            "013_tools-call-get-block.res.json",
        ),
        (
            "014_tools-call-place-block.req.json",
            "015_tools-call-place-block.res.json",
        ),
        (
            "016_tools-call-inventory.req.json",
            "017_tools-call-inventory.res.json",
        ),
        (
            "018_tools-call-teleport.req.json",
            "019_tools-call-teleport.res.json",
        ),
        (
            "020_tools-call-echo.req.json",
            "021_tools-call-echo.res.json",
        ),
        (
            "022_tools-call-sleep.req.json",
            "023_tools-call-sleep.res.json",
        ),
        (
            "024_tools-call-raise-error.req.json",
            "025_tools-call-raise-error.res.json",
        ),
        (
            "026_tools-call-set-bonus.req.json",
            "027_tools-call-set-bonus.res.json",
        ),
    ] {
        exchange(
            &mut c,
            &format!("tools/{request}"),
            &format!("tools/{response}"),
            // demo/raise_error answers an attention id once the mod serves attention.
            &["/result/attentionId"],
            d,
        );
    }

    // Time control (SPEC/1.0 extensions.md §time-control) and what it freezes: the tick and the sheep move
    // between runs, so they are compared by shape, and so is the picture of them.
    let tick = ["/result/tick"];
    for (request, response, loose) in [
        (
            "time/040_time-pause.req.json",
            "time/041_time-pause.res.json",
            &tick[..],
        ),
        (
            "tools/028_tools-call-entities.req.json",
            "tools/029_tools-call-entities.res.json",
            &["/result/tick", "/result/entities"][..],
        ),
        (
            "time/043_time-step.req.json",
            "time/044_time-step.res.json",
            &tick[..],
        ),
        (
            "time/045_time-status.req.json",
            "time/046_time-status.res.json",
            &tick[..],
        ),
        (
            "tools/030_tools-call-render.req.json",
            "tools/031_tools-call-render.res.json",
            &[
                "/result/tick",
                "/result/pngBytes",
                "/result/_content/0/data",
            ][..],
        ),
        (
            "time/047_time-resume.req.json",
            "time/048_time-resume.res.json",
            &tick[..],
        ),
    ] {
        exchange(&mut c, request, response, loose, d);
    }

    // The events of place_block, teleport and set_bonus (channels interleave; each arrives once).
    let mut by_channel = std::collections::BTreeMap::new();
    for _ in 0..3 {
        let event = c.next_event();
        by_channel.insert(event.channel.to_string(), event);
    }
    for (channel, file) in [
        ("player/move", "events/032_player-move.event.json"),
        (
            "world/block_change",
            "events/033_world-block-change.event.json",
        ),
        ("tools/changed", "events/036_tools-changed.event.json"),
    ] {
        let event = by_channel
            .get(channel)
            .unwrap_or_else(|| panic!("no {channel} event"));
        check(file, event_value(event), &["/id", "/timestamp"], d);
    }

    exchange(
        &mut c,
        "events/034_events-unsubscribe.req.json",
        "events/035_events-unsubscribe.res.json",
        &[],
        d,
    );

    // The contents are compared decoded, below (blessing writes them as they are).
    let content: &[&str] = if blessing() {
        &[]
    } else {
        &["/result/content"]
    };
    let world = exchange(
        &mut c,
        "resources/042_resources-read-world.req.json",
        "resources/043_resources-read-world.res.json",
        content,
        d,
    );
    let info = exchange(
        &mut c,
        "resources/044_resources-read-mod-info.req.json",
        "resources/045_resources-read-mod-info.res.json",
        content,
        d,
    );
    // The contents, decoded (JSON text; base64 of JSON bytes), with the version by shape.
    if !blessing() {
        for (file, response, loose) in [
            (
                "resources/043_resources-read-world.res.json",
                &world,
                &[][..],
            ),
            (
                "resources/045_resources-read-mod-info.res.json",
                &info,
                &["/version"][..],
            ),
        ] {
            let mut found = Vec::new();
            compare(
                &decoded_content(&load(file)),
                &decoded_content(&response_value(response)),
                loose,
                "",
                &mut found,
            );
            d.extend(found.into_iter().map(|x| format!("{file} (content): {x}")));
        }
    }
    let listed = exchange(
        &mut c,
        "resources/040_resources-list.req.json",
        "resources/041_resources-list.res.json",
        &["/result/resources/1/size"],
        d,
    );
    // The listed size of the binary resource is the size of its bytes.
    let info_bytes = content_bytes(&response_value(&info)).len() as u64;
    let listed_size = listed
        .result()
        .and_then(|r| r["resources"][1]["size"].as_u64());
    assert_eq!(listed_size, Some(info_bytes));

    let state = exchange(
        &mut c,
        "state/050_state-get.req.json",
        "state/051_state-get.res.json",
        &["/result/timestamp", "/result/state/world/tick"],
        d,
    );
    // state/get timestamps are Unix seconds, in the example as on the wire.
    let seconds = 1_000_000_000..100_000_000_000_u64;
    let example = load("state/051_state-get.res.json")["result"]["timestamp"].as_u64();
    assert!(example.is_some_and(|t| seconds.contains(&t)), "{example:?}");
    let actual = state.result().and_then(|r| r["timestamp"].as_u64());
    assert!(
        actual.is_some_and(|t| t.abs_diff(mod_support::unix_now()) < 600),
        "{actual:?}"
    );
    exchange(
        &mut c,
        "state/052_state-set.req.json",
        "state/053_state-set.res.json",
        &[],
        d,
    );

    // The attention examples describe the attention surface; the demo game serves it.
    for request in [
        "attention/062_attention-current.req.json",
        "attention/064_attention-ack.req.json",
    ] {
        let response = send_example(&mut c, request);
        if !serves_attention {
            assert_eq!(
                response.error_object().map(|e| e.code),
                Some(ErrorCode::METHOD_NOT_FOUND),
                "{request}: the demo game does not serve attention yet"
            );
        }
    }

    // Input (SPEC/1.0 extensions.md §input): a tap of ArrowRight walks the player a block (its player/move is
    // no longer subscribed to).
    exchange(
        &mut c,
        "input/067_input-key.req.json",
        "input/068_input-key.res.json",
        &[],
        d,
    );

    // Env (SPEC/1.0 extensions.md §env): the herding task's spaces, an episode seeded 42, and a step east.
    for (request, response) in [
        ("env/069_env-spaces.req.json", "env/070_env-spaces.res.json"),
        ("env/071_env-reset.req.json", "env/072_env-reset.res.json"),
        ("env/073_env-step.req.json", "env/074_env-step.res.json"),
    ] {
        exchange(&mut c, request, response, &[], d);
    }

    exchange(
        &mut c,
        "session/003_session-ping.req.json",
        "session/004_session-ping.res.json",
        &["/result/timestamp"],
        d,
    );
    assert!(c.events().is_empty(), "unexpected events: {:?}", c.events());
    exchange(
        &mut c,
        "session/005_session-goodbye.req.json",
        "session/006_session-goodbye.res.json",
        &[],
        d,
    );
    assert!(c.until_closed().is_empty());
    m.assert_clean_exit();

    assert!(
        diffs.is_empty(),
        "the demo game no longer produces EXAMPLES/1.0 (if the change is deliberate, rerun with \
         GABP_BLESS_EXAMPLES=1 and review the diff):\n{}",
        diffs.join("\n")
    );
}

#[test]
fn shape_comparison() {
    let mut diffs = Vec::new();
    compare(
        &json!({"a": 1, "b": [1.5, "x"], "t": 10}),
        &json!({"a": 1.0, "b": [1.5, "x"], "t": 99}),
        &["/t"],
        "",
        &mut diffs,
    );
    assert!(diffs.is_empty(), "{diffs:?}");
    compare(
        &json!({"a": 1, "t": 10}),
        &json!({"a": 2, "t": "late", "extra": true}),
        &["/t"],
        "",
        &mut diffs,
    );
    assert_eq!(diffs.len(), 3, "{diffs:?}");
    assert_eq!(
        example_text(&json!({"type": "event", "v": "gabp/1", "payload": {"z": [], "x": [1.5]}})),
        "{\n  \"v\": \"gabp/1\",\n  \"type\": \"event\",\n  \"payload\": {\n    \"x\": [\n      1.5\n    ],\n    \"z\": []\n  }\n}\n"
    );
}
