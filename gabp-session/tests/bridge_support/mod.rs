//! A scripted mock mod for the bridge tests: frame-level, over `tokio::io::duplex`.
//!
//! Every frame the bridge writes is checked with the STRICT decoder.
#![allow(dead_code)]
// Test code: a failed unwrap is a failed test (clippy allows it only inside #[test] functions).
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use gabp_session::bridge::{Bridge, BridgeBuilder};
use gabp_session::Error;
use gabp_transport::{Connection, Frame, Token};
use gabp_types::decode::{decode, DecodeMode};
use gabp_types::{Message, MessageId, Request};
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

/// The mod end of a connection, driven by the test.
pub struct MockMod {
    conn: Connection,
}

/// A connected pair: the bridge's end and the mock mod.
pub fn pair() -> (Connection, MockMod) {
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    (
        Connection::new(ours),
        MockMod {
            conn: Connection::new(theirs),
        },
    )
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
    /// The next frame body the bridge wrote; `None` at end of stream.
    pub async fn recv_body(&mut self) -> Option<Bytes> {
        let next = tokio::time::timeout(PATIENCE, self.conn.next())
            .await
            .expect("the bridge wrote nothing in time");
        match next? {
            Ok(Frame::Body(body)) => Some(body),
            Ok(Frame::Oversized { .. }) => panic!("the bridge wrote an oversized frame"),
            Err(e) => panic!("the bridge broke the framing: {e}"),
        }
    }

    /// The next message, which must pass the strict decoder.
    pub async fn recv_message(&mut self) -> Option<Message> {
        let body = self.recv_body().await?;
        match decode(&body, DecodeMode::Strict) {
            Ok(message) => Some(message),
            Err(e) => panic!(
                "the bridge sent a frame the strict decoder refuses: {e}\n{}",
                String::from_utf8_lossy(&body)
            ),
        }
    }

    /// The next request (strictly valid); panics on anything else or at end of stream.
    pub async fn recv(&mut self) -> Request {
        match self.recv_message().await {
            Some(Message::Request(r)) => r,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    /// The next request, which must be for `method`.
    pub async fn expect(&mut self, method: &str) -> Request {
        let request = self.recv().await;
        assert_eq!(
            request.method.as_str(),
            method,
            "unexpected request {request:?}"
        );
        request
    }

    /// Waits `within` for a frame; `None` if none came (or the stream ended).
    pub async fn try_recv(&mut self, within: Duration) -> Option<Message> {
        match tokio::time::timeout(within, self.conn.next()).await {
            Ok(Some(Ok(Frame::Body(body)))) => Some(
                decode(&body, DecodeMode::Strict).expect("the bridge sent a strictly valid frame"),
            ),
            _ => None,
        }
    }

    /// Writes `body` verbatim as one frame.
    pub async fn send_raw(&mut self, body: impl Into<String>) {
        let body: String = body.into();
        self.conn
            .send(Bytes::from(body))
            .await
            .expect("the bridge reads");
    }

    /// Writes a JSON value as one frame.
    pub async fn send(&mut self, value: Value) {
        self.send_raw(value.to_string()).await;
    }

    /// Answers `id` with `result`.
    pub async fn reply(&mut self, id: MessageId, result: Value) {
        self.send(json!({"v": "gabp/1", "id": id, "type": "response", "result": result}))
            .await;
    }

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
        self.send(json!({"v": "gabp/1", "id": id, "type": "response", "error": error}))
            .await;
    }

    /// Publishes an event.
    pub async fn event(&mut self, channel: &str, seq: u64, payload: Value) {
        self.send(json!({
            "v": "gabp/1", "id": MessageId::new_v4(), "type": "event",
            "channel": channel, "seq": seq, "payload": payload
        }))
        .await;
    }

    /// Reads `session/hello`, checks the token, answers with a welcome advertising `methods`.
    pub async fn handshake(&mut self, methods: &[&str]) -> Request {
        self.handshake_with(welcome(methods, &["player/move", "world/block_change"]))
            .await
    }

    /// Reads `session/hello`, checks the token, answers with `welcome`.
    pub async fn handshake_with(&mut self, welcome: Value) -> Request {
        let hello = self.expect("session/hello").await;
        assert_eq!(hello.params.as_ref().unwrap().to_value()["token"], TOKEN);
        self.reply(hello.id, welcome).await;
        hello
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
    pub async fn close(mut self) {
        let _ = self.conn.close().await;
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
