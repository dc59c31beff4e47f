//! [`RawMod`]: a mod written by hand, the mirror of [`RawClient`](super::RawClient). A bridge test scripts every
//! frame the mod reads and writes; every frame the bridge writes must pass the strict decoder.

use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use gabp_transport::{Connection, Frame};
use gabp_types::decode::{decode, DecodeMode};
use gabp_types::{Message, MessageId, Request};
use serde_json::{json, Value};

/// How long a [`RawMod`] waits for the bridge before it fails the test, unless
/// [`set_patience`](RawMod::set_patience) says otherwise.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// The mod end of a connection, driven by the test. It panics (failing the test) when the bridge writes
/// nothing in time, breaks the framing or writes a message the strict decoder refuses.
///
/// ```
/// use gabp_session::bridge::Bridge;
/// use gabp_testkit::wire::RawMod;
/// use gabp_transport::Token;
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let token = "0123456789abcdef0123456789abcdef";
/// let (conn, mut mock) = RawMod::pair();
/// let welcome = json!({
///     "agentId": "mock", "app": {"name": "Mock", "version": "1.0.0"},
///     "capabilities": {"methods": ["tools/call"], "events": []}, "schemaVersion": "1.1"
/// });
/// let (bridge, _) = tokio::join!(Bridge::over(conn, Token::new(token)?), mock.accept_hello(token, welcome));
/// let bridge = bridge?;
///
/// let call = async {
///     let request = mock.expect("tools/call").await;
///     mock.reply(request.id, json!({"placed": true})).await;
/// };
/// let (result, ()) = tokio::join!(bridge.call_tool("world/place_block", json!({})), call);
/// assert_eq!(result?["placed"], true);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct RawMod {
    conn: Connection,
    patience: Duration,
}

impl RawMod {
    /// The mod end of `conn`.
    #[must_use]
    pub fn new(conn: Connection) -> Self {
        RawMod {
            conn,
            patience: PATIENCE,
        }
    }

    /// A connected pair over memory (1 MiB each way): the bridge's end and the mod.
    #[must_use]
    pub fn pair() -> (Connection, RawMod) {
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        (Connection::new(ours), RawMod::new(Connection::new(theirs)))
    }

    /// How long to wait for the bridge before failing.
    pub fn set_patience(&mut self, patience: Duration) {
        self.patience = patience;
    }

    /// The next frame body the bridge wrote; `None` at the end of the stream.
    pub async fn recv_body(&mut self) -> Option<Bytes> {
        let next = tokio::time::timeout(self.patience, self.conn.next())
            .await
            .expect("the bridge wrote nothing in time");
        match next? {
            Ok(Frame::Body(body)) => Some(body),
            Ok(Frame::Oversized { .. }) => panic!("the bridge wrote an oversized frame"),
            Err(e) => panic!("the bridge broke the framing: {e}"),
        }
    }

    /// The next message, which must pass the strict decoder; `None` at the end of the stream.
    pub async fn recv_message(&mut self) -> Option<Message> {
        let body = self.recv_body().await?;
        Some(strict(&body))
    }

    /// The next request.
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

    /// Waits `within` for a message; `None` if none came or the stream ended.
    pub async fn try_recv(&mut self, within: Duration) -> Option<Message> {
        match tokio::time::timeout(within, self.conn.next()).await {
            Ok(Some(Ok(Frame::Body(body)))) => Some(strict(&body)),
            _ => None,
        }
    }

    /// Writes `body` verbatim as one frame.
    pub async fn send_raw(&mut self, body: impl Into<Bytes>) {
        self.conn.send(body.into()).await.expect("the bridge reads");
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

    /// Answers `id` with the error object `error`.
    pub async fn reply_error(&mut self, id: MessageId, error: Value) {
        self.send(json!({"v": "gabp/1", "id": id, "type": "response", "error": error}))
            .await;
    }

    /// Writes an event of `channel` with `seq`.
    pub async fn event_at(&mut self, channel: &str, seq: u64, payload: Value) {
        self.send(json!({
            "v": "gabp/1", "id": MessageId::new_v4(), "type": "event",
            "channel": channel, "seq": seq, "payload": payload
        }))
        .await;
    }

    /// Reads `session/hello`, checks that it carries `token`, and answers with `welcome`.
    pub async fn accept_hello(&mut self, token: &str, welcome: Value) -> Request {
        let hello = self.expect("session/hello").await;
        let params = hello.params.as_ref().map(gabp_types::Params::to_value);
        assert_eq!(
            params.as_ref().and_then(|p| p["token"].as_str()),
            Some(token),
            "session/hello carries the token"
        );
        self.reply(hello.id, welcome).await;
        hello
    }

    /// Closes the mod's end.
    pub async fn close(mut self) {
        let _ = self.conn.close().await;
    }
}

fn strict(body: &[u8]) -> Message {
    match decode(body, DecodeMode::Strict) {
        Ok(message) => message,
        Err(e) => panic!(
            "the bridge sent a frame the strict decoder refuses: {e}\n{}",
            String::from_utf8_lossy(body)
        ),
    }
}
