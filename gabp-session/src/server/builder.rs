//! [`ModServerBuilder`], [`ServerLimits`] and [`BuildError`].

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::FutureExt;
use gabp_transport::{ModSettings, Token};
use gabp_types::methods::{
    AppInfo, HelloToken, ServerInfo, StateGetParams, StateSetParams, StateSetResult, WelcomeResult,
    CORE_METHODS,
};
use gabp_types::{
    BoundedU64, Capabilities, ChannelName, ErrorObject, Extensions, Limits, MethodName,
    NonEmptyString, Response, UniqueVec, Uri,
};
use serde_json::{json, Map, Value};
use tower::util::BoxService;
use tower::{BoxError, Layer, Service};

use super::catalog::ToolCatalog;
use super::context::StateMap;
use super::events::{EventHub, EventPublisher};
use super::layer::{ModService, ResponseFuture};
use super::main_thread::MainThread;
use super::router::{MethodHandler, Router, Routes, StateGetHandler, StateSetHandler};
use super::serve::ModServer;
use super::session::internal_error;
use super::{Resource, ServerRequest, Tool};

/// The mod's limits (DESIGN.md 3.7). The first four are advertised in the welcome's `capabilities.limits`
/// and all are enforced.
///
/// ```
/// use std::time::Duration;
/// use gabp_session::server::ServerLimits;
///
/// let limits = ServerLimits::default()
///     .with_request_timeout(Duration::from_secs(5))
///     .with_max_connections(2);
/// assert_eq!(limits.max_message_size, 1024 * 1024);
/// assert_eq!(limits.max_concurrent_requests, 64);
/// assert_eq!(limits.max_connections, 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerLimits {
    /// Largest message body read or written, in bytes (default 1 MiB; at least 1024). Advertised as
    /// `maxMessageSize`.
    pub max_message_size: usize,
    /// Largest header block read, in bytes (default 8 KiB); a longer one is a fatal framing error.
    pub max_header_size: usize,
    /// Requests of one connection in flight at once (default 64). Advertised as `maxConcurrentRequests`.
    pub max_concurrent_requests: usize,
    /// Time limit of a request (default 30 s). Advertised, in whole seconds rounded up, as `requestTimeout`.
    pub request_timeout: Duration,
    /// Connections served at once (default 10); one more is closed at once.
    pub max_connections: usize,
    /// Time a new connection has to complete `session/hello` (default 10 s).
    pub hello_timeout: Duration,
    /// Events queued per connection (default 1024); when full, that connection loses events.
    pub event_queue: usize,
    /// Answers queued per connection waiting for the bridge to read (default 256); when full, the
    /// connection stops reading requests.
    pub outgoing_queue: usize,
    /// Calls queued for the game's main thread, mod-wide (default 1024); when full, calls are answered
    /// `-32401` (retryable).
    pub main_thread_queue: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_message_size: gabp_codec::DEFAULT_MAX_BODY_SIZE,
            max_header_size: gabp_codec::DEFAULT_MAX_HEADER_SIZE,
            max_concurrent_requests: 64,
            request_timeout: Duration::from_secs(30),
            max_connections: 10,
            hello_timeout: Duration::from_secs(10),
            event_queue: 1024,
            outgoing_queue: 256,
            main_thread_queue: 1024,
        }
    }
}

impl ServerLimits {
    /// Sets the largest message body, in bytes.
    #[must_use]
    pub fn with_max_message_size(mut self, value: usize) -> Self {
        self.max_message_size = value;
        self
    }

    /// Sets the largest header block, in bytes.
    #[must_use]
    pub fn with_max_header_size(mut self, value: usize) -> Self {
        self.max_header_size = value;
        self
    }

    /// Sets how many requests of one connection may be in flight.
    #[must_use]
    pub fn with_max_concurrent_requests(mut self, value: usize) -> Self {
        self.max_concurrent_requests = value;
        self
    }

    /// Sets the time limit of a request.
    #[must_use]
    pub fn with_request_timeout(mut self, value: Duration) -> Self {
        self.request_timeout = value;
        self
    }

    /// Sets how many connections are served at once.
    #[must_use]
    pub fn with_max_connections(mut self, value: usize) -> Self {
        self.max_connections = value;
        self
    }

    /// Sets the time a connection has to complete `session/hello`.
    #[must_use]
    pub fn with_hello_timeout(mut self, value: Duration) -> Self {
        self.hello_timeout = value;
        self
    }

    /// Sets the capacity of each connection's event queue.
    #[must_use]
    pub fn with_event_queue(mut self, value: usize) -> Self {
        self.event_queue = value;
        self
    }

    /// Sets the capacity of each connection's queue of answers.
    #[must_use]
    pub fn with_outgoing_queue(mut self, value: usize) -> Self {
        self.outgoing_queue = value;
        self
    }

    /// Sets the capacity of the main-thread queue.
    #[must_use]
    pub fn with_main_thread_queue(mut self, value: usize) -> Self {
        self.main_thread_queue = value;
        self
    }

    fn check(&self) -> Result<(), BuildError> {
        let bad = |limit: &'static str, reason: &str| {
            Err(BuildError::InvalidLimit {
                limit,
                reason: reason.to_owned(),
            })
        };
        if self.max_message_size < 1024 {
            return bad("max_message_size", "must be at least 1024 bytes");
        }
        if self.max_header_size < 64 {
            return bad("max_header_size", "must be at least 64 bytes");
        }
        for (name, value) in [
            ("max_concurrent_requests", self.max_concurrent_requests),
            ("max_connections", self.max_connections),
            ("event_queue", self.event_queue),
            ("outgoing_queue", self.outgoing_queue),
            ("main_thread_queue", self.main_thread_queue),
        ] {
            if value == 0 {
                return bad(name, "must be at least 1");
            }
        }
        if self.request_timeout.is_zero() {
            return bad("request_timeout", "must not be zero");
        }
        if self.hello_timeout.is_zero() {
            return bad("hello_timeout", "must not be zero");
        }
        Ok(())
    }

    /// The `capabilities.limits` object advertised in the welcome.
    #[must_use]
    pub fn advertised(&self) -> Limits {
        let as_u64 = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        let timeout_secs = self
            .request_timeout
            .as_secs()
            .saturating_add(u64::from(self.request_timeout.subsec_nanos() > 0));
        Limits {
            max_message_size: BoundedU64::new(as_u64(self.max_message_size)).ok(),
            max_concurrent_requests: BoundedU64::new(as_u64(self.max_concurrent_requests)).ok(),
            request_timeout: BoundedU64::new(timeout_secs.max(1)).ok(),
        }
    }
}

/// Why a [`ModServer`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No token: call [`ModServerBuilder::token`] or [`ModServerBuilder::settings`].
    #[error("no token: set one with ModServerBuilder::token or ModServerBuilder::settings")]
    MissingToken,
    /// The token is shorter than the 32 characters `session/hello` requires, so no bridge could present it.
    #[error("the token is {len} characters long; session/hello requires at least 32")]
    TokenTooShort {
        /// The token's length (never the token).
        len: usize,
    },
    /// A tool, method, channel or resource name is invalid.
    #[error("invalid {kind} name: {reason}")]
    InvalidName {
        /// `tool`, `method`, `channel` or `resource`.
        kind: &'static str,
        /// Why.
        reason: String,
    },
    /// The same tool, method, channel or resource was registered twice.
    #[error("{kind} {name} is registered twice")]
    Duplicate {
        /// `tool`, `method`, `channel` or `resource`.
        kind: &'static str,
        /// The name.
        name: String,
    },
    /// A custom method uses the name of a method the mod serves itself.
    #[error("{0} is served by the mod itself and cannot be registered as a custom method")]
    ReservedMethod(String),
    /// A tool's schema is not a valid JSON Schema object, or a descriptor field is invalid.
    #[error("tool {tool}: {reason}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// Why.
        reason: String,
    },
    /// A limit is out of range.
    #[error("limit {limit} {reason}")]
    InvalidLimit {
        /// The field of [`ServerLimits`].
        limit: &'static str,
        /// Why.
        reason: String,
    },
    /// App info, agent id or a capability extension is invalid.
    #[error("invalid welcome: {0}")]
    InvalidWelcome(String),
}

type LayerFn = Arc<dyn Fn(ModService) -> ModService + Send + Sync>;

/// Builds a [`ModServer`]: identity, token, limits, and everything it serves.
///
/// ```
/// use gabp_session::server::{ModServer, Resource, Tool, ToolError};
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
///         Tool::new("demo/echo", |e: Echo| async move { Ok::<_, ToolError>(Echoed { value: e.value }) })
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
    tools: Vec<Tool>,
    resources: Vec<Resource>,
    channels: Vec<String>,
    state_get: Option<StateGetHandler>,
    state_set: Option<StateSetHandler>,
    methods: Vec<(String, MethodHandler)>,
    layers: Vec<LayerFn>,
    hub: Arc<EventHub>,
    main_thread: MainThread,
    catalog: ToolCatalog,
    shared: StateMap,
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

/// The name under which channel patterns are advertised in `capabilities.extensions`.
pub const CHANNEL_PATTERNS_EXTENSION: &str = "channel-patterns";

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
            tools: Vec::new(),
            resources: Vec::new(),
            channels: Vec::new(),
            state_get: None,
            state_set: None,
            methods: Vec::new(),
            layers: Vec::new(),
            catalog: ToolCatalog::default(),
            shared: StateMap::default(),
        }
    }

    /// The game or application: the welcome's `app.name` and `app.version`.
    #[must_use]
    pub fn app(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.app = (name.into(), version.into());
        self
    }

    /// The welcome's `serverInfo` (default: gabp-session's own name and version).
    #[must_use]
    pub fn server_info(mut self, info: ServerInfo) -> Self {
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

    /// Registers a tool.
    #[must_use]
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Registers a resource.
    #[must_use]
    pub fn resource(mut self, resource: Resource) -> Self {
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

    /// Serves `state/get` with `handler`, which returns the state by component. When the request names
    /// `components`, only those are sent; the `timestamp` is added.
    #[must_use]
    pub fn state_get<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(StateGetParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Map<String, Value>, ErrorObject>> + Send + 'static,
    {
        self.state_get = Some(Arc::new(move |p| handler(p).boxed()));
        self
    }

    /// Serves `state/set` with `handler`.
    #[must_use]
    pub fn state_set<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(StateSetParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<StateSetResult, ErrorObject>> + Send + 'static,
    {
        self.state_set = Some(Arc::new(move |p| handler(p).boxed()));
        self
    }

    /// Serves both `state/get` and `state/set` (see [`ModServerBuilder::state_get`] and
    /// [`ModServerBuilder::state_set`]).
    #[must_use]
    pub fn state<G, GF, S, SF>(self, get: G, set: S) -> Self
    where
        G: Fn(StateGetParams) -> GF + Send + Sync + 'static,
        GF: Future<Output = Result<Map<String, Value>, ErrorObject>> + Send + 'static,
        S: Fn(StateSetParams) -> SF + Send + Sync + 'static,
        SF: Future<Output = Result<StateSetResult, ErrorObject>> + Send + 'static,
    {
        self.state_get(get).state_set(set)
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
    /// The handler gets the whole request, with its session, and returns the result or an error object.
    #[must_use]
    pub fn method<F, Fut>(mut self, name: impl Into<String>, handler: F) -> Self
    where
        F: Fn(ServerRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ErrorObject>> + Send + 'static,
    {
        self.methods
            .push((name.into(), Arc::new(move |req| handler(req).boxed())));
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
    /// the server is built; then it holds every tool registered by then (see [`ToolCatalog`]).
    #[must_use]
    pub fn tool_catalog(&self) -> ToolCatalog {
        self.catalog.clone()
    }

    /// Checks everything registered and builds the server.
    ///
    /// # Errors
    ///
    /// [`BuildError`]: no token or a short one, an invalid or duplicate name, a tool schema that does not
    /// compile, a custom method named like one the mod serves itself, an out-of-range limit, invalid app info
    /// or extension.
    pub fn build(self) -> Result<ModServer, BuildError> {
        let token = self.token.ok_or(BuildError::MissingToken)?;
        let len = token.expose_secret().chars().count();
        if len < HelloToken::MIN_LEN {
            return Err(BuildError::TokenTooShort { len });
        }
        self.limits.check()?;
        self.hub.set_max_message_size(self.limits.max_message_size);
        self.hub.set_patterns(self.channel_patterns);
        self.main_thread.set_capacity(self.limits.main_thread_queue);

        // Tools.
        let mut tools = Vec::with_capacity(self.tools.len());
        let mut tool_index = HashMap::new();
        let mut tool_timeouts = HashMap::new();
        for tool in self.tools {
            let registered = tool.register()?;
            let name = registered.descriptor.name.as_str().to_owned();
            if tool_index.insert(name.clone(), tools.len()).is_some() {
                return Err(BuildError::Duplicate { kind: "tool", name });
            }
            if let Some(t) = registered.timeout {
                tool_timeouts.insert(name, t);
            }
            tools.push(Arc::new(registered));
        }
        self.catalog
            .fill(tools.iter().map(|t| t.descriptor.clone()));

        // Resources.
        let mut resources = Vec::with_capacity(self.resources.len());
        let mut resource_index = HashMap::new();
        for resource in self.resources {
            let registered = resource.register()?;
            let uri = registered.info.uri.as_str().to_owned();
            if resource_index
                .insert(uri.clone(), resources.len())
                .is_some()
            {
                return Err(BuildError::Duplicate {
                    kind: "resource",
                    name: uri,
                });
            }
            resources.push(Arc::new(registered));
        }

        // Channels.
        for name in self.channels {
            let channel = ChannelName::new(name).map_err(|e| BuildError::InvalidName {
                kind: "channel",
                reason: e.to_string(),
            })?;
            let text = channel.to_string();
            if !self.hub.register(channel) {
                return Err(BuildError::Duplicate {
                    kind: "channel",
                    name: text,
                });
            }
        }

        // Methods: the core ones the mod serves, then custom ones.
        let served: HashSet<&str> = CORE_METHODS
            .iter()
            .copied()
            .filter(|m| !m.starts_with("attention/"))
            .collect();
        let mut methods: Vec<String> = CORE_METHODS
            .iter()
            .copied()
            .filter(|m| served.contains(m))
            .filter(|m| match *m {
                "state/get" => self.state_get.is_some(),
                "state/set" => self.state_set.is_some(),
                _ => true,
            })
            .map(str::to_owned)
            .collect();
        let mut custom = HashMap::new();
        for (name, handler) in self.methods {
            MethodName::new(name.clone()).map_err(|e| BuildError::InvalidName {
                kind: "method",
                reason: e.to_string(),
            })?;
            if served.contains(name.as_str()) {
                return Err(BuildError::ReservedMethod(name));
            }
            if custom.insert(name.clone(), handler).is_some() {
                return Err(BuildError::Duplicate {
                    kind: "method",
                    name,
                });
            }
            methods.push(name);
        }

        // The welcome.
        let welcome_error = |e: &dyn fmt::Display| BuildError::InvalidWelcome(e.to_string());
        let mut extensions = Extensions::new();
        if self.channel_patterns {
            let mut ext = Map::new();
            ext.insert("syntax".into(), json!("glob"));
            ext.insert(
                "description".into(),
                json!("events/subscribe accepts glob patterns such as player/*; `*` stays within one segment, `**` crosses them"),
            );
            extensions
                .insert(CHANNEL_PATTERNS_EXTENSION, ext)
                .map_err(|e| welcome_error(&e))?;
        }
        for (key, value) in self.extensions {
            extensions
                .insert(key, value)
                .map_err(|e| welcome_error(&e))?;
        }
        let method_names = methods
            .iter()
            .map(|m| MethodName::new(m.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| welcome_error(&e))?;
        let uris: Vec<Uri> = resources.iter().map(|r| r.info.uri.clone()).collect();
        let capabilities = Capabilities {
            methods: Some(UniqueVec::new(method_names).map_err(|e| welcome_error(&e))?),
            events: Some(
                UniqueVec::new(
                    self.hub
                        .channel_names()
                        .into_iter()
                        .map(|c| c.to_string())
                        .collect(),
                )
                .map_err(|e| welcome_error(&e))?,
            ),
            resources: Some(UniqueVec::new(uris).map_err(|e| welcome_error(&e))?),
            extensions: (!extensions.is_empty()).then_some(extensions),
            limits: Some(self.limits.advertised()),
        };
        let non_empty = |s: String, what: &str| {
            NonEmptyString::new(s)
                .map_err(|_| BuildError::InvalidWelcome(format!("{what} is empty")))
        };
        let (app_name, app_version) = self.app;
        let agent_id = non_empty(self.agent_id.unwrap_or_else(|| app_name.clone()), "agentId")?;
        let welcome = WelcomeResult {
            agent_id,
            app: AppInfo {
                name: non_empty(app_name, "app.name")?,
                version: non_empty(app_version, "app.version")?,
            },
            capabilities,
            schema_version: gabp_types::methods::SchemaVersion::current(),
            server_info: Some(self.server_info.unwrap_or_else(|| ServerInfo {
                name: Some(env!("CARGO_PKG_NAME").to_owned()),
                version: Some(env!("CARGO_PKG_VERSION").to_owned()),
                author: None,
            })),
        };
        let welcome_value = serde_json::to_value(&welcome).map_err(|e| welcome_error(&e))?;

        let router = Router::new(Routes {
            welcome: welcome_value,
            tools,
            tool_index,
            resources,
            resource_index,
            state_get: self.state_get,
            state_set: self.state_set,
            methods: custom,
            hub: self.hub.clone(),
            main_thread: self.main_thread.clone(),
            request_timeout: self.limits.request_timeout,
            state: Arc::new(self.shared),
        });
        Ok(ModServer::new(super::serve::Parts {
            router,
            token,
            limits: self.limits,
            welcome,
            methods,
            tool_timeouts,
            layers: self.layers,
            publisher: EventPublisher::new(self.hub),
            main_thread: self.main_thread,
        }))
    }
}

impl ModServerBuilder {
    /// Builds the server and serves `listener` at once: [`ModServerBuilder::build`], then
    /// [`ModServer::serve`]. Must be called within a Tokio runtime.
    ///
    /// ```
    /// use gabp_session::server::ModServer;
    /// use gabp_transport::{Endpoint, Listener, Token};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let handle = ModServer::builder()
    ///     .token(Token::generate()?)
    ///     .serve(Listener::bind(&Endpoint::tcp_v4(0)).await?)?;
    /// let events = handle.server().event_publisher();
    /// # let _ = events;
    /// handle.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`ModServerBuilder::build`].
    pub fn serve(
        self,
        listener: gabp_transport::Listener,
    ) -> Result<super::ServeHandle, BuildError> {
        Ok(self.build()?.serve(listener))
    }
}

pub(crate) fn apply_layers(layers: &[LayerFn], mut service: ModService) -> ModService {
    for layer in layers.iter().rev() {
        service = layer(service);
    }
    service
}

/// Adapts a user layer's service to the stack: a service error becomes a `-32603` answer.
struct ErrorsAsResponses<S> {
    inner: S,
    failed: Option<String>,
}

impl<S> Service<ServerRequest> for ErrorsAsResponses<S>
where
    S: Service<ServerRequest, Response = Response>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        if self.failed.is_some() {
            return Poll::Ready(Ok(()));
        }
        match self.inner.poll_ready(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(())) => Poll::Ready(Ok(())),
            Poll::Ready(Err(e)) => {
                let e: BoxError = e.into();
                tracing::error!(error = %e, "a layer's service failed; its requests are answered -32603");
                self.failed = Some(e.to_string());
                Poll::Ready(Ok(()))
            }
        }
    }

    fn call(&mut self, req: ServerRequest) -> ResponseFuture {
        if let Some(reason) = &self.failed {
            let answer = req.error(internal_error(format!("the service failed: {reason}")));
            return futures::future::ready(Ok(answer)).boxed();
        }
        let id = req.id();
        self.inner
            .call(req)
            .map(move |r| {
                Ok(r.unwrap_or_else(|e| {
                    let e: BoxError = e.into();
                    Response::error(id, internal_error(format!("internal error: {e}")))
                }))
            })
            .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token() -> Token {
        Token::new("t".repeat(40)).unwrap()
    }

    #[test]
    fn token_rules() {
        assert_eq!(
            ModServerBuilder::new().build().err(),
            Some(BuildError::MissingToken)
        );
        assert_eq!(
            ModServerBuilder::new()
                .token(Token::new("short").unwrap())
                .build()
                .err(),
            Some(BuildError::TokenTooShort { len: 5 })
        );
    }

    #[test]
    fn welcome_advertises_what_is_registered() {
        let server = ModServerBuilder::new()
            .token(token())
            .app("Game", "1.2")
            .channel("player/move")
            .method("game/pause", |_| async { Ok(Value::Null) })
            .extension("x-ext", Map::new())
            .build()
            .unwrap();
        let w = server.welcome();
        assert_eq!(w.agent_id.as_str(), "Game");
        let caps = &w.capabilities;
        assert!(caps.has_method("game/pause"));
        assert!(caps.has_method("events/subscribe"));
        assert!(!caps.has_method("state/get"));
        assert!(!caps.has_method("attention/current"));
        assert!(caps.has_event("player/move"));
        let ext = caps.extensions.as_ref().unwrap();
        assert!(ext.get(CHANNEL_PATTERNS_EXTENSION).is_some());
        assert!(ext.get("x-ext").is_some());
        let limits = caps.limits.unwrap();
        assert_eq!(limits.max_message_size.unwrap().get(), 1 << 20);
        assert_eq!(limits.max_concurrent_requests.unwrap().get(), 64);
        assert_eq!(limits.request_timeout.unwrap().get(), 30);
    }

    #[test]
    fn registration_errors() {
        let dup = ModServerBuilder::new()
            .token(token())
            .tool(Tool::new("a/b", |_: Value| async {
                Ok::<_, super::super::ToolError>(Value::Null)
            }))
            .tool(Tool::new("a/b", |_: Value| async {
                Ok::<_, super::super::ToolError>(Value::Null)
            }))
            .build();
        assert!(matches!(
            dup,
            Err(BuildError::Duplicate { kind: "tool", .. })
        ));
        let reserved = ModServerBuilder::new()
            .token(token())
            .method("tools/call", |_| async { Ok(Value::Null) })
            .build();
        assert!(matches!(reserved, Err(BuildError::ReservedMethod(_))));
        let channel = ModServerBuilder::new()
            .token(token())
            .channel("player.move")
            .build();
        assert!(matches!(
            channel,
            Err(BuildError::InvalidName {
                kind: "channel",
                ..
            })
        ));
        let limits = ServerLimits {
            max_message_size: 10,
            ..ServerLimits::default()
        };
        assert!(matches!(
            ModServerBuilder::new()
                .token(token())
                .limits(limits)
                .build(),
            Err(BuildError::InvalidLimit { .. })
        ));
        let ext = ModServerBuilder::new()
            .token(token())
            .extension("Bad Key", Map::new())
            .build();
        assert!(matches!(ext, Err(BuildError::InvalidWelcome(_))));
    }

    #[test]
    fn advertised_timeout_rounds_up() {
        let mut l = ServerLimits {
            request_timeout: Duration::from_millis(1500),
            ..ServerLimits::default()
        };
        assert_eq!(l.advertised().request_timeout.unwrap().get(), 2);
        l.request_timeout = Duration::from_millis(10);
        assert_eq!(l.advertised().request_timeout.unwrap().get(), 1);
    }
}
