//! [`MockMod`]: a scriptable mod built on [`ModServer`], with [`MockTool`]s that return canned values or run
//! closures.

mod game;
mod tool;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use gabp_session::server::{
    CallError, CloseReason, EventPublisher, ModServer, ModServerBuilder, Published, Resource,
    ServeHandle, ServerLimits, Tool,
};
use gabp_session::Error as SessionError;
use gabp_transport::{ByteStream, Connection, Endpoint, Listener, Token};
use gabp_types::methods::{StateGetParams, StateSetParams, StateSetResult, WelcomeResult};
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::{json, Map, Value};
use tokio::task::JoinHandle;

pub use self::tool::{MockTool, ToolCall};
use crate::conformance::Target;
use crate::pair::PairBuilder;
use crate::ReplayMod;
use crate::TestkitError;

/// Builds a [`MockMod`]; from [`MockMod::builder`].
pub struct MockModBuilder {
    inner: ModServerBuilder,
    token: Option<Token>,
    calls: Arc<Mutex<Vec<ToolCall>>>,
    state: Arc<Mutex<Map<String, Value>>>,
    /// Whether the mock runs a game thread (the demo's inputs and env steps need one).
    game: bool,
}

impl fmt::Debug for MockModBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockModBuilder")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl MockModBuilder {
    fn new() -> Self {
        MockModBuilder {
            inner: ModServer::builder()
                .app("gabp-testkit mock", env!("CARGO_PKG_VERSION"))
                .agent_id("gabp-testkit-mock"),
            token: None,
            calls: Arc::default(),
            state: Arc::default(),
            game: false,
        }
    }

    /// The token bridges must present (default: a fresh one, see [`MockMod::token`]).
    #[must_use]
    pub fn token(mut self, token: Token) -> Self {
        self.token = Some(token);
        self
    }

    /// The welcome's `app` (default `gabp-testkit mock` and this crate's version).
    #[must_use]
    pub fn app(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.inner = self.inner.app(name, version);
        self
    }

    /// The welcome's `agentId` (default `gabp-testkit-mock`).
    #[must_use]
    pub fn agent_id(mut self, agent_id: impl Into<String>) -> Self {
        self.inner = self.inner.agent_id(agent_id);
        self
    }

    /// The mod's limits (default: [`ServerLimits::default`]).
    #[must_use]
    pub fn limits(mut self, limits: ServerLimits) -> Self {
        self.inner = self.inner.limits(limits);
        self
    }

    /// Registers a scripted tool.
    #[must_use]
    pub fn tool(mut self, tool: MockTool) -> Self {
        self.inner = self.inner.tool(tool.into_tool(self.calls.clone()));
        self
    }

    /// Registers a [`gabp_session`] tool as it is (typed, on the main thread, ...). Its calls are not logged
    /// in [`MockMod::calls`]; the [`Recorder`](crate::Recorder) of a pair still sees them.
    #[must_use]
    pub fn session_tool(mut self, tool: Tool) -> Self {
        self.inner = self.inner.tool(tool);
        self
    }

    /// Registers an event channel; publish with [`MockMod::publish`].
    #[must_use]
    pub fn channel(mut self, name: impl Into<String>) -> Self {
        self.inner = self.inner.channel(name);
        self
    }

    /// Registers a text resource with fixed content.
    #[must_use]
    pub fn resource_text(
        mut self,
        uri: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        let content = content.into();
        self.inner = self.inner.resource(Resource::text(uri, name, move || {
            let content = content.clone();
            async move { Ok(content) }
        }));
        self
    }

    /// Registers a binary resource with fixed content (sent base64-encoded).
    #[must_use]
    pub fn resource_binary(
        mut self,
        uri: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<Vec<u8>>,
    ) -> Self {
        let content = content.into();
        self.inner = self.inner.resource(Resource::binary(uri, name, move || {
            let content = content.clone();
            async move { Ok(content) }
        }));
        self
    }

    /// Registers a [`gabp_session`] resource as it is.
    #[must_use]
    pub fn resource(mut self, resource: Resource) -> Self {
        self.inner = self.inner.resource(resource);
        self
    }

    /// Serves `state/get` and `state/set` from a map that starts as `initial`: `state/set` merges its updates
    /// into it and reports them all applied; [`MockMod::state`] reads it.
    #[must_use]
    pub fn state(mut self, initial: Map<String, Value>) -> Self {
        *self.state.lock() = initial;
        let get = self.state.clone();
        let set = self.state.clone();
        self.inner = self.inner.state(
            move |_: StateGetParams| {
                let state = get.lock().clone();
                async move { Ok(state) }
            },
            move |params: StateSetParams| {
                let mut state = set.lock();
                for (key, value) in &params.updates {
                    state.insert(key.clone(), value.clone());
                }
                let applied = StateSetResult {
                    applied: params.updates,
                    errors: None,
                    extra: Map::new(),
                };
                async move { Ok(applied) }
            },
        );
        self
    }

    /// Anything else the [`ModServerBuilder`] offers (custom methods, layers, extensions, ...).
    ///
    /// ```
    /// use gabp_session::server::ServerRequest;
    /// use gabp_testkit::MockMod;
    /// use serde_json::json;
    ///
    /// let mock = MockMod::builder()
    ///     .configure(|b| b.method("game/custom", |_: ServerRequest| async { Ok(json!({"ok": true})) }))
    ///     .build()?;
    /// assert!(mock.welcome().capabilities.has_method("game/custom"));
    /// # Ok::<(), gabp_testkit::TestkitError>(())
    /// ```
    #[must_use]
    pub fn configure(mut self, f: impl FnOnce(ModServerBuilder) -> ModServerBuilder) -> Self {
        self.inner = f(self.inner);
        self
    }

    /// The event publisher of the mod being built, for tools that publish events.
    #[must_use]
    pub fn event_publisher(&self) -> EventPublisher {
        self.inner.event_publisher()
    }

    /// Adds the demo surface the conformance suite knows how to exercise, modelled on `gabp mod`:
    ///
    /// - `demo/echo` (`{"value": any}`, returns `{"value": ...}`);
    /// - `demo/sleep` (`{"ms": 0..=60000}`, waits, returns `{"sleptMs": ms}`);
    /// - `player/teleport` (`{"x", "y", "z": numbers, "playerId"?: string}`), which publishes the new
    ///   position on the channel `player/move` and returns it;
    /// - the text resource `gabp://mock/readme`;
    /// - state `{"tick": 0}` (replacing any set before);
    /// - the `input` extension, each input taken and forgotten, and the `env` extension: a walker on a line of
    ///   0..=10 (`Box` of one `int64`), moved by its action (`Discrete(3)` from -1), rewarded and terminated at
    ///   10, episodes truncated after 50 steps; the seed picks the start (SPEC/1.0 extensions.md §input, §env).
    #[must_use]
    pub fn demo(mut self) -> Self {
        let events = self.event_publisher();
        let mut state = Map::new();
        state.insert("tick".into(), json!(0));
        self.inner = game::add(self.inner);
        self.game = true;
        self.channel("player/move")
            .resource_text("gabp://mock/readme", "Readme", "A mock mod.")
            .state(state)
            .tool(
                MockTool::with("demo/echo", |args| Ok(json!({ "value": args["value"] })))
                    .title("Echo")
                    .description("Returns value unchanged.")
                    .tags(["demo", "read-only"])
                    .input_schema(json!({
                        "type": "object",
                        "properties": { "value": {} },
                        "required": ["value"],
                        "additionalProperties": false
                    })),
            )
            .tool(
                MockTool::with_async("demo/sleep", |args| async move {
                    let ms = args["ms"].as_u64().unwrap_or(0);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    Ok(json!({ "sleptMs": ms }))
                })
                .title("Sleep")
                .description("Waits ms milliseconds, then answers.")
                .tags(["demo", "timing", "read-only"])
                .input_schema(json!({
                    "type": "object",
                    "properties": { "ms": { "type": "integer", "minimum": 0, "maximum": 60000 } },
                    "required": ["ms"],
                    "additionalProperties": false
                })),
            )
            .tool(
                MockTool::with("player/teleport", move |args| {
                    let moved = json!({
                        "playerId": args.get("playerId").cloned().unwrap_or_else(|| json!("steve")),
                        "position": { "x": args["x"], "y": args["y"], "z": args["z"] }
                    });
                    events
                        .publish("player/move", &moved)
                        .map_err(|e| CallError::new(e.to_string()))?;
                    Ok(moved)
                })
                .title("Teleport player")
                .description("Moves a player and publishes player/move.")
                .tags(["player", "write"])
                .input_schema(json!({
                    "type": "object",
                    "properties": {
                        "playerId": { "type": "string" },
                        "x": { "type": "number" },
                        "y": { "type": "number" },
                        "z": { "type": "number" }
                    },
                    "required": ["x", "y", "z"],
                    "additionalProperties": false
                })),
            )
    }

    /// Builds the mock.
    ///
    /// # Errors
    ///
    /// [`TestkitError::Build`] when the [`ModServer`] refuses the configuration;
    /// [`TestkitError::Token`] when no token was given and none can be generated.
    pub fn build(self) -> Result<MockMod, TestkitError> {
        let token = match self.token {
            Some(token) => token,
            None => Token::generate().map_err(TestkitError::Token)?,
        };
        let server = self
            .inner
            .token(token.clone())
            .build()
            .map_err(TestkitError::Build)?;
        let game = self
            .game
            .then(|| game::GameThread::start(server.main_thread()).map(Arc::new))
            .flatten();
        Ok(MockMod {
            server,
            token,
            calls: self.calls,
            state: self.state,
            _game: game,
        })
    }
}

/// A scriptable mod: a real [`ModServer`] (so every protocol rule holds) with [`MockTool`]s, channels,
/// resources and state, served in memory, on loopback TCP or on any [`Connection`].
///
/// Cheap to clone; clones share the server, the call log and the state.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use gabp_testkit::{MockMod, MockTool};
/// use serde_json::json;
///
/// let mock = MockMod::builder()
///     .tool(MockTool::returning("game/version", json!("1.2.3")))
///     .channel("world/tick")
///     .state(json!({"weather": "rain"}).as_object().cloned().unwrap_or_default())
///     .build()?;
///
/// let pair = mock.pair().connect().await?;
/// assert_eq!(pair.bridge.call_tool("game/version", json!({})).await?, json!("1.2.3"));
/// assert_eq!(mock.calls_to("game/version").len(), 1);
/// assert_eq!(mock.state()["weather"], "rain");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct MockMod {
    server: ModServer,
    token: Token,
    calls: Arc<Mutex<Vec<ToolCall>>>,
    state: Arc<Mutex<Map<String, Value>>>,
    /// Runs the work queued for the game's thread (main-thread tools, inputs, env steps) until the last clone
    /// is dropped.
    _game: Option<Arc<game::GameThread>>,
}

impl fmt::Debug for MockMod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockMod")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl MockMod {
    /// A builder with nothing registered.
    #[must_use]
    pub fn builder() -> MockModBuilder {
        MockModBuilder::new()
    }

    /// A mock with the demo surface ([`MockModBuilder::demo`]): everything the conformance suite exercises,
    /// so it passes every check.
    ///
    /// # Errors
    ///
    /// As [`MockModBuilder::build`].
    pub fn demo() -> Result<MockMod, TestkitError> {
        MockMod::builder().demo().build()
    }

    /// A mod that replays the recording at `path` (made with `gabp record`, SPEC/1.0 recording.md): the
    /// recorded welcome, then for each request the recorded answer to the matching recorded request and the
    /// events that followed it, at their recorded offsets. Unmatched requests are answered with an error
    /// naming the closest recorded request. Serve it with [`ReplayMod::serve_in_memory`] or
    /// [`ReplayMod::serve_tcp`]; [`ReplayMod::with_options`] changes how it matches and times.
    ///
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use gabp_testkit::wire::RawClient;
    /// use gabp_testkit::MockMod;
    ///
    /// let replay = MockMod::from_recording("tests/data/session.jsonl")?;
    /// let mut client = RawClient::new(replay.serve_in_memory());
    /// let welcome = client.hello(replay.token().expose_secret()).await;
    /// # let _ = welcome;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`TestkitError::Replay`] when the file cannot be read (the error names the line) or has no session.
    pub fn from_recording(path: impl AsRef<std::path::Path>) -> Result<ReplayMod, TestkitError> {
        Ok(ReplayMod::from_file(path)?)
    }

    /// The token bridges must present.
    #[must_use]
    pub fn token(&self) -> &Token {
        &self.token
    }

    /// The server itself.
    #[must_use]
    pub fn server(&self) -> &ModServer {
        &self.server
    }

    /// The welcome the mod answers `session/hello` with.
    #[must_use]
    pub fn welcome(&self) -> &WelcomeResult {
        self.server.welcome()
    }

    /// The event publisher.
    #[must_use]
    pub fn events(&self) -> EventPublisher {
        self.server.event_publisher()
    }

    /// Publishes `payload` on `channel`.
    ///
    /// # Errors
    ///
    /// As [`EventPublisher::publish`]: an unregistered channel, a payload that does not serialize, ...
    pub fn publish(
        &self,
        channel: &str,
        payload: impl Serialize,
    ) -> Result<Published, SessionError> {
        self.server.event_publisher().publish(channel, payload)
    }

    /// Every call that reached a [`MockTool`], in order.
    #[must_use]
    pub fn calls(&self) -> Vec<ToolCall> {
        self.calls.lock().clone()
    }

    /// The calls that reached the tool `name`.
    #[must_use]
    pub fn calls_to(&self, name: &str) -> Vec<ToolCall> {
        self.calls()
            .into_iter()
            .filter(|c| c.tool == name)
            .collect()
    }

    /// The state map of [`MockModBuilder::state`] as it is now.
    #[must_use]
    pub fn state(&self) -> Map<String, Value> {
        self.state.lock().clone()
    }

    /// Serves one connection (see [`ModServer::serve_connection`]).
    pub fn serve_connection(
        &self,
        connection: Connection,
    ) -> impl Future<Output = CloseReason> + Send + 'static {
        self.server.serve_connection(connection)
    }

    /// Serves one new in-memory connection on a spawned task and returns the other end of it (for a bridge,
    /// a [`FaultProxy`](crate::FaultProxy) or a raw client) and the task, which says why the mod closed the
    /// connection. Must be called within a Tokio runtime.
    #[must_use]
    pub fn serve_in_memory(&self) -> (ByteStream, JoinHandle<CloseReason>) {
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        let served = tokio::spawn(
            self.server
                .serve_connection(Connection::new(theirs).with_peer("in-memory")),
        );
        (ByteStream::new(ours), served)
    }

    /// Serves on `listener` until the handle is shut down.
    #[must_use]
    pub fn serve(&self, listener: Listener) -> ServeHandle {
        self.server.clone().serve(listener)
    }

    /// Serves on an ephemeral loopback TCP port; [`ServeHandle::endpoint`] says which.
    ///
    /// # Errors
    ///
    /// [`TestkitError::Transport`] when no port can be bound.
    pub async fn serve_tcp(&self) -> Result<ServeHandle, TestkitError> {
        let listener = Listener::bind(&Endpoint::tcp_v4(0)).await?;
        Ok(self.serve(listener))
    }

    /// A connected pair of this mod and a bridge, to configure and [`connect`](PairBuilder::connect).
    #[must_use]
    pub fn pair(&self) -> PairBuilder {
        PairBuilder::new(self.clone())
    }

    /// The conformance suite's target for this mock: each connection is a new in-memory connection served
    /// by it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mock = gabp_testkit::MockMod::demo()?;
    /// let report = gabp_testkit::conformance::run(&mock.conformance_target()).await;
    /// assert!(report.is_success(), "{report}");
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn conformance_target(&self) -> Target {
        let mock = self.clone();
        Target::in_memory(self.token.clone(), move || mock.serve_in_memory().0)
    }
}
