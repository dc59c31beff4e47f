//! [`pair_with`]: your own [`ModServer`] and a handshaken [`Bridge`], connected in memory through a recording
//! [`FaultProxy`], as [`pair`](crate::pair) does for a [`MockMod`](crate::MockMod).

use std::fmt;

use gabp_session::bridge::{Bridge, BridgeBuilder};
use gabp_session::server::{CloseReason, ModServer};
use gabp_transport::Connection;
use tokio::task::JoinHandle;

use crate::fault::{Fault, Faults};
use crate::proxy::FaultProxy;
use crate::record::Recorder;
use crate::TestkitError;

/// Your [`ModServer`] and a [`Bridge`] that has completed the handshake with it (with the server's own token),
/// over an in-memory connection through a [`FaultProxy`] that records every frame. The server is served
/// exactly as on a socket: every protocol layer, your layers, its limits.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use gabp_session::server::{CallError, ModServer, Tool};
/// use serde_json::{json, Value};
///
/// // The mod under test, built as the game builds it.
/// let server = ModServer::builder()
///     .app("My Game", "1.0.0")
///     .token(gabp_transport::Token::generate()?)
///     .tool(Tool::new("game/version", |_: Value| async { Ok::<_, CallError>("1.0.0") }))
///     .build()?;
///
/// let pair = gabp_testkit::pair_with(server).await?;
/// assert_eq!(pair.bridge.welcome().app.name.as_str(), "My Game");
/// assert_eq!(pair.bridge.call_tool("game/version", json!({})).await?, json!("1.0.0"));
/// assert_eq!(pair.recorder.tool_calls("game/version").len(), 1);
/// pair.recorder.assert_sent_strictly_valid();
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// As [`ServerPairBuilder::connect`].
pub async fn pair_with(server: ModServer) -> Result<ServerPair, TestkitError> {
    ServerPair::builder(server).connect().await
}

type Configure = Box<dyn FnOnce(BridgeBuilder) -> BridgeBuilder + Send>;

/// Configures a pair of your [`ModServer`] and a bridge; from [`ServerPair::builder`].
pub struct ServerPairBuilder {
    server: ModServer,
    faults: Vec<Fault>,
    configure: Option<Configure>,
}

impl fmt::Debug for ServerPairBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerPairBuilder")
            .field("server", &self.server)
            .field("faults", &self.faults)
            .finish_non_exhaustive()
    }
}

impl ServerPairBuilder {
    /// Arms `fault` before the connection opens (so it applies from the first frame, the handshake included).
    #[must_use]
    pub fn fault(mut self, fault: Fault) -> Self {
        self.faults.push(fault);
        self
    }

    /// Configures the bridge (time limits, keepalive, client info, layers of your own...) before it connects.
    #[must_use]
    pub fn bridge(
        mut self,
        configure: impl FnOnce(BridgeBuilder) -> BridgeBuilder + Send + 'static,
    ) -> Self {
        self.configure = Some(Box::new(configure));
        self
    }

    /// Opens the connection and performs the handshake with the server's token. Must be called within a Tokio
    /// runtime.
    ///
    /// # Errors
    ///
    /// [`TestkitError::Bridge`] when the handshake fails (a fault armed before connecting can cause that).
    pub async fn connect(self) -> Result<ServerPair, TestkitError> {
        let proxy = FaultProxy::new();
        for fault in self.faults {
            proxy.faults().inject(fault);
        }
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        let served = tokio::spawn(
            self.server
                .serve_connection(Connection::new(theirs).with_peer("in-memory")),
        );
        let connection = Connection::new(proxy.link(ours)).with_peer("gabp-testkit pair");
        let mut builder = Bridge::builder(self.server.token().clone());
        if let Some(configure) = self.configure {
            builder = configure(builder);
        }
        let bridge = builder
            .over(connection)
            .await
            .map_err(TestkitError::Bridge)?;
        Ok(ServerPair {
            bridge,
            server: self.server,
            recorder: proxy.recorder().clone(),
            faults: proxy.faults().clone(),
            proxy,
            served: Some(served),
        })
    }
}

/// Your mod server and a handshaken bridge; from [`pair_with`] or [`ServerPairBuilder::connect`].
#[non_exhaustive]
pub struct ServerPair {
    /// The bridge, connected and handshaken.
    pub bridge: Bridge,
    /// The server under test (for its event publisher, tools registry, main-thread queue...).
    pub server: ModServer,
    /// Every frame between them.
    pub recorder: Recorder,
    /// The faults armed between them.
    pub faults: Faults,
    /// The proxy between them.
    pub proxy: FaultProxy,
    served: Option<JoinHandle<CloseReason>>,
}

impl fmt::Debug for ServerPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerPair")
            .field("bridge", &self.bridge)
            .field("server", &self.server)
            .field("recorder", &self.recorder)
            .finish_non_exhaustive()
    }
}

impl ServerPair {
    /// A builder, to arm faults or configure the bridge before connecting.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use gabp_session::server::ModServer;
    ///
    /// let server = ModServer::builder().token(gabp_transport::Token::generate()?).build()?;
    /// let pair = gabp_testkit::ServerPair::builder(server)
    ///     .bridge(|b| b.client_info("my-test", "0.1").request_timeout(Duration::from_secs(2)))
    ///     .connect()
    ///     .await?;
    /// let hello = &pair.recorder.requests("session/hello")[0];
    /// assert_eq!(hello.params.as_ref().unwrap().to_value()["clientInfo"]["name"], "my-test");
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn builder(server: ModServer) -> ServerPairBuilder {
        ServerPairBuilder {
            server,
            faults: Vec::new(),
            configure: None,
        }
    }

    /// Waits until the server has closed its side of the connection and says why (`None` when already asked,
    /// or when the serving task failed). Close the bridge first ([`Bridge::goodbye`], [`Bridge::close`]), or
    /// arm a fault that ends the connection, or this waits forever.
    pub async fn mod_closed(&mut self) -> Option<CloseReason> {
        self.served.take()?.await.ok()
    }
}
