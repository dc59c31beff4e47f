//! End-to-end tests of `gabp mod`, the demo game, over TCP, a Unix socket and stdio, driven by a raw client
//! (frames written and read by hand, every frame the mod writes decoded strictly; never our own `Bridge`).

mod mod_support;

use std::collections::HashMap;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};

use base64::Engine as _;
use gabp_transport::{BridgeConfig, Endpoint, Token};
use gabp_types::{ErrorCode, Message};
use mod_support::{hello_params, unix_now, Client, Launch, TOKEN};
use serde_json::{json, Value};

const TOOLS: [&str; 8] = [
    "world/get_block",
    "world/place_block",
    "inventory/get",
    "player/teleport",
    "demo/echo",
    "demo/sleep",
    "demo/raise_error",
    "demo/status",
];

const METHODS: [&str; 13] = [
    "session/hello",
    "session/ping",
    "session/goodbye",
    "tools/list",
    "tools/call",
    "events/subscribe",
    "events/unsubscribe",
    "resources/list",
    "resources/read",
    "state/get",
    "state/set",
    "attention/current",
    "attention/ack",
];

fn compile(schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft7)
        .build(schema)
        .unwrap_or_else(|e| panic!("schema does not compile: {e}\n{schema}"))
}

/// The tools' schemas, from `tools/list`.
struct Schemas(HashMap<String, (jsonschema::Validator, jsonschema::Validator)>);

impl Schemas {
    /// Calls `tool`, checking good arguments against its inputSchema and a result against its outputSchema.
    fn call(&self, c: &mut Client, tool: &str, arguments: Value) -> Value {
        let (input, output) = &self.0[tool];
        assert!(
            input.is_valid(&arguments),
            "{tool}: {arguments} fails inputSchema"
        );
        let result = c
            .call_tool(tool, arguments.clone())
            .unwrap_or_else(|e| panic!("{tool} {arguments}: {e:?}"));
        if let Err(e) = output.validate(&result) {
            panic!("{tool}: result {result} fails outputSchema: {e}");
        }
        result
    }
}

fn code(e: &gabp_types::ErrorObject) -> i64 {
    e.code.code()
}

/// Calls `tool` expecting an error; its code and the error.
fn tool_fails(c: &mut Client, tool: &str, arguments: Value) -> (i64, gabp_types::ErrorObject) {
    match c.call_tool(tool, arguments.clone()) {
        Ok(v) => panic!("{tool} {arguments} succeeded with {v}"),
        Err(e) => (code(&e), e),
    }
}

/// The whole surface of the demo game on one fresh connection to a fresh mod, ending with `session/goodbye`.
fn exercise_surface(c: &mut Client) {
    // Before hello: -32100, and the connection stays open.
    let e = c.err("tools/list", None);
    assert_eq!(e.code, ErrorCode::AUTHENTICATION_REQUIRED);

    // Handshake.
    let welcome = c.hello(TOKEN);
    assert_eq!(welcome["agentId"], "voxel-demo");
    assert_eq!(welcome["app"]["name"], "GABP Voxel Demo");
    assert_eq!(welcome["app"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(welcome["schemaVersion"], "1.1");
    let caps = &welcome["capabilities"];
    assert_eq!(caps["methods"], json!(METHODS));
    assert_eq!(
        caps["events"],
        json!([
            "attention/cleared",
            "attention/opened",
            "attention/updated",
            "player/move",
            "world/block_change"
        ])
    );
    assert_eq!(
        caps["resources"],
        json!(["gabp://game/world", "gabp://mod/info"])
    );
    assert_eq!(caps["limits"]["maxMessageSize"], 1_048_576);
    let e = c.err("session/hello", Some(hello_params(TOKEN)));
    assert_eq!(e.code, ErrorCode::INVALID_REQUEST, "hello twice");

    // Tools.
    let list = c.ok("tools/list", None);
    let tools = list["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, TOOLS);
    let mut schemas = HashMap::new();
    for tool in tools {
        let name = tool["name"].as_str().unwrap_or_default();
        assert!(tool["title"].as_str().is_some_and(|t| !t.is_empty()));
        assert!(tool["description"].as_str().is_some_and(|d| d.len() > 10));
        let read_only = tool["tags"]
            .as_array()
            .is_some_and(|tags| tags.contains(&json!("read-only")));
        let writes = matches!(
            name,
            "world/place_block" | "player/teleport" | "demo/raise_error"
        );
        assert_eq!(read_only, !writes, "{name}: read-only tag");
        schemas.insert(
            name.to_owned(),
            (
                compile(&tool["inputSchema"]),
                compile(&tool["outputSchema"]),
            ),
        );
    }
    let schemas = Schemas(schemas);
    let read_only = c.ok(
        "tools/list",
        Some(json!({"filter": {"tags": ["read-only"]}})),
    );
    assert_eq!(read_only["tools"].as_array().map(Vec::len), Some(5));

    // Subscribe (a pattern, a name, an unknown channel left out).
    let subscribed = c.ok(
        "events/subscribe",
        Some(json!({"channels": ["player/*", "world/block_change", "weather/rain"]})),
    );
    assert_eq!(
        subscribed,
        json!({"subscribed": ["player/move", "world/block_change"]})
    );

    // world/get_block.
    let get = |c: &mut Client, x: i64, y: i64, z: i64| {
        schemas.call(c, "world/get_block", json!({"x": x, "y": y, "z": z}))
    };
    assert_eq!(
        get(c, 8, 4, 8),
        json!({"x": 8, "y": 4, "z": 8, "block": "grass"})
    );
    assert_eq!(get(c, 8, 5, 8)["block"], Value::Null, "air is null");
    assert_eq!(get(c, 3, 6, 3)["block"], "oak_log");
    assert_eq!(get(c, 15, 0, 15)["block"], "stone");
    for (args, field) in [
        (json!({"x": 16, "y": 0, "z": 0}), "x"),
        (json!({"x": 0, "y": -1, "z": 0}), "y"),
        (json!({"x": 0, "y": 0, "z": 9_007_199_254_740_991_i64}), "z"),
    ] {
        let (code, e) = tool_fails(c, "world/get_block", args);
        assert_eq!(code, -32402);
        let data = e.data.expect("data");
        assert_eq!(data["field"], field);
        assert_eq!(data["retryable"], false);
    }
    let (code, e) = tool_fails(c, "world/get_block", json!({"x": "1", "y": 0, "z": 0}));
    assert_eq!(code, -32602);
    assert!(e.data.expect("data")["errors"].is_array());
    let (code, _) = tool_fails(c, "world/get_block", json!({"x": 1.5, "y": 0, "z": 0}));
    assert_eq!(code, -32602);

    // world/place_block: five stones, then air; each publishes world/block_change.
    for x in 0..5 {
        assert_eq!(
            schemas.call(
                c,
                "world/place_block",
                json!({"x": x, "y": 5, "z": 0, "blockType": "stone"})
            ),
            json!({"success": true, "blockPlaced": "stone"})
        );
    }
    assert_eq!(get(c, 4, 5, 0)["block"], "stone");
    assert_eq!(
        schemas.call(
            c,
            "world/place_block",
            json!({"x": 0, "y": 5, "z": 0, "blockType": "air"})
        ),
        json!({"success": true, "blockPlaced": "air"})
    );
    assert_eq!(get(c, 0, 5, 0)["block"], Value::Null);
    let (code, _) = tool_fails(
        c,
        "world/place_block",
        json!({"x": 0, "y": 16, "z": 0, "blockType": "stone"}),
    );
    assert_eq!(code, -32402);
    let (code, _) = tool_fails(
        c,
        "world/place_block",
        json!({"x": 0, "y": 5, "z": 0, "blockType": "diamond"}),
    );
    assert_eq!(code, -32602);
    let (code, _) = tool_fails(
        c,
        "world/place_block",
        json!({"x": 0, "y": 5, "z": 0, "block": "stone"}),
    );
    assert_eq!(code, -32602, "the argument is blockType");

    // inventory/get.
    let inventory = schemas.call(c, "inventory/get", json!({}));
    assert_eq!(
        inventory["slots"][0],
        json!({"slot": 0, "item": "stone", "count": 64})
    );
    assert_eq!(inventory["slots"].as_array().map(Vec::len), Some(4));
    assert_eq!(
        schemas.call(c, "inventory/get", json!({"playerId": "steve"})),
        inventory
    );
    let (code, e) = tool_fails(c, "inventory/get", json!({"playerId": "alex"}));
    assert_eq!(code, -32402);
    assert!(e.message.contains("alex"), "{}", e.message);

    // player/teleport: two moves, each published on player/move.
    let moved = schemas.call(c, "player/teleport", json!({"x": 2.5, "y": 5, "z": 13.5}));
    assert_eq!(
        moved,
        json!({"playerId": "steve", "position": {"x": 2.5, "y": 5.0, "z": 13.5}})
    );
    let moved_again = schemas.call(
        c,
        "player/teleport",
        json!({"playerId": "steve", "x": 1, "y": 6, "z": 1}),
    );
    assert_eq!(
        moved_again["position"],
        json!({"x": 1.0, "y": 6.0, "z": 1.0})
    );
    let (code, e) = tool_fails(c, "player/teleport", json!({"x": 16.5, "y": 5, "z": 1}));
    assert_eq!(code, -32402);
    assert_eq!(e.data.expect("data")["field"], "x");
    let (code, _) = tool_fails(
        c,
        "player/teleport",
        json!({"playerId": "alex", "x": 1, "y": 5, "z": 1}),
    );
    assert_eq!(code, -32402);

    // demo/echo, demo/sleep, demo/raise_error, an unknown tool.
    for value in [
        json!({"nested": [1, "two", null, {"three": 3.5}]}),
        json!("text"),
        json!(42),
        Value::Null,
    ] {
        assert_eq!(
            schemas.call(c, "demo/echo", json!({"value": value.clone()})),
            json!({"value": value})
        );
    }
    assert_eq!(tool_fails(c, "demo/echo", json!({})).0, -32602);
    assert_eq!(
        schemas.call(c, "demo/sleep", json!({"ms": 0})),
        json!({"sleptMs": 0})
    );
    assert_eq!(
        schemas.call(c, "demo/sleep", json!({"ms": 30})),
        json!({"sleptMs": 30})
    );
    assert_eq!(tool_fails(c, "demo/sleep", json!({"ms": 60_001})).0, -32602);
    assert_eq!(tool_fails(c, "demo/sleep", json!({"ms": -1})).0, -32602);
    let raised = schemas.call(
        c,
        "demo/raise_error",
        json!({"message": "chunk 0,0 failed to save"}),
    );
    let attention_id = raised["attentionId"].as_str().expect("an attention id");
    let current = c.ok("attention/current", None);
    assert_eq!(current["attention"]["attentionId"], attention_id);
    assert_eq!(current["attention"]["blocking"], true);
    let acked = c.ok("attention/ack", Some(json!({"attentionId": attention_id})));
    assert_eq!(acked["acknowledged"], true);
    assert_eq!(acked["currentAttention"], Value::Null);
    assert_eq!(
        tool_fails(c, "demo/raise_error", json!({"message": ""})).0,
        -32602
    );
    assert_eq!(tool_fails(c, "world/explode", json!({})).0, -32400);

    // Events: per channel, seq from 0, contiguous, in the order of the changes.
    let mut changes = Vec::new();
    let mut moves = Vec::new();
    while changes.len() < 6 || moves.len() < 2 {
        let e = c.next_event();
        match e.channel.as_str() {
            "world/block_change" => changes.push(e),
            "player/move" => moves.push(e),
            other => panic!("event on {other}"),
        }
    }
    assert!(c.events.is_empty(), "no more events: {:?}", c.events);
    for (i, e) in changes.iter().enumerate() {
        assert_eq!(e.seq, i as u64, "world/block_change seq");
        assert!(e.timestamp.is_some());
    }
    for (x, change) in changes.iter().take(5).enumerate() {
        assert_eq!(
            change.payload,
            json!({"x": x, "y": 5, "z": 0, "block": "stone"})
        );
    }
    assert_eq!(
        changes[5].payload,
        json!({"x": 0, "y": 5, "z": 0, "block": null})
    );
    assert_eq!((moves[0].seq, moves[1].seq), (0, 1));
    assert_eq!(moves[0].payload, moved);
    assert_eq!(moves[1].payload, moved_again);

    // Unsubscribed from player/move: a teleport is not delivered, the next block change is.
    assert_eq!(
        c.ok(
            "events/unsubscribe",
            Some(json!({"channels": ["player/move"]}))
        ),
        json!({"unsubscribed": ["player/move"]})
    );
    let last_move = schemas.call(c, "player/teleport", json!({"x": 4.25, "y": 5, "z": 4.75}));
    schemas.call(
        c,
        "world/place_block",
        json!({"x": 15, "y": 15, "z": 15, "blockType": "glass"}),
    );
    let e = c.next_event();
    assert_eq!((e.channel.as_str(), e.seq), ("world/block_change", 6));
    assert_eq!(
        e.payload,
        json!({"x": 15, "y": 15, "z": 15, "block": "glass"})
    );

    // Resources.
    let listed = c.ok("resources/list", None);
    let uris: Vec<&str> = listed["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert_eq!(uris, ["gabp://game/world", "gabp://mod/info"]);
    let game_only = c.ok("resources/list", Some(json!({"namespace": "game"})));
    assert_eq!(game_only["resources"].as_array().map(Vec::len), Some(1));
    let world = c.ok("resources/read", Some(json!({"uri": "gabp://game/world"})));
    assert_eq!(world["encoding"], "utf-8");
    assert_eq!(world["mimeType"], "application/json");
    let world: Value =
        serde_json::from_str(world["content"].as_str().expect("text")).expect("JSON");
    let total: u64 = world["counts"]
        .as_object()
        .expect("counts")
        .values()
        .filter_map(Value::as_u64)
        .sum();
    assert_eq!(total, 16 * 16 * 16);
    assert_eq!(world["counts"]["glass"], 1);
    assert_eq!(world["counts"]["stone"], 768 + 4);
    assert_eq!(world["blockChanges"], 7);
    assert_eq!(world["players"][0]["position"], last_move["position"]);
    let info = c.ok("resources/read", Some(json!({"uri": "gabp://mod/info"})));
    assert_eq!(info["encoding"], "base64");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(info["content"].as_str().expect("base64 text"))
        .expect("valid base64");
    let info: Value = serde_json::from_slice(&bytes).expect("mod info is JSON");
    assert_eq!(info["name"], "GABP Voxel Demo");
    assert_eq!(info["protocol"], "gabp/1");
    let e = c.err(
        "resources/read",
        Some(json!({"uri": "gabp://game/nothing"})),
    );
    assert_eq!(e.code, ErrorCode::RESOURCE_NOT_FOUND);

    // State.
    let got = c.ok("state/get", None);
    let timestamp = got["timestamp"].as_u64().expect("timestamp");
    assert!(
        timestamp.abs_diff(unix_now()) < 600,
        "timestamp {timestamp} is Unix seconds"
    );
    assert_eq!(got["state"]["player"]["id"], "steve");
    assert_eq!(got["state"]["player"]["position"], last_move["position"]);
    assert_eq!(got["state"]["world"]["blockChanges"], 7);
    assert_eq!(
        got["state"]["world"]["size"],
        json!({"x": 16, "y": 16, "z": 16})
    );
    let world_only = c.ok("state/get", Some(json!({"components": ["world"]})));
    assert_eq!(
        world_only["state"]
            .as_object()
            .map(|m| m.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["world".to_owned()])
    );
    let e = c.err("state/get", Some(json!({"playerId": "alex"})));
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS);

    c.ok(
        "events/subscribe",
        Some(json!({"channels": ["player/move"]})),
    );
    let set = c.ok(
        "state/set",
        Some(json!({"updates": {"player": {"position": {"x": 4, "y": 5, "z": 4}}}})),
    );
    assert_eq!(
        set,
        json!({"applied": {"player": {"position": {"x": 4.0, "y": 5.0, "z": 4.0}}}})
    );
    let e = c.next_event();
    // seq is mod-wide: the move made while unsubscribed (seq 2) used its number.
    assert_eq!((e.channel.as_str(), e.seq), ("player/move", 3));
    assert_eq!(
        e.payload,
        json!({"playerId": "steve", "position": {"x": 4.0, "y": 5.0, "z": 4.0}})
    );
    let refused = c.ok(
        "state/set",
        Some(json!({
            "updates": {"player": {"position": {"x": 9, "y": 5, "z": 9}}, "world": {"tick": 0}},
            "playerId": "steve",
            "validate": true
        })),
    );
    assert_eq!(refused["applied"], json!({}));
    assert_eq!(refused["errors"][0]["field"], "world.tick");
    assert_eq!(refused["errors"][0]["code"], "read_only");
    let got = c.ok("state/get", Some(json!({"components": ["player"]})));
    assert_eq!(
        got["state"]["player"]["position"],
        json!({"x": 4.0, "y": 5.0, "z": 4.0})
    );

    // Ping, an unknown method, goodbye.
    let ping = c.ok("session/ping", Some(json!({})));
    let millis = ping["timestamp"].as_u64().expect("ping timestamp");
    assert!((millis / 1000).abs_diff(unix_now()) < 600);
    let e = c.err("game/pause", None);
    assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND);
    assert_eq!(
        c.ok("session/goodbye", Some(json!({"reason": "done"}))),
        json!({})
    );
    let rest = c.until_closed();
    assert!(rest.is_empty(), "after goodbye: {rest:?}");
}

#[test]
fn tcp_serves_the_whole_surface_and_sigterm_stops_it() {
    let mut m = Launch::new(&["--listen", "tcp://127.0.0.1:0", "--token", TOKEN]).spawn(false);
    let endpoint = m.listening_on();
    assert!(
        endpoint.starts_with("tcp://127.0.0.1:") && !endpoint.ends_with(":0"),
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
    c.close_input();
    assert!(c.until_closed().is_empty());
    m.assert_clean_exit();
    // Only frames went to stdout (the raw client would have failed on anything else); logs went to stderr.
    assert!(m.stderr_text().contains("serving the demo game on stdio"));
}

#[test]
fn stdio_exits_when_stdin_closes_before_hello() {
    let mut m = Launch::new(&["--stdio", "--token", TOKEN]).spawn(true);
    let mut c = m.stdio();
    c.close_input();
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
fn sleep_in_flight(c: &mut Client) -> gabp_types::MessageId {
    let sleep = c.send(
        "tools/call",
        Some(json!({"name": "demo/sleep", "arguments": {"ms": 1500}})),
    );
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
fn gabs_environment_sets_port_token_and_agent_id() {
    // A port that was free a moment ago.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let mut m = Launch::new(&[])
        .env("GABP_SERVER_PORT", &port.to_string())
        .env("GABP_TOKEN", TOKEN)
        .env("GABS_GAME_ID", "minecraft")
        .spawn(false);
    let endpoint = m.listening_on();
    assert_eq!(endpoint, format!("tcp://127.0.0.1:{port}"));
    let mut c = m.connect(&endpoint);
    assert_eq!(c.hello(TOKEN)["agentId"], "minecraft");
    m.signal("TERM");
    m.assert_clean_exit();

    // --token wins over GABP_TOKEN.
    let flag_token = "f".repeat(64);
    let mut m = Launch::new(&["--token", &flag_token])
        .env("GABP_TOKEN", TOKEN)
        .spawn(false);
    let endpoint = m.listening_on();
    assert!(endpoint.starts_with("tcp://127.0.0.1:"), "{endpoint}");
    let mut c = m.connect(&endpoint);
    c.hello(&flag_token);
    m.signal("TERM");
    m.assert_clean_exit();
}

#[test]
fn bridge_json_sets_endpoint_and_token() {
    let home = tempfile::tempdir().expect("tempdir");
    let socket = home.path().join("from-config.sock");
    let config = home.path().join("gabp").join("bridge.json");
    std::fs::create_dir_all(config.parent().expect("parent")).expect("mkdir");
    BridgeConfig::new(
        Token::new(TOKEN).expect("token"),
        Endpoint::unix(&socket).expect("endpoint"),
    )
    .write_atomic(&config)
    .expect("write bridge.json");
    let mut m = Launch::new(&[]).home(home).spawn(false);
    let endpoint = m.listening_on();
    assert_eq!(endpoint, format!("unix://{}", socket.display()));
    let mut c = m.connect(&endpoint);
    c.hello(TOKEN);
    m.signal("TERM");
    m.assert_clean_exit();
    assert!(!socket.exists());

    // --config names another file.
    let dir = tempfile::tempdir().expect("tempdir");
    let other = dir.path().join("other.json");
    let socket = dir.path().join("other.sock");
    BridgeConfig::new(
        Token::new(TOKEN).expect("token"),
        Endpoint::unix(&socket).expect("endpoint"),
    )
    .write_atomic(&other)
    .expect("write");
    let mut m = Launch::new(&["--config", other.to_str().expect("utf-8")]).spawn(false);
    assert_eq!(m.listening_on(), format!("unix://{}", socket.display()));
    m.signal("TERM");
    m.assert_clean_exit();
}

#[test]
fn without_any_token_a_fresh_one_is_printed_to_stderr() {
    let mut m = Launch::new(&[]).spawn(false);
    let rest = m.stderr_line("generated token: ");
    let token = rest.split_whitespace().next().expect("token").to_owned();
    assert_eq!(token.len(), 64);
    assert!(token
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    let endpoint = m.listening_on();
    assert!(endpoint.starts_with("tcp://127.0.0.1:"), "{endpoint}");
    let mut c = m.connect(&endpoint);
    c.hello(&token);
    m.signal("TERM");
    m.assert_clean_exit();
}

/// Runs `gabp mod ARGS` expecting a one-line error; returns the line.
fn one_line_error(launch: Launch) -> String {
    let out = launch.output();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(lines[0].starts_with("error: "), "{stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"));
    lines[0].to_owned()
}

#[test]
fn errors_are_one_clear_line() {
    let line = one_line_error(Launch::new(&[
        "--listen",
        "tcp://0.0.0.0:4711",
        "--token",
        TOKEN,
    ]));
    assert!(line.contains("loopback"), "{line}");
    let line = one_line_error(Launch::new(&[
        "--listen",
        "carrier-pigeon",
        "--token",
        TOKEN,
    ]));
    assert!(line.contains("--listen"), "{line}");
    let line = one_line_error(Launch::new(&["--token", "tiny-secret"]));
    assert!(
        line.contains("32") && !line.contains("tiny-secret"),
        "{line}"
    );
    let line = one_line_error(Launch::new(&["--config", "/nonexistent/gabp/bridge.json"]));
    assert!(line.contains("/nonexistent/gabp/bridge.json"), "{line}");
    let line = one_line_error(Launch::new(&[]).env("GABP_SERVER_PORT", "eighty"));
    assert!(line.contains("GABP_SERVER_PORT"), "{line}");

    // A live socket is never taken over.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("taken.sock");
    let listen = format!("unix://{}", path.display());
    let mut first = Launch::new(&["--listen", &listen, "--token", TOKEN]).spawn(false);
    first.listening_on();
    let line = one_line_error(Launch::new(&["--listen", &listen, "--token", TOKEN]));
    assert!(line.contains("taken.sock"), "{line}");
    let mut c = first.connect(&listen);
    c.hello(TOKEN);
    first.signal("TERM");
    first.assert_clean_exit();

    // Usage errors are clap's (exit 2).
    let out = Launch::new(&["--stdio", "--listen", "tcp://127.0.0.1:0"]).output();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn help_has_an_example() {
    let out = Launch::new(&["--help"]).output();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "--listen",
        "--stdio",
        "--token",
        "--config",
        "Examples:",
        "gabp mod --stdio",
    ] {
        assert!(text.contains(needle), "{needle} in:\n{text}");
    }
}

#[test]
fn frames_pass_strict_decoding_even_for_bad_input() {
    // Garbage and oversized input are answered with strictly valid error responses; the session goes on.
    let mut m = Launch::new(&["--stdio", "--token", TOKEN]).spawn(true);
    let mut c = m.stdio();
    c.write_raw(b"Content-Length: 9\r\n\r\nnot json!");
    match c.recv() {
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
    c.close_input();
    assert!(c.until_closed().is_empty());
    m.assert_clean_exit();
}
