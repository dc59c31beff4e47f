//! Test support: a raw client for a mod (`gabp_testkit::wire`, strictly checking everything the mod writes), a
//! scripted mock mod for the bridge gate (strictly checking everything the bridge writes), and the fixture
//! corpora.
#![allow(dead_code)]
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use gabp_session::server::ModServer;
use gabp_testkit::wire::{RawClient, RawMod};
use gabp_transport::{Connection, Token};
use gabp_types::{Attention, Event};
use serde_json::{json, Value};

/// The token every test uses.
pub const TOKEN: &str = "5e9c0f6a1b2d3c4e5f60718293a4b5c6d7e8f9011223344556677889900aabbc";

/// How long a test waits for the other side before failing.
pub const PATIENCE: Duration = Duration::from_secs(10);

pub fn token() -> Token {
    Token::new(TOKEN).unwrap()
}

// ---- fixtures ---------------------------------------------------------------------------------------------

/// The upstream GABP 1.1.0 reference, when `../shared` exists; never copied into the repository.
pub fn upstream() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/reference/gabp-1.1.0");
    dir.is_dir().then_some(dir)
}

/// This repository's corpus root (`CONFORMANCE/1.0`, `EXAMPLES/1.0`).
pub fn ours() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn fixture(path: impl AsRef<Path>) -> Value {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// The files of `dir` whose names contain `part`, sorted.
pub fn files(dir: impl AsRef<Path>, part: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir.as_ref())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains(part) && n.ends_with(".json"))
        })
        .collect();
    out.sort();
    out
}

/// An attention event with its payload. (`RawClient` decoded the event strictly, which checks an attention
/// channel's payload against the attention object.)
pub fn with_attention(event: Event) -> (Event, Attention) {
    let attention = serde_json::from_value(event.payload.clone()).unwrap();
    (event, attention)
}

// ---- a raw client of a mod --------------------------------------------------------------------------------

/// Serves `server` on a fresh duplex pair to a raw client (which decodes every frame the mod writes strictly,
/// responses also against their method's result schema) and says hello.
pub async fn connect(server: &ModServer) -> RawClient {
    let (mod_side, client_side) = tokio::io::duplex(1 << 20);
    tokio::spawn(server.serve_connection(Connection::new(mod_side)));
    let mut client = RawClient::new(client_side);
    client.hello(TOKEN).await;
    client
}

// ---- a scripted mock mod for the bridge gate ----------------------------------------------------------------

/// Every method a mod with attention advertises.
pub const METHODS: &[&str] = &[
    "session/hello",
    "session/ping",
    "session/goodbye",
    "tools/list",
    "tools/call",
    "events/subscribe",
    "events/unsubscribe",
    "attention/current",
    "attention/ack",
];

/// The attention channels.
pub const CHANNELS: &[&str] = &["attention/opened", "attention/updated", "attention/cleared"];

/// The mock's tools: one that changes the game and one tagged `status`.
pub fn tools() -> Value {
    let object = json!({"type": "object"});
    json!({"tools": [
        {"name": "world/place_block", "title": "Place", "description": "Places a block",
         "inputSchema": object, "outputSchema": object, "tags": ["world", "write"]},
        {"name": "game/status", "title": "Status", "description": "Status",
         "inputSchema": object, "outputSchema": object, "tags": ["status"]}
    ]})
}

/// The mod end of a connection, driven by the test: `gabp_testkit::wire::RawMod` (every frame the bridge writes
/// must pass the strict decoder) with the gate's handshake and sync, and a `seq` per channel.
pub struct MockMod {
    raw: RawMod,
    seq: std::collections::HashMap<String, u64>,
}

impl std::ops::Deref for MockMod {
    type Target = RawMod;

    fn deref(&self) -> &RawMod {
        &self.raw
    }
}

impl std::ops::DerefMut for MockMod {
    fn deref_mut(&mut self) -> &mut RawMod {
        &mut self.raw
    }
}

/// A connected pair: the bridge's end and the mock.
pub fn pair() -> (Connection, MockMod) {
    let (conn, raw) = RawMod::pair();
    (conn, MockMod::from_raw(raw))
}

impl MockMod {
    pub fn new(conn: Connection) -> Self {
        MockMod::from_raw(RawMod::new(conn))
    }

    fn from_raw(raw: RawMod) -> Self {
        MockMod {
            raw,
            seq: Default::default(),
        }
    }

    /// Publishes `payload` on `channel` with the channel's next `seq` (from 0).
    pub async fn event(&mut self, channel: &str, payload: Value) {
        let seq = self.seq.get(channel).copied().unwrap_or(0);
        self.event_at(channel, seq, payload).await;
    }

    /// Publishes `payload` on `channel` with an explicit `seq`.
    pub async fn event_at(&mut self, channel: &str, seq: u64, payload: Value) {
        self.seq.insert(channel.to_owned(), seq + 1);
        self.raw.event_at(channel, seq, payload).await;
    }

    /// Answers `session/hello` with a welcome advertising attention.
    pub async fn handshake(&mut self) {
        self.handshake_with(METHODS, CHANNELS).await;
    }

    pub async fn handshake_with(&mut self, methods: &[&str], events: &[&str]) {
        let welcome = json!({
            "agentId": "mock-game", "app": {"name": "Mock Game", "version": "1.0.0"},
            "capabilities": {"methods": methods, "events": events},
            "schemaVersion": "1.1"
        });
        self.accept_hello(TOKEN, welcome).await;
    }

    /// Serves what a gate asks while it syncs: `events/subscribe` (granted; only when `subscribe`),
    /// `attention/current` (answered `current`) and `tools/list`, in whatever order they come.
    pub async fn serve_sync(&mut self, subscribe: bool, current: Value) {
        let mut left: Vec<&str> = vec!["attention/current", "tools/list"];
        if subscribe {
            // The subscription comes first: the refresh must see every event after it.
            let r = self.expect("events/subscribe").await;
            let channels = r.params.as_ref().unwrap().to_value()["channels"].clone();
            self.reply(r.id, json!({ "subscribed": channels })).await;
        }
        while !left.is_empty() {
            let r = self.recv().await;
            let method = r.method.as_str().to_owned();
            assert!(
                left.contains(&method.as_str()),
                "unexpected {method} while syncing"
            );
            left.retain(|m| *m != method);
            let result = match method.as_str() {
                "attention/current" => json!({ "attention": current }),
                _ => tools(),
            };
            self.reply(r.id, result).await;
        }
    }

    /// Answers one `session/ping`: a round trip that proves the bridge read everything written before.
    pub async fn answer_ping(&mut self) {
        let r = self.expect("session/ping").await;
        self.reply(r.id, json!({})).await;
    }

    pub async fn close(self) {
        self.raw.close().await;
    }
}

/// An attention object.
pub fn item(id: &str, blocking: bool) -> Value {
    json!({
        "attentionId": id, "state": "open", "severity": "error", "blocking": blocking,
        "stateInvalidated": true, "summary": format!("item {id}"),
        "openedAtSequence": 1, "latestSequence": 1, "totalUrgentEntries": 1
    })
}

/// The same item, cleared.
pub fn cleared(id: &str) -> Value {
    let mut v = item(id, false);
    v["state"] = json!("cleared");
    v
}
