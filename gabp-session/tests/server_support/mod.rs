//! The mod server under test, served over in-memory duplex pairs to the raw client of `gabp_testkit::wire`,
//! which writes bytes and frames and decodes every frame the mod writes with the STRICT decoder (what we send
//! must always be conformant).
#![allow(dead_code)]

use std::time::Duration;

use gabp_session::server::{CloseReason, ModServer, ModServerBuilder, ServerLimits};
use gabp_transport::{Connection, Token};
use gabp_types::Response;
use serde_json::Value;
use tokio::task::JoinHandle;

// Each test uses some of these.
#[allow(unused_imports)]
pub use gabp_testkit::wire::{frame, hello_params, request, RawClient, LAUNCH_ID};

pub const TOKEN: &str = "6d6f642d746f6b656e2d666f722d74657374732d6f6e6c792d30313233343536";

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

/// Serves one connection of `server` over a duplex pair with `buffer` bytes each way: a raw client on the
/// bridge's end, and the task serving the mod's end, which says why the mod closed the connection.
pub fn serve(server: &ModServer, buffer: usize) -> (RawClient, JoinHandle<CloseReason>) {
    let (mod_side, bridge_side) = tokio::io::duplex(buffer);
    let served = tokio::spawn(server.serve_connection(Connection::new(mod_side)));
    (RawClient::new(bridge_side), served)
}

/// A raw client of `server` with a duplex buffer of `buffer` bytes each way.
pub fn connect_with_buffer(server: &ModServer, buffer: usize) -> RawClient {
    serve(server, buffer).0
}

/// [`serve`] with a 256 KiB buffer.
pub fn connect_served(server: &ModServer) -> (RawClient, JoinHandle<CloseReason>) {
    serve(server, 256 * 1024)
}

pub fn connect(server: &ModServer) -> RawClient {
    connect_served(server).0
}

/// Connects and completes the handshake.
pub async fn connect_hello(server: &ModServer) -> RawClient {
    connect_hello_served(server).await.0
}

/// [`connect_served`], then the handshake.
pub async fn connect_hello_served(server: &ModServer) -> (RawClient, JoinHandle<CloseReason>) {
    let (mut client, served) = connect_served(server);
    client.hello(TOKEN).await;
    (client, served)
}

/// Why the mod closed the connection `served` served.
pub async fn close_reason(served: JoinHandle<CloseReason>) -> CloseReason {
    tokio::time::timeout(PATIENCE, served)
        .await
        .expect("the connection did not close")
        .expect("the connection task failed")
}

pub fn code(r: &Response) -> Option<i64> {
    r.error_object().map(|e| e.code.0)
}

pub fn data(r: &Response) -> Value {
    r.error_object()
        .and_then(|e| e.data.clone())
        .unwrap_or(Value::Null)
}

/// The answer to a late request that is not a tool call (SPEC/1.0 gabp.md §7): -32603 with `data.timeoutMs`,
/// retryable.
pub fn assert_late(r: &Response, timeout_ms: u64) {
    assert_eq!(code(r), Some(-32603), "{r:?}");
    assert_eq!(
        data(r),
        serde_json::json!({"timeoutMs": timeout_ms, "retryable": true})
    );
}

pub fn result(r: &Response) -> Value {
    r.result()
        .cloned()
        .unwrap_or_else(|| panic!("expected a result, got {r:?}"))
}

pub mod fixture {
    //! A small mod with a tool, channel, resource, state and method of every kind.

    use std::time::Duration;

    use gabp_session::server::{CallError, ModServerBuilder, Resource, ServerRequest, Tool};
    use gabp_types::methods::{StateGetParams, StateSetParams, StateSetResult};
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
                    Ok::<_, CallError>(Echoed { value: a.value })
                })
                .title("Echo")
                .description("Returns its argument")
                .tags(["demo", "read-only"])
                .version("1.0.0"),
            )
            .tool(
                Tool::new("demo/sleep", |a: SleepArgs| async move {
                    tokio::time::sleep(Duration::from_millis(a.ms)).await;
                    Ok::<_, CallError>(Slept { slept_ms: a.ms })
                })
                .tags(["demo"]),
            )
            .tool(
                Tool::new("world/get_block", |p: Pos| async move {
                    Ok::<_, CallError>(Block {
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
                    Err::<(), _>(CallError::new(a.message))
                })
                .deprecated(true),
            )
            .tool(Tool::new("demo/fail_code", |_: Value| async move {
                Err::<(), _>(
                    CallError::new("the world is loading")
                        .with_code(ErrorCode::server(7).unwrap_or(ErrorCode(-32007)))
                        .retryable(true),
                )
            }))
            .tool(Tool::new("demo/panic", |_: Value| async move {
                if true {
                    panic!("the tool panicked on purpose");
                }
                Ok::<(), CallError>(())
            }))
            .tool(
                Tool::new("demo/stuck", |_: Value| async move {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok::<(), CallError>(())
                })
                .timeout(Duration::from_millis(100)),
            )
            .tool(
                Tool::new("dyn/sum", |args: Map<String, Value>| async move {
                    let a = args.get("a").and_then(Value::as_f64).unwrap_or_default();
                    let b = args.get("b").and_then(Value::as_f64).unwrap_or_default();
                    Ok::<_, CallError>(json!({ "sum": a + b }))
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
                |_: StateGetParams| async {
                    let mut state = Map::new();
                    state.insert("world".into(), json!({"size": 16}));
                    state.insert(
                        "player".into(),
                        json!({"id": "steve", "position": {"x": 1.0, "y": 2.0, "z": 3.0}}),
                    );
                    Ok(state)
                },
                |p: StateSetParams| async move {
                    Ok(StateSetResult {
                        applied: p.updates,
                        errors: None,
                        extra: Map::new(),
                    })
                },
            )
            .method("game/pause", |req: ServerRequest| async move {
                Ok(json!({ "paused": true, "session": req.session.id() }))
            })
    }
}

/// Sends the hello; `true` once the first bytes of the welcome arrive (a mod over its connection limit closes
/// the connection without a word).
pub async fn try_hello(stream: &mut tokio::net::TcpStream) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (_, hello) = request("session/hello", Some(hello_params(TOKEN)));
    if stream
        .write_all(&frame(&serde_json::to_vec(&hello).expect("serialize")))
        .await
        .is_err()
    {
        return false;
    }
    let mut head = [0u8; 16];
    match tokio::time::timeout(PATIENCE, stream.read_exact(&mut head)).await {
        Ok(Ok(_)) => head.starts_with(b"Content-Length: "),
        _ => false,
    }
}

/// Sends `method` with `params` and waits (up to [`PATIENCE`]) for its answer.
pub async fn ask(client: &mut RawClient, method: &str, params: Option<Value>) -> Response {
    let (id, message) = request(method, params);
    client.send_value(&message).await;
    tokio::time::timeout(PATIENCE, client.response(id))
        .await
        .expect("no answer")
}
