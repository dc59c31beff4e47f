//! [`ModServer`] and [`ServeHandle`]: serving connections.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use gabp_codec::FrameCodec;
use gabp_transport::{Connection, Endpoint, Listener, Token, TransportError};
use gabp_types::methods::WelcomeResult;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::util::{BoxService, Either};
use tower::Layer;
use tracing::Instrument;

use crate::engine::{self, Engine, Queues};

use super::admission::Admission;
use super::builder::ModServerBuilder;
use super::connection::{close_reason, ModRole};
use super::events::{EventPublisher, SubscriberQueue};
use super::layer::user::{apply_layers, LayerFn};
use super::layer::{
    AuthLayer, CapabilityLayer, CatchPanicLayer, ConcurrencyLimitLayer, ModService, TimeoutLayer,
    TraceLayer,
};
use super::limits::ServerLimits;
use super::main_thread::MainThread;
use super::registry::{ToolRegistry, ToolTable};
use super::router::Router;
use super::session::{CloseReason, Session};
use super::stack::{Protocol, Stack};

/// A GABP mod server: serves tools, events, resources, state and custom methods to bridges, enforcing every
/// rule of the protocol (SPEC/1.0 gabp.md §7, §8; transport.md §6-§8) on every connection.
///
/// Build one with [`ModServer::builder`], then [`serve`](ModServer::serve) a [`Listener`] or
/// [`serve_connection`](ModServer::serve_connection) one already established connection. Cheap to clone.
///
/// Each connection gets its own tower stack (see [`layer`](super::layer)) and one driver task that reads
/// and writes whole frames: answers go out before new requests are read, requests run concurrently up to the
/// limit, and everything queued is bounded. Serving needs a Tokio runtime with time enabled (as
/// `#[tokio::main]` sets up).
///
/// ```
/// use futures::{SinkExt, StreamExt};
/// use gabp_session::server::ModServer;
/// use gabp_transport::{Connection, Token};
/// use gabp_types::{Message, MethodName, Request};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let token = Token::generate()?;
/// let server = ModServer::builder().app("My Game", "1.0").token(token.clone()).build()?;
///
/// // An in-memory connection; a real mod uses `server.serve(listener)`.
/// let (mod_side, bridge_side) = tokio::io::duplex(64 * 1024);
/// tokio::spawn(server.serve_connection(Connection::new(mod_side)));
/// let mut bridge = Connection::new(bridge_side);
///
/// let hello = Request::with_params(
///     MethodName::new("session/hello")?,
///     &serde_json::json!({
///         "token": token.expose_secret(), "bridgeVersion": "1.0.0", "platform": "linux",
///         "launchId": "6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11"
///     }),
/// )?;
/// bridge.send(Message::from(hello).to_vec().into()).await?;
/// let frame = bridge.next().await.ok_or("closed")??.into_body().ok_or("oversized")?;
/// let Message::Response(welcome) = gabp_types::decode::decode_strict(&frame)? else { panic!() };
/// assert_eq!(welcome.result().unwrap()["app"]["name"], "My Game");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ModServer {
    inner: Arc<Parts>,
}

/// What a server is made of, built by [`ModServerBuilder::build`].
pub(crate) struct Parts {
    pub(crate) router: Router,
    pub(crate) auth: AuthLayer,
    pub(crate) capability: CapabilityLayer,
    pub(crate) timeout: TimeoutLayer,
    pub(crate) tools: Arc<ToolTable>,
    pub(crate) limits: ServerLimits,
    pub(crate) welcome: WelcomeResult,
    pub(crate) layers: Vec<LayerFn>,
    pub(crate) publisher: EventPublisher,
    pub(crate) main_thread: MainThread,
    pub(crate) admission: Arc<Admission>,
}

impl Parts {
    /// The protocol layers around `service`.
    fn protocol<S>(&self, service: S) -> Protocol<S> {
        TraceLayer::new()
            .layer(CatchPanicLayer::new().layer(self.auth.layer(self.capability.layer(service))))
    }
}

impl fmt::Debug for ModServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModServer")
            .field("agent_id", &self.inner.welcome.agent_id)
            .field("limits", &self.inner.limits)
            .field("connections", &self.connection_count())
            .finish_non_exhaustive()
    }
}

impl ModServer {
    /// A builder (see [`ModServerBuilder`]).
    ///
    /// ```
    /// use gabp_session::server::{CallError, ModServer, ServerLimits, Tool};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = ModServer::builder()
    ///     .app("My Game", "1.0.0")
    ///     .token(gabp_transport::Token::generate()?)
    ///     .limits(ServerLimits::default().with_max_connections(4))
    ///     .tool(Tool::new("game/version", |_: serde_json::Value| async {
    ///         Ok::<_, CallError>("1.0.0")
    ///     }))
    ///     .build()?;
    /// assert_eq!(server.welcome().app.name.as_str(), "My Game");
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn builder() -> ModServerBuilder {
        ModServerBuilder::new()
    }

    pub(crate) fn new(parts: Parts) -> Self {
        ModServer {
            inner: Arc::new(parts),
        }
    }

    /// The welcome every bridge receives in answer to a successful `session/hello`.
    #[must_use]
    pub fn welcome(&self) -> &WelcomeResult {
        &self.inner.welcome
    }

    /// The token bridges must present in `session/hello` (for a bridge in the same process, such as a test's;
    /// like every [`Token`], it never shows in `Debug` or `Display`).
    #[must_use]
    pub fn token(&self) -> &Token {
        self.inner.auth.token()
    }

    /// The limits.
    #[must_use]
    pub fn limits(&self) -> &ServerLimits {
        &self.inner.limits
    }

    /// The event publisher.
    #[must_use]
    pub fn event_publisher(&self) -> EventPublisher {
        self.inner.publisher.clone()
    }

    /// The handle that adds and removes tools while serving (see [`ToolRegistry`]; changes need
    /// [`ModServerBuilder::dynamic_tools`]).
    #[must_use]
    pub fn tools(&self) -> ToolRegistry {
        ToolRegistry::new(self.inner.tools.clone())
    }

    /// Answers in flight get the longest time limit any request can have now, and a little more to be written.
    fn drain_timeout(&self) -> Duration {
        let limit = self.inner.limits.request_timeout;
        let longest = self
            .inner
            .tools
            .longest_timeout()
            .map_or(limit, |t| t.max(limit));
        longest.saturating_add(Duration::from_secs(5))
    }

    /// The queue of main-thread tool calls; call [`MainThread::pump`] from the game loop.
    #[must_use]
    pub fn main_thread(&self) -> MainThread {
        self.inner.main_thread.clone()
    }

    /// The router alone (the innermost service, without any protocol layer).
    #[must_use]
    pub fn router(&self) -> Router {
        self.inner.router.clone()
    }

    /// A complete stack, exactly as a connection gets it: every protocol layer, your layers, the router. Call
    /// it with requests whose [`Session`] you make (for example [`Session::detached`]) to test a mod without
    /// any transport.
    #[must_use]
    pub fn service(&self) -> ModService {
        BoxService::new(self.stack())
    }

    /// The stack a connection gets (see [`ModServer::service`]), erased only around the user's layers.
    fn stack(&self) -> Stack {
        let inner = &self.inner;
        let limit = inner.limits.max_concurrent_requests;
        let core = ConcurrencyLimitLayer::new(limit.min(tokio::sync::Semaphore::MAX_PERMITS))
            .layer(inner.timeout.layer(inner.router.clone()));
        if inner.layers.is_empty() {
            return Either::Left(inner.protocol(core));
        }
        Either::Right(inner.protocol(apply_layers(&inner.layers, BoxService::new(core))))
    }

    /// How many connections are being served.
    #[must_use]
    pub fn connection_count(&self) -> usize {
        self.inner.admission.count()
    }

    fn codec(&self) -> FrameCodec {
        FrameCodec::new()
            .with_max_body_size(self.inner.limits.max_message_size)
            .with_max_header_size(self.inner.limits.max_header_size)
    }

    /// Serves one already established connection (an in-memory pair, a socket accepted elsewhere) until it
    /// closes, and says why it closed. The future may be spawned; dropping it closes the connection at once.
    ///
    /// The connection's codec is replaced by one with this server's limits, so pass a connection from which
    /// nothing has been read yet. It counts against [`ServerLimits::max_connections`]: over the limit, the
    /// oldest connection without a successful `session/hello` is closed to make room
    /// ([`CloseReason::Displaced`]), and when every connection has one, the new one is closed at once
    /// ([`CloseReason::TooManyConnections`]) (SPEC/1.0 security.md §7).
    pub fn serve_connection(
        &self,
        connection: Connection,
    ) -> impl Future<Output = CloseReason> + Send + 'static {
        self.serve_with_shutdown(connection, CancellationToken::new())
    }

    fn serve_with_shutdown(
        &self,
        mut connection: Connection,
        shutdown: CancellationToken,
    ) -> impl Future<Output = CloseReason> + Send + 'static {
        let slot = self.inner.admission.admit();
        let server = self.clone();
        *connection.codec_mut() = self.codec();
        async move {
            let Some(slot) = slot else {
                tracing::warn!(
                    peer = connection.peer(),
                    max = server.inner.limits.max_connections,
                    "too many connections; closing the new one"
                );
                return CloseReason::TooManyConnections;
            };
            let limits = &server.inner.limits;
            let (queue, events) =
                SubscriberQueue::new(limits.event_queue, limits.event_queue_bytes);
            let (progress, progress_rx) = super::progress::ProgressSink::new();
            let in_flight = Arc::new(crate::engine::InFlight::default());
            let session = Session::with_extensions(
                connection.peer().to_owned(),
                queue,
                Some(Arc::new(progress)),
                Some(in_flight.clone()),
            );
            let span = tracing::info_span!(
                "gabp.connection",
                id = session.id(),
                peer = %session.peer()
            );
            let role = ModRole::new(
                server.stack(),
                session.clone(),
                server.inner.publisher.hub().clone(),
                shutdown,
                limits.hello_timeout,
                slot,
            );
            let queues = Queues {
                outgoing: None,
                events: Some(events),
                progress: Some(progress_rx),
                in_flight: Some(in_flight),
            };
            let limits = engine::Limits {
                max_message_size: limits.max_message_size,
                backlog: limits.outgoing_queue,
                backlog_bytes: limits.outgoing_queue_bytes,
                calls: 0,
                drain_timeout: server.drain_timeout(),
            };
            tracing::debug!(parent: &span, "connection opened");
            let ended = Engine::new(connection, role, queues, limits)
                .run()
                .instrument(span.clone())
                .await;
            session.end();
            let reason = close_reason(ended);
            tracing::debug!(parent: &span, %reason, "connection closed");
            reason
        }
    }

    /// Accepts bridges on `listener` and serves each on its own task, until [`ServeHandle::shutdown`] or a
    /// [`ShutdownTrigger`] (or, for a stdio listener, until its one connection ends). Accepted connections use
    /// this server's limits. See [`ServeHandle`] for the life cycle.
    ///
    /// Must be called within a Tokio runtime.
    #[must_use]
    pub fn serve(self, listener: Listener) -> ServeHandle {
        // A token given at a WebSocket handshake is checked too (SPEC/1.0 transport.md §2.5).
        let listener = listener
            .with_codec(self.codec())
            .with_ws_token(self.token().clone());
        let endpoint = listener.endpoint().clone();
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(accept_loop(self.clone(), listener, shutdown.clone()));
        ServeHandle {
            endpoint,
            shutdown,
            task,
            server: self,
        }
    }
}

async fn accept_loop(server: ModServer, listener: Listener, shutdown: CancellationToken) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok(connection) => {
                    let serve = server.serve_with_shutdown(connection, shutdown.child_token());
                    connections.spawn(async move {
                        let reason = serve.await;
                        tracing::debug!(%reason, "connection closed");
                    });
                }
                Err(TransportError::Closed) => break,
                Err(e) => {
                    // Often transient (too many open files): wait a little instead of spinning.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        }
    }
    // Graceful: connections stop reading, answer what is in flight, then close.
    while connections.join_next().await.is_some() {}
    drop(listener);
}

/// A running server, from [`ModServer::serve`].
///
/// Life cycle (SPEC/1.0 gabp.md §7, transport.md §2.1):
///
/// - **On a socket** the server accepts bridges until it is told to stop: [`ServeHandle::shutdown`], or
///   [`ShutdownTrigger::trigger`] from any clone of [`ServeHandle::shutdown_trigger`] (a game's quit menu,
///   another task). It then stops accepting, lets every connection answer its requests in flight and closes
///   them; [`ServeHandle::status`] goes from [`ServeStatus::Running`] through [`ServeStatus::ShuttingDown`]
///   to [`ServeStatus::Stopped`].
/// - **On stdio** the server has one bridge, the process that started the mod, and stops by itself when that
///   connection ends: when the mod's stdin reaches end of input (the bridge closed it, or exited) after the
///   requests already received are answered. A stdio mod then exits: poll [`ServeHandle::is_running`] from
///   the game loop, or await [`ServeHandle::wait`].
///
/// Dropping the handle does not stop the server; it keeps serving until its runtime shuts down.
///
/// ```
/// use gabp_session::server::{ModServer, ServeStatus};
/// use gabp_transport::{Endpoint, Listener, Token};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = ModServer::builder().token(Token::generate()?).build()?;
/// let handle = server.serve(Listener::bind(&Endpoint::tcp_v4(0)).await?);
/// let quit = handle.shutdown_trigger(); // cloneable: hand it to whatever ends the game
///
/// assert!(handle.is_running());
/// quit.trigger();
/// handle.wait().await; // returns once every connection is closed
/// # Ok(())
/// # }
/// ```
pub struct ServeHandle {
    endpoint: Endpoint,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    server: ModServer,
}

/// Where a [`ServeHandle`] is in its life cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServeStatus {
    /// Accepting and serving bridges.
    Running,
    /// Told to stop: no longer accepting; connections answer their requests in flight, then close.
    ShuttingDown,
    /// Done: every connection is closed and the listener is gone (or serving failed).
    Stopped,
}

/// Starts the graceful shutdown of a served mod, from anywhere; from [`ServeHandle::shutdown_trigger`].
/// Cheap to clone; triggering again does nothing more.
#[derive(Clone, Debug)]
pub struct ShutdownTrigger {
    shutdown: CancellationToken,
}

impl ShutdownTrigger {
    /// Stops accepting and lets the connections finish their requests in flight, then close (as
    /// [`ServeHandle::shutdown`], without waiting). Returns at once.
    pub fn trigger(&self) {
        self.shutdown.cancel();
    }

    /// Whether a shutdown was asked for (by this trigger, another clone, or [`ServeHandle::shutdown`]).
    #[must_use]
    pub fn is_triggered(&self) -> bool {
        self.shutdown.is_cancelled()
    }
}

impl fmt::Debug for ServeHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServeHandle")
            .field("endpoint", &self.endpoint)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl ServeHandle {
    /// The endpoint bridges connect to (for TCP port 0, with the real port).
    #[must_use]
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The server being served (for its event publisher, main-thread queue, connection count).
    #[must_use]
    pub fn server(&self) -> &ModServer {
        &self.server
    }

    /// Where serving is now, without waiting.
    #[must_use]
    pub fn status(&self) -> ServeStatus {
        if self.task.is_finished() {
            ServeStatus::Stopped
        } else if self.shutdown.is_cancelled() {
            ServeStatus::ShuttingDown
        } else {
            ServeStatus::Running
        }
    }

    /// Whether the server has not stopped yet (it may be shutting down): [`ServeStatus::Stopped`] is the only
    /// status for which this is `false`.
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.status() != ServeStatus::Stopped
    }

    /// A cloneable trigger of the graceful shutdown, to keep where the game decides to stop.
    #[must_use]
    pub fn shutdown_trigger(&self) -> ShutdownTrigger {
        ShutdownTrigger {
            shutdown: self.shutdown.clone(),
        }
    }

    /// Shuts down gracefully: stops accepting, lets every connection answer its requests in flight, closes
    /// them, and returns once all are closed and the listener is gone (a Unix socket file is removed).
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        if let Err(e) = self.task.await {
            tracing::error!(error = %e, "the accept loop failed");
        }
    }

    /// Waits until serving ends by itself (a stdio listener whose connection closed) or through a
    /// [`ShutdownTrigger`], without shutting down.
    pub async fn wait(self) {
        if let Err(e) = self.task.await {
            tracing::error!(error = %e, "the accept loop failed");
        }
    }
}
