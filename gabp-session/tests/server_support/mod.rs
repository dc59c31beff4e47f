//! A raw, frame-level bridge for testing the mod server: it writes bytes and frames, reads frames, and
//! decodes every frame the mod writes with the STRICT decoder (what we send must always be conformant).
#![allow(dead_code)]

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use gabp_codec::{Frame, FrameCodec};
use gabp_session::server::{CloseReason, ModServer, ModServerBuilder, ServerLimits};
use gabp_transport::{Connection, Token};
use gabp_types::decode::{decode, decode_response_to, DecodeMode};
use gabp_types::{Event, Message, MessageId, Response};
use serde_json::{json, Value};
use tokio::io::{AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;
use tokio_util::codec::{Encoder, FramedRead};

pub const TOKEN: &str = "6d6f642d746f6b656e2d666f722d74657374732d6f6e6c792d30313233343536";
pub const LAUNCH_ID: &str = "6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11";

/// How long a test waits for something that should happen promptly (generous for a loaded machine).
pub const PATIENCE: Duration = Duration::from_secs(10);

pub fn token() -> Token {
    Token::new(TOKEN).expect("token")
}

/// A builder with the test token.
pub fn builder() -> ModServerBuilder {
    ModServer::builder()
        .app("Test Game", "1.0.0")
        .agent_id("test-mod")
        .token(token())
}

pub fn limits() -> ServerLimits {
    ServerLimits::default()
}

pub fn hello_params(token: &str) -> Value {
    json!({
        "token": token,
        "bridgeVersion": "1.0.0",
        "platform": "linux",
        "launchId": LAUNCH_ID,
        "clientInfo": {"name": "raw-test-client", "version": "0"}
    })
}

/// A raw bridge over an in-memory duplex pair, connected to a [`ModServer`].
pub struct RawClient {
    reader: FramedRead<ReadHalf<DuplexStream>, FrameCodec>,
    /// The writing half, shareable with a task that writes while the test reads.
    pub writer: std::sync::Arc<tokio::sync::Mutex<WriteHalf<DuplexStream>>>,
    pub served: JoinHandle<CloseReason>,
    /// Events received while waiting for responses.
    pub events: Vec<Event>,
    /// How long to wait for a frame (raise it for tests on paused time, where it is virtual).
    pub patience: Duration,
}

/// Connects a raw client to `server` with a duplex buffer of `buffer` bytes each way.
pub fn connect_with_buffer(server: &ModServer, buffer: usize) -> RawClient {
    let (mod_side, bridge_side) = tokio::io::duplex(buffer);
    let served = tokio::spawn(server.serve_connection(Connection::new(mod_side)));
    let (read, write) = tokio::io::split(bridge_side);
    RawClient {
        // The client reads frames of any size: the mod must never write one over its own limit.
        reader: FramedRead::new(read, FrameCodec::new().with_max_body_size(usize::MAX)),
        writer: std::sync::Arc::new(tokio::sync::Mutex::new(write)),
        served,
        events: Vec::new(),
        patience: PATIENCE,
    }
}

pub fn connect(server: &ModServer) -> RawClient {
    connect_with_buffer(server, 256 * 1024)
}

/// Connects and completes the handshake.
pub async fn connect_hello(server: &ModServer) -> RawClient {
    let mut client = connect(server);
    let welcome = client.hello().await;
    assert!(welcome.result().is_some(), "{welcome:?}");
    client
}

pub fn request(method: &str, params: Option<Value>) -> (MessageId, Value) {
    let id = MessageId::new_v4();
    let mut msg = json!({"v": "gabp/1", "id": id.as_str(), "type": "request", "method": method});
    if let Some(p) = params {
        msg["params"] = p;
    }
    (id, msg)
}

/// Writes raw bytes through a shared writer.
pub async fn write_raw(
    writer: &std::sync::Arc<tokio::sync::Mutex<WriteHalf<DuplexStream>>>,
    bytes: &[u8],
) {
    let mut w = writer.lock().await;
    w.write_all(bytes).await.expect("write");
    w.flush().await.expect("flush");
}

/// The frame of `body`.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut buf = BytesMut::new();
    FrameCodec::new()
        .with_max_body_size(usize::MAX)
        .encode(Bytes::copy_from_slice(body), &mut buf)
        .expect("encode");
    buf.to_vec()
}

/// Decodes a body the mod wrote, strictly; panics if it is not conformant.
pub fn strict(body: &[u8]) -> Message {
    decode(body, DecodeMode::Strict).unwrap_or_else(|e| {
        panic!(
            "the mod wrote a non-conformant message: {e}\n{}",
            String::from_utf8_lossy(body)
        )
    })
}

impl RawClient {
    /// Writes raw bytes.
    pub async fn write_raw(&mut self, bytes: &[u8]) {
        write_raw(&self.writer, bytes).await;
    }

    /// Writes one frame with `body`.
    pub async fn send_body(&mut self, body: &[u8]) {
        self.write_raw(&frame(body)).await;
    }

    pub async fn send(&mut self, message: &Value) {
        self.send_body(&serde_json::to_vec(message).expect("json"))
            .await;
    }

    /// Closes the writing side (the mod sees end of stream).
    pub async fn shutdown_write(&mut self) {
        self.writer.lock().await.shutdown().await.expect("shutdown");
    }

    /// The next frame body, or `None` at end of stream.
    pub async fn next_body(&mut self) -> Option<Bytes> {
        let frame = tokio::time::timeout(self.patience, self.reader.next())
            .await
            .expect("timed out waiting for a frame")?;
        match frame.expect("the mod wrote a broken frame") {
            Frame::Body(body) => Some(body),
            Frame::Oversized { .. } => unreachable!("no limit on the client side"),
        }
    }

    /// The next message (strictly decoded).
    pub async fn recv(&mut self) -> Message {
        let body = self
            .next_body()
            .await
            .expect("the mod closed the connection");
        strict(&body)
    }

    /// The next response, keeping events aside in `self.events`.
    pub async fn recv_response(&mut self) -> Response {
        loop {
            match self.recv().await {
                Message::Response(r) => return r,
                Message::Event(e) => self.events.push(e),
                Message::Request(r) => panic!("the mod sent a request: {r:?}"),
            }
        }
    }

    /// The next response, checking its result strictly against `method`'s result schema.
    pub async fn recv_response_to(&mut self, method: &str) -> Response {
        loop {
            let body = self
                .next_body()
                .await
                .expect("the mod closed the connection");
            let message =
                decode_response_to(&body, method, DecodeMode::Strict).unwrap_or_else(|e| {
                    panic!(
                        "non-conformant answer to {method}: {e}\n{}",
                        String::from_utf8_lossy(&body)
                    )
                });
            match message {
                Message::Response(r) => return r,
                Message::Event(e) => self.events.push(e),
                Message::Request(r) => panic!("the mod sent a request: {r:?}"),
            }
        }
    }

    /// Sends a request and returns its response (which must carry the request's id).
    pub async fn call(&mut self, method: &str, params: Option<Value>) -> Response {
        let (id, msg) = request(method, params);
        self.send(&msg).await;
        let response = self.recv_response_to(method).await;
        assert_eq!(response.id, id, "response id");
        response
    }

    pub async fn hello(&mut self) -> Response {
        self.call("session/hello", Some(hello_params(TOKEN))).await
    }

    /// Calls a tool.
    pub async fn call_tool(&mut self, name: &str, arguments: Value) -> Response {
        self.call(
            "tools/call",
            Some(json!({"name": name, "arguments": arguments})),
        )
        .await
    }

    /// Expects the mod to close the connection (possibly after frames, which are returned).
    pub async fn expect_closed(&mut self) -> Vec<Message> {
        let mut seen = Vec::new();
        while let Some(body) = self.next_body().await {
            seen.push(strict(&body));
        }
        seen
    }

    /// Why the mod closed the connection.
    pub async fn close_reason(self) -> CloseReason {
        tokio::time::timeout(PATIENCE, self.served)
            .await
            .expect("the connection did not close")
            .expect("the connection task failed")
    }
}

pub fn code(r: &Response) -> Option<i64> {
    r.error_object().map(|e| e.code.0)
}

pub fn data(r: &Response) -> Value {
    r.error_object()
        .and_then(|e| e.data.clone())
        .unwrap_or(Value::Null)
}

pub fn result(r: &Response) -> Value {
    r.result()
        .cloned()
        .unwrap_or_else(|| panic!("expected a result, got {r:?}"))
}

pub mod fixture {
    //! A small mod with a tool, channel, resource, state and method of every kind.

    use std::time::Duration;

    use gabp_session::server::{ModServerBuilder, Resource, Tool, ToolError};
    use gabp_types::methods::StateSetResult;
    use gabp_types::ErrorCode;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};
    use serde_json::{json, Map, Value};

    #[derive(Deserialize, JsonSchema)]
    pub struct EchoArgs {
        pub value: Value,
    }

    #[derive(Serialize, JsonSchema)]
    pub struct Echoed {
        pub value: Value,
    }

    #[derive(Deserialize, JsonSchema)]
    pub struct SleepArgs {
        /// Milliseconds to sleep.
        #[schemars(range(max = 60000))]
        pub ms: u64,
    }

    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Slept {
        pub slept_ms: u64,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct Pos {
        #[schemars(range(min = 0, max = 15))]
        pub x: i32,
        #[schemars(range(min = 0, max = 15))]
        pub y: i32,
        #[schemars(range(min = 0, max = 15))]
        pub z: i32,
    }

    #[derive(Serialize, JsonSchema)]
    pub struct Block {
        pub x: i32,
        pub y: i32,
        pub z: i32,
        pub block: Option<String>,
    }

    #[derive(Deserialize, JsonSchema)]
    pub struct FailArgs {
        pub message: String,
    }

    /// Adds the fixture's tools, channels, resources, state and custom method to `builder`.
    pub fn register(builder: ModServerBuilder) -> ModServerBuilder {
        builder
            .tool(
                Tool::new("demo/echo", |a: EchoArgs| async move {
                    Ok::<_, ToolError>(Echoed { value: a.value })
                })
                .title("Echo")
                .description("Returns its argument")
                .tags(["demo", "read-only"])
                .version("1.0.0"),
            )
            .tool(
                Tool::new("demo/sleep", |a: SleepArgs| async move {
                    tokio::time::sleep(Duration::from_millis(a.ms)).await;
                    Ok::<_, ToolError>(Slept { slept_ms: a.ms })
                })
                .tags(["demo"]),
            )
            .tool(
                Tool::new("world/get_block", |p: Pos| async move {
                    Ok::<_, ToolError>(Block {
                        x: p.x,
                        y: p.y,
                        z: p.z,
                        block: (p.y == 0).then(|| "stone".to_owned()),
                    })
                })
                .title("Get block")
                .tags(["world", "read-only"]),
            )
            .tool(
                Tool::new("demo/fail", |a: FailArgs| async move {
                    Err::<(), _>(ToolError::new(a.message))
                })
                .deprecated(true),
            )
            .tool(Tool::new("demo/fail_code", |_: Value| async move {
                Err::<(), _>(
                    ToolError::new("the world is loading")
                        .with_code(ErrorCode::server(7).unwrap_or(ErrorCode(-32007)))
                        .retryable(true),
                )
            }))
            .tool(Tool::new("demo/panic", |_: Value| async move {
                if true {
                    panic!("the tool panicked on purpose");
                }
                Ok::<(), ToolError>(())
            }))
            .tool(
                Tool::new("demo/stuck", |_: Value| async move {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok::<(), ToolError>(())
                })
                .timeout(Duration::from_millis(100)),
            )
            .tool(
                Tool::new("dyn/sum", |args: Map<String, Value>| async move {
                    let a = args.get("a").and_then(Value::as_f64).unwrap_or_default();
                    let b = args.get("b").and_then(Value::as_f64).unwrap_or_default();
                    Ok::<_, ToolError>(json!({ "sum": a + b }))
                })
                .input_schema(json!({
                    "type": "object",
                    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                    "required": ["a", "b"],
                    "additionalProperties": false
                }))
                .output_schema(
                    json!({"type": "object", "properties": {"sum": {"type": "number"}}}),
                ),
            )
            .channel("player/move")
            .channel("player/chat")
            .channel("world/block_change")
            .resource(
                Resource::text("gabp://game/world", "World", || async {
                    Ok(r#"{"size":16}"#.to_owned())
                })
                .mime_type("application/json")
                .description("The world"),
            )
            .resource(
                Resource::binary("gabp://mod/info", "Mod info", || async {
                    Ok(b"gabp-rs test mod \x00\xff".to_vec())
                })
                .mime_type("application/octet-stream")
                .size(19),
            )
            .resource(Resource::text("gabp://game/players", "Players", || async {
                Ok("steve".to_owned())
            }))
            .state(
                |_| async {
                    let mut state = Map::new();
                    state.insert("world".into(), json!({"size": 16}));
                    state.insert(
                        "player".into(),
                        json!({"id": "steve", "position": {"x": 1.0, "y": 2.0, "z": 3.0}}),
                    );
                    Ok(state)
                },
                |p| async move {
                    Ok(StateSetResult {
                        applied: p.updates,
                        errors: None,
                        extra: Map::new(),
                    })
                },
            )
            .method("game/pause", |req| async move {
                Ok(json!({ "paused": true, "session": req.session.id() }))
            })
    }
}
