//! [`ModServerBuilder`], [`ServerLimits`] and [`Error`].

use std::fmt;
use std::sync::Arc;

use std::future::Future;

use futures::FutureExt;
use gabp_transport::{ModSettings, Token};
use gabp_types::methods::{
    EnvResetParams, EnvResetResult, EnvStepResult, Method, ServerInfo, StateGet, StateGetParams,
    StateSet, StateSetParams, StateSetResult,
};
use gabp_types::{ErrorCode, ExtraMembers, Response};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};
use tower::util::BoxService;
use tower::{BoxError, Layer, Service};

use super::catalog::ToolCatalog;
use super::context::{StateMap, StateType};
use super::env::{Env, EnvSpec};
use super::error::CallError;
use super::events::{EventHub, EventPublisher};
use super::handler::{boxed, Handler};
use super::input::{input_fn, Input, InputFn};
use super::layer::user::{ErrorsAsResponses, LayerFn};
use super::layer::ModService;
use super::limits::ServerLimits;
use super::main_thread::MainThread;
use super::registry::{ToolRegistry, ToolTable};
use super::router::{MethodFn, StateGetFn, StateSetFn};
#[cfg(doc)]
use super::{clock::GameClock, serve::ModServer};
use super::{Resource, ServerRequest, Tool};
#[cfg(doc)]
use crate::Error;

mod build;

/// Builds a [`ModServer`]: identity, token, limits, and everything it serves.
///
/// ```
/// use gabp_session::server::{CallError, ModServer, Resource, Tool};
/// use gabp_transport::{Endpoint, Listener, Token};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Echo { value: String }
///
/// #[derive(Serialize, JsonSchema)]
/// struct Echoed { value: String }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = ModServer::builder()
///     .app("Voxel Sandbox", "0.3.2")
///     .agent_id("voxel-demo")
///     .token(Token::generate()?)
///     .tool(
///         Tool::new("demo/echo", |e: Echo| async move { Ok::<_, CallError>(Echoed { value: e.value }) })
///             .title("Echo")
///             .tags(["demo"]),
///     )
///     .channel("player/move")
///     .resource(Resource::text("gabp://game/world", "World", || async { Ok("{}".to_owned()) }))
///     .build()?;
/// assert!(server.welcome().capabilities.has_method("tools/call"));
/// assert!(!server.welcome().capabilities.has_method("state/get")); // no state handlers
///
/// let handle = server.serve(Listener::bind(&Endpoint::tcp_v4(0)).await?);
/// println!("listening on {}", handle.endpoint());
/// handle.shutdown().await;
/// # Ok(())
/// # }
/// ```
pub struct ModServerBuilder {
    app: (String, String),
    server_info: Option<ServerInfo>,
    agent_id: Option<String>,
    token: Option<Token>,
    limits: ServerLimits,
    extensions: Vec<(String, Map<String, Value>)>,
    channel_patterns: bool,
    dynamic_tools: bool,
    time_control: bool,
    input: Option<InputFn>,
    env: Option<Env>,
    tools: Vec<Tool>,
    resources: Vec<Resource>,
    channels: Vec<String>,
    state_get: Option<StateGetFn>,
    state_set: Option<StateSetFn>,
    methods: Vec<(String, MethodFn)>,
    layers: Vec<LayerFn>,
    hub: Arc<EventHub>,
    main_thread: MainThread,
    table: Arc<ToolTable>,
    shared: StateMap,
    /// The shared states the handlers take, with what takes each (`tool x`, `resource y`, `method z`).
    states: Vec<(String, StateType)>,
}

impl fmt::Debug for ModServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModServerBuilder")
            .field("app", &self.app)
            .field("agent_id", &self.agent_id)
            .field("limits", &self.limits)
            .field("tools", &self.tools.len())
            .field("resources", &self.resources.len())
            .field("channels", &self.channels)
            .finish_non_exhaustive()
    }
}

impl Default for ModServerBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ModServerBuilder {
    /// A builder with default limits and nothing registered. [`ModServer::builder`] is the same.
    #[must_use]
    pub fn new() -> Self {
        let limits = ServerLimits::default();
        ModServerBuilder {
            app: (
                "gabp-rs mod".to_owned(),
                env!("CARGO_PKG_VERSION").to_owned(),
            ),
            server_info: None,
            agent_id: None,
            token: None,
            hub: Arc::new(EventHub::new(limits.max_message_size)),
            main_thread: MainThread::new(limits.main_thread_queue),
            limits,
            extensions: Vec::new(),
            channel_patterns: true,
            dynamic_tools: false,
            time_control: false,
            input: None,
            env: None,
            tools: Vec::new(),
            resources: Vec::new(),
            channels: Vec::new(),
            state_get: None,
            state_set: None,
            methods: Vec::new(),
            layers: Vec::new(),
            table: Arc::default(),
            shared: StateMap::default(),
            states: Vec::new(),
        }
    }

    /// The game or application: the welcome's `app.name` and `app.version`.
    #[must_use]
    pub fn app(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.app = (name.into(), version.into());
        self
    }

    /// The welcome's `serverInfo` (default: gabp-session's own name and version). Its `extra` members are
    /// dropped: the mod writes strict `gabp/1`.
    #[must_use]
    pub fn server_info(mut self, mut info: ServerInfo) -> Self {
        info.clear_extra();
        self.server_info = Some(info);
        self
    }

    /// The welcome's `agentId` (default: the agent id of the settings, else the app name).
    #[must_use]
    pub fn agent_id(mut self, agent_id: impl Into<String>) -> Self {
        self.agent_id = Some(agent_id.into());
        self
    }

    /// The token bridges must present in `session/hello` (at least 32 characters).
    #[must_use]
    pub fn token(mut self, token: Token) -> Self {
        self.token = Some(token);
        self
    }

    /// Takes the token and, unless [`ModServerBuilder::agent_id`] sets one, the agent id from resolved
    /// settings (explicit values, the GABS environment, `bridge.json`). Bind the listener to
    /// `settings.endpoint` yourself.
    #[must_use]
    pub fn settings(mut self, settings: &ModSettings) -> Self {
        self.token = Some(settings.token.clone());
        if self.agent_id.is_none() {
            self.agent_id.clone_from(&settings.agent_id);
        }
        self
    }

    /// Replaces the limits.
    #[must_use]
    pub fn limits(mut self, limits: ServerLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Adds a capability extension, advertised under `capabilities.extensions[key]`
    /// (`key` matches `^[a-z][a-z0-9_-]*$`).
    #[must_use]
    pub fn extension(mut self, key: impl Into<String>, value: Map<String, Value>) -> Self {
        self.extensions.push((key.into(), value));
        self
    }

    /// Whether `events/subscribe` accepts glob patterns such as `player/*` (default on; advertised as the
    /// `channel-patterns` extension).
    #[must_use]
    pub fn channel_patterns(mut self, enabled: bool) -> Self {
        self.channel_patterns = enabled;
        self
    }

    /// Whether tools may be added and removed while serving, through [`ModServerBuilder::tool_registry`] or
    /// [`ModServer::tools`] (default off). When on, the welcome advertises the `tools-changed` extension and
    /// the `tools/changed` channel, on which each change is announced (SPEC/1.0 extensions.md §tools-changed).
    #[must_use]
    pub fn dynamic_tools(mut self, enabled: bool) -> Self {
        self.dynamic_tools = enabled;
        self
    }

    /// Whether the game's simulation can be paused, resumed and stepped by bridges (default off). When on, the
    /// mod serves `time/status`, `time/pause`, `time/resume` and `time/step`, advertises the `time-control`
    /// extension and the `time/changed` channel, and the game loop ticks through
    /// [`MainThread::clock`] (SPEC/1.0 extensions.md §time-control).
    #[must_use]
    pub fn time_control(mut self, enabled: bool) -> Self {
        self.time_control = enabled;
        self
    }

    /// Lets bridges play the game as a player would (SPEC/1.0 extensions.md §input): the mod serves
    /// `input/key`, `input/text` and `input/mouse` and advertises the `input` extension. Each input is queued
    /// for the game's thread like a main-thread tool call, and `apply` gives it to the game's state `S` (what
    /// the game loop hands to [`MainThread::pump_with`]); the bridge's request is answered once it returns.
    ///
    /// ```
    /// use gabp_session::server::{CallError, Input, ModServer};
    /// use gabp_types::methods::KeyAction;
    ///
    /// struct Game { held: Vec<&'static str> }
    ///
    /// let builder = ModServer::builder().input(|game: &mut Game, input: Input| {
    ///     if let Input::Key(key) = input {
    ///         match key.action {
    ///             KeyAction::Press => game.held.push(key.key.as_str()),
    ///             KeyAction::Release => game.held.retain(|k| *k != key.key.as_str()),
    ///             _ => {} // a tap: pressed this frame, let go in the next
    ///         }
    ///     }
    ///     Ok::<(), CallError>(())
    /// });
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn input<S: 'static>(
        mut self,
        apply: impl Fn(&mut S, Input) -> Result<(), CallError> + Send + Sync + 'static,
    ) -> Self {
        self.input = Some(input_fn(apply));
        self
    }

    /// Serves the game as a reinforcement-learning environment (SPEC/1.0 extensions.md §env): the mod serves
    /// `env/spaces`, `env/reset` and `env/step` and advertises the `env` extension. On the game's thread, inside
    /// [`MainThread::pump_with`] with the game's state `S`: `reset` starts an episode (seeded by
    /// `params.seed`) and answers its first observation; `act` gives the game an action the server already
    /// checked against the action space; once the step's [`EnvSpec::ticks_per_step`] ticks have run (through
    /// the [`GameClock`], while time stays paused), `observe` answers observation, reward, `terminated`,
    /// `truncated` and info. A spec with ticks turns time control on. The server refuses steps out of turn,
    /// counts steps against [`EnvSpec::max_episode_steps`], and answers an observation outside its space
    /// `-32603`.
    ///
    /// ```
    /// use gabp_session::server::{CallError, EnvSpec, ModServer};
    /// use gabp_types::methods::{Dtype, EnvResetResult, EnvStepResult, Space};
    /// use serde_json::{json, Map};
    ///
    /// struct Game { x: i64, goal: i64 }
    ///
    /// let spec = EnvSpec::new(Space::bounded(-10.0, 10.0, vec![1], Dtype::Int64), Space::discrete(2))
    ///     .ticks_per_step(1)
    ///     .max_episode_steps(100);
    /// let builder = ModServer::builder().env(
    ///     spec,
    ///     |game: &mut Game, params| {
    ///         game.x = 0;
    ///         game.goal = if params.seed.unwrap_or(0) % 2 == 0 { 3 } else { -3 };
    ///         Ok::<_, CallError>(EnvResetResult::new(json!([game.x]), Map::new()))
    ///     },
    ///     |game: &mut Game, action| {
    ///         game.x += if action == json!(1) { 1 } else { -1 };
    ///         Ok(())
    ///     },
    ///     |game: &mut Game| {
    ///         let mut outcome = EnvStepResult::new(json!([game.x]), 0.0);
    ///         outcome.terminated = game.x == game.goal;
    ///         outcome.reward = if outcome.terminated { 1.0 } else { 0.0 };
    ///         Ok(outcome)
    ///     },
    /// );
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn env<S: 'static>(
        mut self,
        spec: EnvSpec,
        reset: impl Fn(&mut S, EnvResetParams) -> Result<EnvResetResult, CallError>
            + Send
            + Sync
            + 'static,
        act: impl Fn(&mut S, Value) -> Result<(), CallError> + Send + Sync + 'static,
        observe: impl Fn(&mut S) -> Result<EnvStepResult, CallError> + Send + Sync + 'static,
    ) -> Self {
        self.env = Some(Env::new(spec, reset, act, observe));
        self
    }

    /// Registers a tool.
    #[must_use]
    pub fn tool(mut self, tool: Tool) -> Self {
        self.takes_states(|| format!("tool {}", tool.name()), tool.states());
        self.tools.push(tool);
        self
    }

    /// Registers a resource.
    #[must_use]
    pub fn resource(mut self, resource: Resource) -> Self {
        self.takes_states(|| format!("resource {}", resource.uri()), resource.states());
        self.resources.push(resource);
        self
    }

    /// Registers an event channel (a registry name such as `player/move`), advertised in
    /// `capabilities.events`.
    #[must_use]
    pub fn channel(mut self, name: impl Into<String>) -> Self {
        self.channels.push(name.into());
        self
    }

    /// Serves `state/get` with `handler`, which returns the state by component: any value that serializes to
    /// an object (a struct of components, or a map). It may take extractors ([`CallContext`](super::CallContext),
    /// [`State<T>`](super::State), ...) before the params. When the request names `components`, only those
    /// are sent; the `timestamp` is added.
    #[must_use]
    pub fn state_get<M, H>(mut self, handler: H) -> Self
    where
        H: Handler<M, Input = StateGetParams, Output: Serialize + 'static>,
        H::Call: Future<Output = Result<H::Output, CallError>> + Send + 'static,
    {
        self.takes_states(|| format!("method {}", StateGet::NAME), &H::states());
        self.state_get = Some(boxed(handler, state_object));
        self
    }

    /// Serves `state/set` with `handler`, which may take extractors before the params. The `extra` members
    /// of its results are dropped: the mod writes strict `gabp/1`.
    #[must_use]
    pub fn state_set<M, H>(mut self, handler: H) -> Self
    where
        H: Handler<M, Input = StateSetParams, Output = StateSetResult>,
        H::Call: Future<Output = Result<StateSetResult, CallError>> + Send + 'static,
    {
        self.takes_states(|| format!("method {}", StateSet::NAME), &H::states());
        self.state_set = Some(boxed(handler, |mut result: StateSetResult| {
            result.clear_extra();
            Ok(result)
        }));
        self
    }

    /// Serves both `state/get` and `state/set` (see [`ModServerBuilder::state_get`] and
    /// [`ModServerBuilder::state_set`]).
    #[must_use]
    pub fn state<GM, G, SM, S>(self, get: G, set: S) -> Self
    where
        G: Handler<GM, Input = StateGetParams, Output: Serialize + 'static>,
        G::Call: Future<Output = Result<G::Output, CallError>> + Send + 'static,
        S: Handler<SM, Input = StateSetParams, Output = StateSetResult>,
        S::Call: Future<Output = Result<StateSetResult, CallError>> + Send + 'static,
    {
        self.state_get(get).state_set(set)
    }

    fn takes_states(&mut self, handler: impl Fn() -> String, states: &[StateType]) {
        self.states
            .extend(states.iter().map(|state| (handler(), *state)));
    }

    /// Shares `value` with every handler that takes [`State<T>`](super::State) (one value per type; a second
    /// value of the same type replaces the first). Share mutable data through an `Arc`.
    #[must_use]
    pub fn with_state<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.shared.insert(value);
        self
    }

    /// Serves a custom method (any registry name the mod does not serve itself, such as
    /// `minecraft/world/get_blocks`, or `attention/current`). It is advertised in `capabilities.methods`.
    /// The [`Handler`] takes extractors (the whole [`ServerRequest`] among them) and then, if it wants them,
    /// typed params (an absent `params` reads as `{}`; params that do not fit are answered `-32602`), and
    /// returns anything that serializes.
    ///
    /// ```
    /// use gabp_session::server::{CallError, ModServer, State};
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize)]
    /// struct Area { radius: u32 }
    ///
    /// let builder = ModServer::builder()
    ///     .with_state(7_u32)
    ///     .method("world/count_blocks", |State(per): State<u32>, area: Area| async move {
    ///         Ok::<_, CallError>(area.radius * per)
    ///     });
    /// ```
    #[must_use]
    pub fn method<M, H>(mut self, name: impl Into<String>, handler: H) -> Self
    where
        H: Handler<M, Input: DeserializeOwned + Send + 'static, Output: Serialize + 'static>,
        H::Call: Future<Output = Result<H::Output, CallError>> + Send + 'static,
    {
        let name = name.into();
        self.takes_states(|| format!("method {name}"), &H::states());
        let handler = boxed(handler, result_value);
        self.methods.push((
            name,
            Arc::new(
                move |context, req: ServerRequest| match typed_params::<H::Input>(&req) {
                    Ok(params) => handler(context.with_request(req.request), params),
                    Err(error) => futures::future::ready(Err(error)).boxed(),
                },
            ),
        ));
        self
    }

    /// Adds a tower layer to every connection's stack, after authentication and the capability check and
    /// before the concurrency limit, the timeout and the router (layers added first are outermost).
    ///
    /// The layer's service may answer a request itself (an interceptor: access control, rate limits, an
    /// attention gate) or pass it on. A service error (any `Into<BoxError>`) is answered `-32603`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use gabp_session::server::layer::InterceptLayer;
    /// use gabp_session::server::{ModServer, ServerRequest};
    /// use gabp_types::{ErrorCode, ErrorObject};
    ///
    /// let builder = ModServer::builder()
    ///     // An interceptor: refuse every `admin/*` tool.
    ///     .layer(InterceptLayer::new(|req: &ServerRequest| {
    ///         req.tool_name()
    ///             .filter(|tool| tool.starts_with("admin/"))
    ///             .map(|_| req.error(ErrorObject::new(ErrorCode::ACCESS_DENIED, "no admin tools")))
    ///     }))
    ///     // Any tower layer works; its errors are answered -32603.
    ///     .layer(tower::layer::layer_fn(|inner| tower::util::MapRequest::new(inner, |req: ServerRequest| req)));
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn layer<L>(mut self, layer: L) -> Self
    where
        L: Layer<ModService> + Send + Sync + 'static,
        L::Service: Service<ServerRequest, Response = Response> + Send + 'static,
        <L::Service as Service<ServerRequest>>::Error: Into<BoxError>,
        <L::Service as Service<ServerRequest>>::Future: Send + 'static,
    {
        self.layers.push(Arc::new(move |inner| {
            BoxService::new(ErrorsAsResponses {
                inner: layer.layer(inner),
                failed: None,
            })
        }));
        self
    }

    /// The event publisher of the server being built (the same one [`ModServer::event_publisher`] returns),
    /// for handlers that publish events. Its channels are those registered by the time the server is built.
    #[must_use]
    pub fn event_publisher(&self) -> EventPublisher {
        EventPublisher::new(self.hub.clone())
    }

    /// The main-thread queue of the server being built (the same one [`ModServer::main_thread`] returns).
    #[must_use]
    pub fn main_thread(&self) -> MainThread {
        self.main_thread.clone()
    }

    /// The tool descriptors of the server being built, for a layer that decides by a tool's tags. Empty until
    /// the server is built; then it holds the tools served at each moment (see [`ToolCatalog`]).
    #[must_use]
    pub fn tool_catalog(&self) -> ToolCatalog {
        ToolCatalog::new(self.table.clone())
    }

    /// The handle that adds and removes tools of the server being built once it serves (the same one
    /// [`ModServer::tools`] returns), for a handler that changes the tools. Its changes fail until the server
    /// is built, and always without [`ModServerBuilder::dynamic_tools`].
    #[must_use]
    pub fn tool_registry(&self) -> ToolRegistry {
        ToolRegistry::new(self.table.clone())
    }
}

/// The state a `state/get` handler returns, as the object of components it must be.
fn state_object<T: Serialize>(state: T) -> Result<Map<String, Value>, CallError> {
    match serde_json::to_value(state) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(CallError::new(
            "the state handler's result must serialize to an object of components",
        )
        .with_code(ErrorCode::INTERNAL_ERROR)),
        Err(e) => Err(CallError::new(format!("the state does not serialize: {e}"))
            .with_code(ErrorCode::INTERNAL_ERROR)),
    }
}

fn result_value<R: Serialize>(result: R) -> Result<Value, CallError> {
    serde_json::to_value(result).map_err(|e| {
        CallError::new(format!("the method's result does not serialize: {e}"))
            .with_code(ErrorCode::INTERNAL_ERROR)
    })
}

/// A custom method's params (an absent `params` reads as `{}`), or the `-32602` that says why not.
fn typed_params<P: DeserializeOwned>(request: &ServerRequest) -> Result<P, CallError> {
    request.request.params_as::<P>().map_err(|e| {
        let message = e.to_string();
        let message = gabp_types::without_json_position(&message);
        CallError::new(format!("invalid params: /params: {message}"))
            .with_code(ErrorCode::INVALID_PARAMS)
            .with_data(serde_json::json!({ "errors": [{ "path": "/params", "message": message }] }))
    })
}

#[cfg(test)]
mod tests;
