//! `gabp inspect` without a browser: the real binary against `gabp mod`, spoken to in plain HTTP/1.1 over a
//! socket. The secret and the Origin/Host checks guard every URL; the API lists tools, calls them (errors keep
//! the mod's data), shows attention, streams events and pauses, steps and resumes the game's clock.

mod mod_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use mod_support::{Launch, ModProcess, PATIENCE, TOKEN};
use serde_json::{json, Value};

/// A running `gabp inspect` against a running `gabp mod`.
struct Inspect {
    child: Child,
    _game: ModProcess,
    _home: tempfile::TempDir,
    /// `127.0.0.1:PORT`.
    host: String,
    /// `/s/SECRET`.
    prefix: String,
}

impl Drop for Inspect {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Inspect {
    let mut game = Launch::new(&["--listen", "tcp://127.0.0.1:0", "--token", TOKEN]).spawn(false);
    let endpoint = game.listening_on();
    let home = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_gabp"))
        .args(["inspect", "--connect", &endpoint])
        .env("GABP_TOKEN", TOKEN)
        .env("XDG_CONFIG_HOME", home.path())
        .env("HOME", home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn gabp inspect");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read the URL");
    let url = line
        .trim()
        .strip_prefix("inspector at http://")
        .unwrap_or_else(|| panic!("expected `inspector at URL`, got {line:?}"));
    let (host, path) = url.split_once('/').expect("a path in the URL");
    let prefix = format!("/{}", path.trim_end_matches('/'));
    assert!(host.starts_with("127.0.0.1:"), "{url}");
    assert!(prefix.starts_with("/s/") && prefix.len() == 3 + 64, "{url}");
    Inspect {
        child,
        _game: game,
        _home: home,
        host: host.to_owned(),
        prefix,
    }
}

/// A response: status, headers (lower-case names) and body.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

fn request(
    inspect: &Inspect,
    method: &str,
    path: &str,
    extra: &[(&str, &str)],
    body: Option<&Value>,
) -> Response {
    let mut stream = TcpStream::connect(&inspect.host).expect("connect to gabp inspect");
    stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !extra.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {}\r\n", inspect.host));
    }
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    stream
        .write_all(format!("{head}\r\n{body}").as_bytes())
        .expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the response");
    let text = String::from_utf8(raw).expect("UTF-8");
    let (head, body) = text.split_once("\r\n\r\n").expect("a complete response");
    let mut lines = head.lines();
    let status = lines
        .next()
        .expect("status line")
        .split(' ')
        .nth(1)
        .expect("status");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v == "chunked");
    Response {
        status: status.parse().expect("numeric status"),
        body: if chunked {
            dechunk(body)
        } else {
            body.to_owned()
        },
        headers,
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).expect("chunk size");
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
    out
}

fn get(inspect: &Inspect, path: &str) -> Response {
    request(
        inspect,
        "GET",
        &format!("{}{path}", inspect.prefix),
        &[],
        None,
    )
}

fn post(inspect: &Inspect, path: &str, body: Value) -> Value {
    let response = request(
        inspect,
        "POST",
        &format!("{}{path}", inspect.prefix),
        &[],
        Some(&body),
    );
    assert_eq!(response.status, 200, "{}", response.body);
    response.json()
}

#[test]
fn nothing_without_the_secret_and_nothing_for_another_origin() {
    let inspect = start();
    let wrong = format!("/s/{}", "0".repeat(64));
    for path in [
        "/",
        "/api/tools",
        "/page.js",
        "/s/",
        &format!("{wrong}/api/tools"),
        &format!("{wrong}/"),
    ] {
        let response = request(&inspect, "GET", path, &[], None);
        assert_eq!(response.status, 404, "{path}");
        assert!(!response.body.contains("world/place_block"), "{path}");
    }
    let call = json!({"name": "world/place_block", "arguments": {"x": 1, "y": 1, "z": 1, "blockType": "stone"}});
    let path = format!("{}/api/call", inspect.prefix);
    let own = format!("http://{}", inspect.host);
    for headers in [
        vec![("Origin", "http://evil.example")],
        vec![("Origin", "null")],
        vec![("Origin", own.replace("http:", "https:").as_str())],
        vec![("Host", "evil.example")],
    ] {
        let response = request(&inspect, "POST", &path, &headers, Some(&call));
        assert_eq!(response.status, 403, "{headers:?}");
    }
    // The page's own origin, and no Origin at all (a same-origin GET), are let in.
    let response = request(
        &inspect,
        "GET",
        &format!("{}/api/tools", inspect.prefix),
        &[("Origin", &own)],
        None,
    );
    assert_eq!(response.status, 200);

    let page = get(&inspect, "/");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("<title>gabp inspect</title>"));
    let csp = page.header("content-security-policy").expect("a CSP");
    assert!(
        csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
        "{csp}"
    );
    assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
    let script = get(&inspect, "/page.js");
    assert_eq!(script.status, 200);
    assert!(script
        .header("content-type")
        .unwrap_or_default()
        .starts_with("text/javascript"));
    // Without the final slash, the page's relative URLs would miss the secret: it redirects.
    let bare = request(&inspect, "GET", &inspect.prefix, &[], None);
    assert_eq!(bare.status, 308);
    assert_eq!(
        bare.header("location"),
        Some(format!("{}/", inspect.prefix).as_str())
    );
}

#[test]
fn the_api_lists_calls_keeps_errors_streams_events_and_acknowledges() {
    let inspect = start();
    let info = get(&inspect, "/api/info").json();
    assert_eq!(info["connected"], true);
    assert_eq!(info["welcome"]["agentId"], "voxel-demo");
    assert!(info["welcome"]["capabilities"]["events"]
        .as_array()
        .expect("events")
        .contains(&json!("world/block_change")));

    let tools = get(&inspect, "/api/tools").json();
    let place = tools["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "world/place_block")
        .expect("world/place_block listed");
    assert!(place["description"].as_str().is_some_and(|d| !d.is_empty()));
    assert_eq!(
        place["inputSchema"]["required"],
        json!(["x", "y", "z", "blockType"])
    );

    // The event stream, opened before the call.
    let mut events = TcpStream::connect(&inspect.host).expect("connect");
    events.set_read_timeout(Some(PATIENCE)).expect("timeout");
    write!(
        events,
        "GET {}/api/events HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n\r\n",
        inspect.prefix, inspect.host
    )
    .expect("send");
    let mut events = BufReader::new(events);
    let mut subscribed = false;
    let mut lines = Vec::new();
    while !subscribed {
        let mut line = String::new();
        assert!(
            events.read_line(&mut line).expect("read the stream") > 0,
            "the stream ended: {lines:?}"
        );
        subscribed = line.contains(r#""type":"subscribed""#);
        lines.push(line);
    }
    assert!(lines[0].starts_with("HTTP/1.1 200"), "{lines:?}");
    assert!(
        lines.iter().any(|l| l.contains(r#""state":"connected""#)),
        "{lines:?}"
    );

    let placed = post(
        &inspect,
        "/api/call",
        json!({"name": "world/place_block", "arguments": {"x": 2, "y": 9, "z": 4, "blockType": "glass"}}),
    );
    assert_eq!(
        placed["result"],
        json!({"success": true, "blockPlaced": "glass"})
    );
    let started = Instant::now();
    let event = loop {
        let mut line = String::new();
        assert!(
            events.read_line(&mut line).expect("read the stream") > 0,
            "the stream ended"
        );
        if let Some(data) = line.trim().strip_prefix("data: ") {
            let message: Value = serde_json::from_str(data).expect("JSON data");
            if message["type"] == "event" && message["event"]["channel"] == "world/block_change" {
                break message["event"].clone();
            }
        }
        assert!(
            started.elapsed() < PATIENCE,
            "no world/block_change on the stream"
        );
    };
    assert_eq!(
        event["payload"],
        json!({"x": 2, "y": 9, "z": 4, "block": "glass"})
    );

    // A bad argument: the mod's -32602 keeps data.errors and their paths.
    let bad = post(
        &inspect,
        "/api/call",
        json!({"name": "world/place_block", "arguments": {"x": "two", "y": 9, "z": 4, "blockType": "glass"}}),
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert_eq!(
        bad["error"]["data"]["errors"][0]["path"], "/params/arguments/x",
        "{bad}"
    );
    // A tool's own failure keeps its data too.
    let outside = post(
        &inspect,
        "/api/call",
        json!({"name": "world/place_block", "arguments": {"x": 99, "y": 9, "z": 4, "blockType": "glass"}}),
    );
    assert_eq!(outside["error"]["data"]["field"], "x", "{outside}");
    let unknown = post(
        &inspect,
        "/api/call",
        json!({"name": "world/nope", "arguments": {}}),
    );
    assert!(unknown["error"]["code"].is_i64(), "{unknown}");
    let malformed = request(
        &inspect,
        "POST",
        &format!("{}/api/call", inspect.prefix),
        &[],
        Some(&json!({})),
    );
    assert_eq!(malformed.status, 400);

    // Pictures come back as content items.
    let render = post(
        &inspect,
        "/api/call",
        json!({"name": "world/render", "arguments": {"scale": 2}}),
    );
    assert_eq!(render["content"][0]["type"], "image", "{render}");
    assert_eq!(render["content"][0]["mimeType"], "image/png");
    assert!(render["result"].get("_content").is_none());

    // Resources and their content.
    let resources = get(&inspect, "/api/resources").json();
    assert!(resources["resources"].as_array().expect("resources").len() >= 2);
    let world = post(
        &inspect,
        "/api/resource",
        json!({"uri": "gabp://game/world"}),
    );
    assert_eq!(world["resource"]["mimeType"], "application/json", "{world}");

    // Attention: opened by the game, acknowledged through the API.
    assert_eq!(
        get(&inspect, "/api/attention").json()["attention"],
        Value::Null
    );
    post(
        &inspect,
        "/api/call",
        json!({"name": "demo/raise_error", "arguments": {"message": "boom"}}),
    );
    let open = get(&inspect, "/api/attention").json();
    let id = open["attention"]["attentionId"]
        .as_str()
        .expect("an open item")
        .to_owned();
    assert_eq!(open["attention"]["blocking"], true);
    let ack = post(&inspect, "/api/ack", json!({"attentionId": id}));
    assert!(ack.get("error").is_none(), "{ack}");
    assert_eq!(
        get(&inspect, "/api/attention").json()["attention"],
        Value::Null
    );
}

/// The sheep of `world/entities` by id: (x, z, moves), and the world's tick.
fn sheep(inspect: &Inspect) -> (u64, Vec<(String, i64, i64, u64)>) {
    let answer = post(
        inspect,
        "/api/call",
        json!({"name": "world/entities", "arguments": {}}),
    );
    let result = &answer["result"];
    let mut flock: Vec<_> = result["entities"]
        .as_array()
        .unwrap_or_else(|| panic!("entities: {answer}"))
        .iter()
        .map(|e| {
            let number = |key: &str| e[key].as_i64().unwrap_or_else(|| panic!("{key}: {e}"));
            (
                e["id"].as_str().expect("id").to_owned(),
                number("x"),
                number("z"),
                e["moves"].as_u64().expect("moves"),
            )
        })
        .collect();
    flock.sort();
    (result["tick"].as_u64().expect("tick"), flock)
}

#[test]
fn the_clock_pauses_steps_and_resumes_through_the_api() {
    let inspect = start();
    let welcome = get(&inspect, "/api/info").json()["welcome"].clone();
    assert_eq!(
        welcome["capabilities"]["extensions"]["time-control"]["channel"],
        "time/changed"
    );
    let paused = post(&inspect, "/api/time", json!({"method": "time/pause"}));
    assert_eq!(paused["time"]["paused"], true, "{paused}");
    let tick = paused["time"]["tick"].as_u64().expect("tick");
    let (world_tick, before) = sheep(&inspect);
    assert_eq!(world_tick, tick);
    // Paused, the world stands still.
    assert_eq!(
        post(&inspect, "/api/time", json!({"method": "time/status"}))["time"],
        json!({"paused": true, "tick": tick})
    );

    let stepped = post(
        &inspect,
        "/api/time",
        json!({"method": "time/step", "ticks": 3}),
    );
    assert_eq!(stepped["time"], json!({"paused": true, "tick": tick + 3}));
    let (world_tick, after) = sheep(&inspect);
    assert_eq!(world_tick, tick + 3);
    assert!(!before.is_empty());
    for ((id, x0, z0, moves0), (_, x1, z1, moves1)) in before.iter().zip(&after) {
        // Each sheep walks one block per tick: three blocks, so it stands 1 or 3 blocks away.
        assert_eq!(moves1 - moves0, 3, "{id}");
        let distance = (x1 - x0).abs() + (z1 - z0).abs();
        assert!(
            distance == 1 || distance == 3,
            "{id} moved {distance} blocks"
        );
    }

    // A count out of range is refused (by the bridge's own check of the params) and says why; a method that
    // is not a time method never leaves.
    let refused = post(
        &inspect,
        "/api/time",
        json!({"method": "time/step", "ticks": 0}),
    );
    let why = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(why.contains("/params/ticks"), "{refused}");
    let other = request(
        &inspect,
        "POST",
        &format!("{}/api/time", inspect.prefix),
        &[],
        Some(&json!({"method": "world/place_block"})),
    );
    assert_eq!(other.status, 400, "{}", other.body);

    let resumed = post(&inspect, "/api/time", json!({"method": "time/resume"}));
    assert_eq!(resumed["time"]["paused"], false, "{resumed}");
}
