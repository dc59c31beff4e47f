//! A scripted mock mod for the bridge tests: `gabp_testkit::wire::RawMod` over `tokio::io::duplex`, which checks
//! every frame the bridge writes with the STRICT decoder.
#![allow(dead_code)]
// Test code: a failed unwrap is a failed test (clippy allows it only inside #[test] functions).
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use gabp_session::bridge::{Bridge, BridgeBuilder};
use gabp_session::Error;
use gabp_testkit::wire::RawMod;
use gabp_transport::{Connection, Token};
use gabp_types::{MessageId, Request};
use serde_json::{json, Value};

/// The token the mock expects.
pub const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// Every core method.
pub const ALL_METHODS: &[&str] = gabp_types::methods::CORE_METHODS;

/// How long a mock waits for the bridge before failing the test.
pub const PATIENCE: Duration = Duration::from_secs(10);

pub fn token() -> Token {
    Token::new(TOKEN).expect("valid token")
}

/// The mod end of a connection, driven by the test: `gabp_testkit::wire::RawMod` with this suite's handshake,
/// errors, events and subscriptions.
pub struct MockMod(RawMod);

impl std::ops::Deref for MockMod {
    type Target = RawMod;

    fn deref(&self) -> &RawMod {
        &self.0
    }
}

impl std::ops::DerefMut for MockMod {
    fn deref_mut(&mut self) -> &mut RawMod {
        &mut self.0
    }
}

/// A connected pair: the bridge's end and the mock mod.
pub fn pair() -> (Connection, MockMod) {
    let (conn, raw) = RawMod::pair();
    (conn, MockMod(raw))
}

/// A welcome advertising `methods` and `events`.
pub fn welcome(methods: &[&str], events: &[&str]) -> Value {
    json!({
        "agentId": "mock-mod",
        "app": {"name": "Mock Game", "version": "1.0.0"},
        "capabilities": {"methods": methods, "events": events},
        "schemaVersion": "1.1",
        "serverInfo": {"name": "mock", "version": "0.0.1"}
    })
}

impl MockMod {
    /// Answers `id` with an error.
    pub async fn reply_error(
        &mut self,
        id: MessageId,
        code: i64,
        message: &str,
        data: Option<Value>,
    ) {
        let mut error = json!({"code": code, "message": message});
        if let Some(data) = data {
            error["data"] = data;
        }
        self.0.reply_error(id, error).await;
    }

    /// Publishes an event.
    pub async fn event(&mut self, channel: &str, seq: u64, payload: Value) {
        self.event_at(channel, seq, payload).await;
    }

    /// Reads `session/hello`, checks the token, answers with a welcome advertising `methods`.
    pub async fn handshake(&mut self, methods: &[&str]) -> Request {
        self.handshake_with(welcome(methods, &["player/move", "world/block_change"]))
            .await
    }

    /// Reads `session/hello`, checks the token, answers with `welcome`.
    pub async fn handshake_with(&mut self, welcome: Value) -> Request {
        self.accept_hello(TOKEN, welcome).await
    }

    /// Reads `events/subscribe` and grants the channels in `grant` that were asked for.
    pub async fn grant_subscribe(&mut self, grant: &[&str]) -> Vec<String> {
        let request = self.expect("events/subscribe").await;
        let asked: Vec<String> = request.params.as_ref().unwrap().to_value()["channels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_owned())
            .collect();
        let granted: Vec<&String> = asked
            .iter()
            .filter(|c| grant.contains(&c.as_str()))
            .collect();
        self.reply(request.id, json!({ "subscribed": granted }))
            .await;
        asked
    }

    /// Closes the mod's end.
    pub async fn close(self) {
        self.0.close().await;
    }
}

/// A bridge over a fresh pair, handshake done with a welcome advertising every core method.
pub async fn connected() -> (Bridge, MockMod) {
    connected_with(Bridge::builder(token()), ALL_METHODS).await
}

/// A bridge built by `builder` over a fresh pair, handshake done with a welcome advertising `methods`.
pub async fn connected_with(builder: BridgeBuilder, methods: &[&str]) -> (Bridge, MockMod) {
    let (conn, mut mock) = pair();
    let (bridge, _) = tokio::join!(builder.over(conn), mock.handshake(methods));
    (bridge.expect("handshake succeeds"), mock)
}

/// Fails the test if `future` takes longer than `PATIENCE`.
pub async fn soon<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(PATIENCE, future)
        .await
        .expect("did not finish in time")
}

/// Shorthand: the error of a call that must fail.
pub fn err<T: std::fmt::Debug>(result: Result<T, Error>) -> Error {
    result.expect_err("the call must fail")
}
