//! The whole surface of the demo game, exercised on one connection by the raw client of `mod_support`: every
//! method, tool, channel, resource and state component, each answer checked against its schema.

use std::collections::HashMap;

use base64::Engine as _;
use gabp_types::ErrorCode;
use serde_json::{json, Value};

use gabp_testkit::wire::{hello_params, BlockingClient};

use crate::mod_support::{unix_now, TOKEN};

const TOOLS: [&str; 11] = [
    "world/get_block",
    "world/place_block",
    "inventory/get",
    "player/teleport",
    "demo/echo",
    "demo/sleep",
    "demo/raise_error",
    "demo/status",
    "demo/set_bonus",
    "world/entities",
    "world/render",
];

const METHODS: [&str; 24] = [
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
    "tools/cancel",
    "time/status",
    "time/pause",
    "time/resume",
    "time/step",
    "input/key",
    "input/text",
    "input/mouse",
    "env/spaces",
    "env/reset",
    "env/step",
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
    fn call(&self, c: &mut BlockingClient, tool: &str, arguments: Value) -> Value {
        let (input, output) = &self.0[tool];
        assert!(
            input.is_valid(&arguments),
            "{tool}: {arguments} fails inputSchema"
        );
        let result = c
            .call_tool(tool, arguments.clone())
            .into_result()
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
fn tool_fails(
    c: &mut BlockingClient,
    tool: &str,
    arguments: Value,
) -> (i64, gabp_types::ErrorObject) {
    match c.call_tool(tool, arguments.clone()).into_result() {
        Ok(v) => panic!("{tool} {arguments} succeeded with {v}"),
        Err(e) => (code(&e), e),
    }
}

/// The whole surface of the demo game on one fresh connection to a fresh mod, ending with `session/goodbye`.
pub(crate) fn exercise_surface(c: &mut BlockingClient) {
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
            "time/changed",
            "tools/changed",
            "world/block_change"
        ])
    );
    assert_eq!(
        caps["extensions"]["tools-changed"]["channel"],
        "tools/changed"
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
            "world/place_block" | "player/teleport" | "demo/raise_error" | "demo/set_bonus"
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
    assert_eq!(read_only["tools"].as_array().map(Vec::len), Some(7));

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
    let get = |c: &mut BlockingClient, x: i64, y: i64, z: i64| {
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

    // Time control freezes the sheep; a step of one tick moves each by one block; the picture is a PNG.
    let paused = c.ok("time/pause", None);
    assert_eq!(paused["paused"], true);
    let before = schemas.call(c, "world/entities", json!({}));
    assert_eq!(before["tick"], paused["tick"]);
    let stepped = c.ok("time/step", Some(json!({"ticks": 1})));
    assert_eq!(
        stepped["tick"].as_u64(),
        paused["tick"].as_u64().map(|t| t + 1)
    );
    let after = schemas.call(c, "world/entities", json!({}));
    assert_eq!(after["tick"], stepped["tick"]);
    assert_eq!(c.ok("time/resume", None)["paused"], false);
    let picture = schemas.call(c, "world/render", json!({"scale": 1}));
    assert_eq!(picture["width"], 16);
    assert_eq!(picture["_content"][0]["mimeType"], "image/png");

    // demo/set_bonus adds and removes demo/bonus; this connection is not subscribed to tools/changed, so
    // no event reaches it (the loop below fails on any other channel).
    let bonus = |c: &mut BlockingClient, enabled: bool| {
        schemas.call(c, "demo/set_bonus", json!({ "enabled": enabled }))
    };
    assert_eq!(bonus(c, true), json!({"enabled": true, "changed": true}));
    assert_eq!(bonus(c, true), json!({"enabled": true, "changed": false}));
    let listed = c.ok(
        "tools/list",
        Some(json!({"filter": {"namePattern": "demo/bonus"}})),
    );
    assert_eq!(listed["tools"][0]["name"], "demo/bonus");
    assert!(c
        .call_tool("demo/bonus", json!({}))
        .into_result()
        .expect("bonus")["message"]
        .is_string());
    assert_eq!(bonus(c, false), json!({"enabled": false, "changed": true}));
    assert_eq!(tool_fails(c, "demo/bonus", json!({})).0, -32400);

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
    assert!(c.events().is_empty(), "no more events: {:?}", c.events());
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
