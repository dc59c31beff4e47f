//! The bridge side: a client that connects to a mod.
//!
//! A [`Bridge`] performs the handshake (`session/hello` with the token, this crate's version, the platform, a
//! fresh UUID `launchId` and `clientInfo`), exposes the welcome, and calls the mod's methods with typed or raw
//! requests, many at once on one connection. One engine task drives the connection (the same loop as the mod's);
//! every queue is bounded. In short:
//!
//! - **Calls**: [`Bridge::call_tool`], [`Bridge::call_tool_as`], [`Bridge::request`], typed [`Bridge::call`]
//!   for any core method, and named helpers for each. Each call has a time limit (30 s by default,
//!   [`Bridge::with_timeout`] or [`BridgeRequest::with_timeout`] for one call). Dropping a call's future
//!   forgets it; a late response is discarded quietly.
//! - **Errors** are typed ([`Error`]); Lib.GAB's codes -31000, -31001 and -31002 read as ours.
//! - **Events**: [`Bridge::subscribe`] returns a [`Subscription`] stream, in `seq` order per channel, with
//!   [`SubscriptionItem::Lagged`] where events were lost (see [`events`] for the ordering policy).
//! - **Connection loss** fails every pending call at once with [`Error::Disconnected`], after delivering
//!   the responses already read. An optional [`ReconnectPolicy`] reconnects with backoff, redoes the handshake
//!   and restores subscriptions; [`Bridge::connection_state`] reports it. An optional [`Keepalive`] pings a
//!   silent mod and declares it dead past a deadline.
//! - **Advertised methods only**: a call to a method the welcome does not list fails locally with
//!   [`Error::NotAdvertised`], without a round trip (configurable).
//! - **Layers**: the call path is a tower [`Service`](tower::Service) ([`BridgeService`]);
//!   [`BridgeBuilder::layer`] wraps it, and [`BridgeBuilder::service`] gives a layer the handle it needs to
//!   subscribe and follow reconnects.
//! - **Liberal reading, strict writing**: peers are read with the lenient decoder (SPEC/1.0 gabp.md §3.5), welcomes
//!   included; everything sent passes the strict one.
//!
//! ```
//! # use futures::{SinkExt, StreamExt};
//! # async fn demo_mod(mut conn: gabp_transport::Connection) {
//! #     while let Some(Ok(frame)) = conn.next().await {
//! #         let Some(body) = frame.into_body() else { continue };
//! #         let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
//! #         let result = match request["method"].as_str() {
//! #             Some("session/hello") => serde_json::json!({"agentId": "demo",
//! #                 "app": {"name": "Demo", "version": "1.0"},
//! #                 "capabilities": {"methods": ["tools/list", "tools/call"]}, "schemaVersion": "1.1"}),
//! #             _ => serde_json::json!({"value": request["params"]["arguments"]["value"]}),
//! #         };
//! #         let reply = serde_json::json!({"v": "gabp/1", "id": request["id"], "type": "response",
//! #             "result": result});
//! #         conn.send(serde_json::to_vec(&reply).unwrap().into()).await.unwrap();
//! #     }
//! # }
//! use gabp_session::bridge::Bridge;
//! use gabp_session::Error;
//! use gabp_transport::{Connection, Token};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // An in-memory pair; `Bridge::connect` and `Bridge::spawn` reach real mods.
//! let (ours, theirs) = tokio::io::duplex(64 * 1024);
//! tokio::spawn(demo_mod(Connection::new(theirs)));
//!
//! let token = Token::new("0123456789abcdef0123456789abcdef")?;
//! let bridge = Bridge::over(Connection::new(ours), token).await?;
//! assert_eq!(bridge.welcome().agent_id.as_str(), "demo");
//!
//! let echoed = bridge.call_tool("demo/echo", json!({"value": 42})).await?;
//! assert_eq!(echoed["value"], 42);
//!
//! // Not advertised by this mod: refused here, nothing is sent.
//! let refused = bridge.get_state(Default::default()).await.unwrap_err();
//! assert!(matches!(refused, Error::NotAdvertised { .. }));
//! # Ok(())
//! # }
//! ```

mod builder;
mod connection;
pub mod events;
mod link;
mod progress;
mod reconnect;
mod redact;
mod response;
mod retry;
mod service;
mod session;
mod settings;
mod shared;
mod state;
mod tools;
mod welcome;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use gabp_transport::{Connection, Endpoint, ModProcess, Token};
use gabp_types::methods::WelcomeResult;
use gabp_types::methods::{
    AttentionAck, AttentionAckParams, AttentionAckResult, AttentionCurrent, GoodbyeParams, Method,
    PingResult, ResourceInfo, ResourcesList, ResourcesListParams, ResourcesRead,
    ResourcesReadParams, ResourcesReadResult, SessionGoodbye, SessionPing, StateGet,
    StateGetParams, StateGetResult, StateSet, StateSetParams, StateSetResult, ToolFilter,
    ToolsList, ToolsListParams,
};
use gabp_types::{Attention, NonEmptyString, ToolDescriptor, Uri};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::DropGuard;

pub use crate::error::{
    ParamError, LIBGAB_AUTHENTICATION_FAILED, LIBGAB_NOT_ESTABLISHED, LIBGAB_TOOL_NOT_FOUND,
};
pub use builder::{BridgeBuilder, Connector};
pub use events::{Subscription, SubscriptionItem};
pub use progress::ProgressUpdates;
pub use response::BridgeResponse;
pub use service::{BridgeRequest, BridgeService, Extensions};
pub use settings::{
    DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_IN_FLIGHT, DEFAULT_REORDER_CAPACITY,
    DEFAULT_REORDER_WINDOW, DEFAULT_REQUEST_TIMEOUT, DEFAULT_SUBSCRIPTION_QUEUE,
    DEFAULT_SUBSCRIPTION_QUEUE_BYTES, GOODBYE_WAIT,
};
pub use state::{ConnectionState, DisconnectReason};

use crate::Error;
use builder::CallPath;
pub use reconnect::{Keepalive, ReconnectPolicy};
pub use retry::ConnectRetry;

/// A client connection to a mod: handshake done, calls and subscriptions ready.
///
/// Cheap to clone; clones share the connection. The connection closes when the last clone is dropped (or on
/// [`Bridge::close`] / [`Bridge::goodbye`]). See the [module documentation](self) for an overview and an
/// example.
#[derive(Clone)]
pub struct Bridge {
    inner: Arc<BridgeInner>,
    timeout: Option<Duration>,
}

struct BridgeInner {
    raw: BridgeService,
    path: CallPath,
    first_welcome: Arc<WelcomeResult>,
    _shutdown_on_drop: DropGuard,
}

impl fmt::Debug for Bridge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bridge")
            .field("state", &self.state())
            .field("agent_id", &self.welcome().agent_id)
            .field("layered", &matches!(self.inner.path, CallPath::Layered(_)))
            .finish_non_exhaustive()
    }
}

impl Bridge {
    /// A builder for a bridge that authenticates with `token`.
    pub fn builder(token: Token) -> BridgeBuilder {
        BridgeBuilder::new(token)
    }

    /// Connects to the mod at `endpoint` with the default options and performs the handshake.
    ///
    /// ```
    /// # use futures::{SinkExt, StreamExt};
    /// # async fn demo_mod(mut conn: gabp_transport::Connection) {
    /// #     while let Some(Ok(frame)) = conn.next().await {
    /// #         let Some(body) = frame.into_body() else { continue };
    /// #         let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
    /// #         let result = match request["method"].as_str() {
    /// #             Some("session/hello") => serde_json::json!({"agentId": "demo",
    /// #                 "app": {"name": "Demo", "version": "1.0"},
    /// #                 "capabilities": {"methods": ["tools/list"]}, "schemaVersion": "1.1"}),
    /// #             _ => serde_json::json!({"tools": []}),
    /// #         };
    /// #         let reply = serde_json::json!({"v": "gabp/1", "id": request["id"], "type": "response",
    /// #             "result": result});
    /// #         conn.send(serde_json::to_vec(&reply).unwrap().into()).await.unwrap();
    /// #     }
    /// # }
    /// use gabp_session::bridge::Bridge;
    /// use gabp_transport::{Endpoint, Listener, Token};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let listener = Listener::bind(&Endpoint::tcp_v4(0)).await?;
    /// # let endpoint = listener.endpoint().clone();
    /// # tokio::spawn(async move { demo_mod(listener.accept().await.unwrap()).await });
    /// let token = Token::new("0123456789abcdef0123456789abcdef")?;
    /// let bridge = Bridge::connect(&endpoint, token).await?;
    /// println!("connected to {}", bridge.welcome().app.name);
    /// assert!(bridge.list_tools().await?.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// See [`BridgeBuilder::connect`].
    pub async fn connect(endpoint: &Endpoint, token: Token) -> Result<Bridge, Error> {
        Bridge::builder(token).connect(endpoint).await
    }

    /// Starts the mod program and performs the handshake over its stdin and stdout, with the default
    /// options. See [`BridgeBuilder::spawn`].
    ///
    /// ```no_run
    /// use gabp_session::bridge::Bridge;
    /// use gabp_transport::Token;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let token = Token::generate()?;
    /// let mut command = std::process::Command::new("my-game-mod");
    /// command.arg("--stdio").env("GABP_TOKEN", token.expose_secret());
    /// let (bridge, mut process) = Bridge::spawn(command, token).await?;
    /// bridge.goodbye(Some("done")).await?;
    /// process.wait().await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// See [`BridgeBuilder::connect`].
    pub async fn spawn(
        command: impl Into<tokio::process::Command>,
        token: Token,
    ) -> Result<(Bridge, ModProcess), Error> {
        Bridge::builder(token).spawn(command).await
    }

    /// Performs the handshake over an established connection, with the default options.
    ///
    /// # Errors
    ///
    /// See [`BridgeBuilder::connect`].
    pub async fn over(connection: Connection, token: Token) -> Result<Bridge, Error> {
        Bridge::builder(token).over(connection).await
    }

    pub(crate) fn from_parts(
        raw: BridgeService,
        path: CallPath,
        first_welcome: Arc<WelcomeResult>,
    ) -> Bridge {
        let guard = raw.shared.shutdown.clone().drop_guard();
        Bridge {
            inner: Arc::new(BridgeInner {
                raw,
                path,
                first_welcome,
                _shutdown_on_drop: guard,
            }),
            timeout: None,
        }
    }

    /// The welcome of the current connection (after a reconnect, the new one's).
    pub fn welcome(&self) -> Arc<WelcomeResult> {
        self.inner
            .raw
            .welcome()
            .unwrap_or_else(|| self.inner.first_welcome.clone())
    }

    /// Whether the welcome advertises `method` (see [`BridgeBuilder::check_advertised`]).
    pub fn is_advertised(&self, method: &str) -> bool {
        self.inner.raw.is_advertised(method)
    }

    /// How many calls wait for their response on the current connection.
    pub fn pending_calls(&self) -> usize {
        self.inner.raw.pending_calls()
    }

    /// The connection state now.
    pub fn state(&self) -> ConnectionState {
        self.inner.raw.state()
    }

    /// A receiver of connection state changes: reconnects show as a new
    /// [`ConnectionState::Connected`] generation.
    pub fn connection_state(&self) -> watch::Receiver<ConnectionState> {
        self.inner.raw.connection_state()
    }

    /// The bridge's handle and innermost service (no layers).
    pub fn service(&self) -> BridgeService {
        self.inner.raw.clone()
    }

    /// A clone of this bridge whose calls have `timeout` as their default time limit.
    ///
    /// ```no_run
    /// # async fn f(bridge: gabp_session::bridge::Bridge) -> Result<(), gabp_session::Error> {
    /// use std::time::Duration;
    /// let quick = bridge.with_timeout(Duration::from_millis(500));
    /// quick.ping().await?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn with_timeout(&self, timeout: Duration) -> Bridge {
        Bridge {
            inner: self.inner.clone(),
            timeout: Some(timeout),
        }
    }

    /// Sends a request through the call path (layers included) and waits for its response.
    ///
    /// # Errors
    ///
    /// See [`Error`].
    pub async fn send(&self, request: BridgeRequest) -> Result<BridgeResponse, Error> {
        let response = self.send_on_path(request).await;
        self.inner.raw.shared.tools.noted(response)
    }

    /// A raw request: `method` with `params` (`null` for none, else a JSON object); returns the raw result.
    ///
    /// # Errors
    ///
    /// See [`Error`].
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, Error> {
        let request = BridgeRequest::from_json(method, params)?;
        self.send(request).await.map(BridgeResponse::into_result)
    }

    /// A typed call of core method `M`.
    ///
    /// ```no_run
    /// # async fn f(bridge: gabp_session::bridge::Bridge) -> Result<(), gabp_session::Error> {
    /// use gabp_types::methods::{ToolsList, ToolsListParams};
    /// let tools = bridge.call::<ToolsList>(&ToolsListParams::default()).await?.tools;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// See [`Error`]; a result that does not have the shape of `M::Result` is
    /// [`Error::InvalidResult`].
    pub async fn call<M: Method>(&self, params: &M::Params) -> Result<M::Result, Error> {
        self.send_as(BridgeRequest::typed::<M>(params)?, M::NAME)
            .await
    }

    /// Calls tool `name` with `arguments` (`null` for none, else a JSON object); returns the tool's result.
    ///
    /// # Errors
    ///
    /// See [`Error`]: [`Error::ToolNotFound`], [`Error::InvalidParams`],
    /// [`Error::ToolFailed`], [`Error::ToolTimeout`], ...
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, Error> {
        let request = BridgeRequest::tool_call(name, arguments)?;
        self.send(request).await.map(BridgeResponse::into_result)
    }

    /// Calls tool `name` with typed arguments and reads its result as `R`.
    ///
    /// ```no_run
    /// # async fn f(bridge: gabp_session::bridge::Bridge) -> Result<(), gabp_session::Error> {
    /// #[derive(serde::Serialize)]
    /// struct At { x: i64, y: i64, z: i64 }
    /// #[derive(serde::Deserialize)]
    /// struct Block { block: Option<String> }
    ///
    /// let found: Block = bridge.call_tool_as("world/get_block", &At { x: 1, y: 2, z: 3 }).await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Bridge::call_tool`]; arguments that do not serialize to an object are
    /// [`Error::InvalidRequest`], a result that does not read as `R` is
    /// [`Error::InvalidResult`].
    pub async fn call_tool_as<A, R>(&self, name: &str, arguments: &A) -> Result<R, Error>
    where
        A: Serialize + ?Sized,
        R: DeserializeOwned,
    {
        let request = BridgeRequest::tool_call_as(name, arguments)?;
        self.send_as(request, gabp_types::methods::ToolsCall::NAME)
            .await
    }

    /// The mod's tools (`tools/list`).
    ///
    /// # Errors
    ///
    /// See [`Error`].
    pub async fn list_tools(&self) -> Result<Vec<ToolDescriptor>, Error> {
        Ok(self
            .call::<ToolsList>(&ToolsListParams::default())
            .await?
            .tools)
    }

    /// The mod's tools matching `filter` (`tools/list` with a filter).
    ///
    /// # Errors
    ///
    /// See [`Error`].
    pub async fn list_tools_filtered(
        &self,
        filter: ToolFilter,
    ) -> Result<Vec<ToolDescriptor>, Error> {
        let params = ToolsListParams {
            filter: Some(filter),
        };
        Ok(self.call::<ToolsList>(&params).await?.tools)
    }

    /// Subscribes to `channels` (`events/subscribe`) and returns the stream of their events. The request goes
    /// through the layers. Channels the mod does not grant are left out (see [`Subscription::channels`]).
    ///
    /// ```no_run
    /// # async fn f(bridge: gabp_session::bridge::Bridge) -> Result<(), gabp_session::Error> {
    /// use futures::StreamExt;
    /// use gabp_session::bridge::SubscriptionItem;
    ///
    /// let mut moves = bridge.subscribe(["player/move"]).await?;
    /// while let Some(item) = moves.next().await {
    ///     match item? {
    ///         SubscriptionItem::Event(event) => println!("{} #{}: {}", event.channel, event.seq, event.payload),
    ///         SubscriptionItem::Lagged { channel, missed } => eprintln!("{channel}: {missed} events lost"),
    ///         _ => {}
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Subscription changes are serialized (so the mod sees them in order): a layer must answer or refuse
    /// `events/subscribe` promptly rather than hold it, for example until a reconnect.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRequest`] for no channels or an empty name; otherwise as any call.
    pub async fn subscribe<I, S>(&self, channels: I) -> Result<Subscription, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let channels = channels.into_iter().map(Into::into).collect();
        self.inner
            .raw
            .shared
            .subscribe(channels, |request| self.send(request))
            .await
    }

    /// Readable resources (`resources/list`), optionally filtered.
    ///
    /// # Errors
    ///
    /// See [`Error`].
    pub async fn list_resources(
        &self,
        params: ResourcesListParams,
    ) -> Result<Vec<ResourceInfo>, Error> {
        Ok(self.call::<ResourcesList>(&params).await?.resources)
    }

    /// Reads one resource (`resources/read`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRequest`] for an invalid URI; [`Error::ResourceNotFound`]; see
    /// [`Error`].
    pub async fn read_resource(&self, uri: &str) -> Result<ResourcesReadResult, Error> {
        let uri = Uri::new(uri).map_err(|e| Error::invalid_request(e.to_string()))?;
        self.call::<ResourcesRead>(&ResourcesReadParams { uri })
            .await
    }

    /// The game state (`state/get`).
    ///
    /// # Errors
    ///
    /// See [`Error`].
    pub async fn get_state(&self, params: StateGetParams) -> Result<StateGetResult, Error> {
        self.call::<StateGet>(&params).await
    }

    /// Applies state updates (`state/set`).
    ///
    /// # Errors
    ///
    /// See [`Error`].
    pub async fn set_state(&self, params: StateSetParams) -> Result<StateSetResult, Error> {
        self.call::<StateSet>(&params).await
    }

    /// The open attention item, if any (`attention/current`).
    ///
    /// # Errors
    ///
    /// See [`Error`].
    pub async fn current_attention(&self) -> Result<Option<Attention>, Error> {
        Ok(self
            .call::<AttentionCurrent>(&Default::default())
            .await?
            .attention)
    }

    /// Acknowledges attention item `attention_id` (`attention/ack`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRequest`] for an empty id; see [`Error`].
    pub async fn ack_attention(&self, attention_id: &str) -> Result<AttentionAckResult, Error> {
        let attention_id =
            NonEmptyString::new(attention_id).map_err(|e| Error::invalid_request(e.to_string()))?;
        self.call::<AttentionAck>(&AttentionAckParams { attention_id })
            .await
    }

    /// Pings the mod (`session/ping`).
    ///
    /// # Errors
    ///
    /// See [`Error`].
    pub async fn ping(&self) -> Result<PingResult, Error> {
        self.call::<SessionPing>(&Default::default()).await
    }

    /// Says goodbye (`session/goodbye`) and closes the bridge: no reconnect follows, and pending calls fail
    /// with [`Error::Disconnected`]. A mod that closes the connection without answering counts as a
    /// goodbye. The answer is awaited for at most [`GOODBYE_WAIT`] (or the call time limit, if shorter).
    ///
    /// # Errors
    ///
    /// An error the mod answered with, or [`Error::Timeout`] after the wait (the bridge is closed anyway).
    pub async fn goodbye(&self, reason: Option<&str>) -> Result<(), Error> {
        let shared = &self.inner.raw.shared;
        shared.begin_close();
        let params = GoodbyeParams {
            reason: reason.map(str::to_owned),
        };
        let wait = GOODBYE_WAIT.min(self.timeout.unwrap_or(shared.settings().request_timeout));
        let result = self
            .with_timeout(wait)
            .call::<SessionGoodbye>(&params)
            .await;
        self.close().await;
        match result {
            Ok(_) | Err(Error::Disconnected | Error::Closed) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Closes the connection without a goodbye, and waits until the bridge reports
    /// [`ConnectionState::Closed`] (or an earlier terminal state). Pending calls fail with
    /// [`Error::Disconnected`]; subscriptions end with [`Error::Closed`].
    pub async fn close(&self) {
        let shared = &self.inner.raw.shared;
        shared.begin_close();
        shared.shutdown.cancel();
        self.closed().await;
    }

    /// Waits until the connection is lost for good or closed, and returns that terminal state.
    pub async fn closed(&self) -> ConnectionState {
        let mut states = self.connection_state();
        let terminal = states.wait_for(ConnectionState::is_terminal).await;
        match terminal {
            Ok(state) => state.clone(),
            Err(_) => ConnectionState::Closed,
        }
    }
}
