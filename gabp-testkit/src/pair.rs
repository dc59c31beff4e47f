//! [`pair`]: a [`MockMod`] and a handshaken [`Bridge`], connected in memory through a recording
//! [`FaultProxy`].

use std::fmt;

use gabp_session::bridge::{Bridge, BridgeBuilder};
use gabp_session::server::CloseReason;
use gabp_transport::Connection;
use tokio::task::JoinHandle;

use crate::fault::{Fault, Faults};
use crate::mock::MockMod;
use crate::proxy::FaultProxy;
use crate::record::Recorder;
use crate::TestkitError;

/// A connected in-memory pair: [`MockMod::demo`] and a [`Bridge`] that has completed the handshake, with a
/// [`FaultProxy`] between them that records every frame.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use serde_json::json;
///
/// let pair = gabp_testkit::pair().await?;
/// let echoed = pair.bridge.call_tool("demo/echo", json!({"value": "hi"})).await?;
/// assert_eq!(echoed, json!({"value": "hi"}));
/// assert_eq!(pair.mock.calls_to("demo/echo").len(), 1);
/// assert_eq!(pair.recorder.requests("session/hello").len(), 1);
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// As [`PairBuilder::connect`].
pub async fn pair() -> Result<Pair, TestkitError> {
    MockMod::demo()?.pair().connect().await
}

type Configure = Box<dyn FnOnce(BridgeBuilder) -> BridgeBuilder + Send>;

/// Configures a pair of a [`MockMod`] and a bridge; from [`MockMod::pair`].
pub struct PairBuilder {
    mock: MockMod,
    faults: Vec<Fault>,
    configure: Option<Configure>,
}

impl fmt::Debug for PairBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PairBuilder")
            .field("mock", &self.mock)
            .field("faults", &self.faults)
            .finish_non_exhaustive()
    }
}

impl PairBuilder {
    pub(crate) fn new(mock: MockMod) -> Self {
        PairBuilder {
            mock,
            faults: Vec::new(),
            configure: None,
        }
    }

    /// Arms `fault` before the connection opens (so it applies from the first frame, the handshake included).
    #[must_use]
    pub fn fault(mut self, fault: Fault) -> Self {
        self.faults.push(fault);
        self
    }

    /// Configures the bridge (time limits, keepalive, client info, ...) before it connects.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    ///
    /// let pair = gabp_testkit::MockMod::demo()?
    ///     .pair()
    ///     .bridge(|b| b.client_info("my-test", "0.1").request_timeout(Duration::from_secs(2)))
    ///     .connect()
    ///     .await?;
    /// let hello = &pair.recorder.requests("session/hello")[0];
    /// assert_eq!(hello.params.as_ref().unwrap().to_value()["clientInfo"]["name"], "my-test");
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn bridge(
        mut self,
        configure: impl FnOnce(BridgeBuilder) -> BridgeBuilder + Send + 'static,
    ) -> Self {
        self.configure = Some(Box::new(configure));
        self
    }

    /// Opens the in-memory connection through the proxy without a bridge: the bridge's end is a framed
    /// [`Connection`], for a bridge of your own, raw frames, or [`Bridge::over`] with a builder of your own
    /// (the faults armed with [`PairBuilder::fault`] apply; [`PairBuilder::bridge`] does not). Must be called
    /// within a Tokio runtime.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use futures::{SinkExt, StreamExt};
    ///
    /// let linked = gabp_testkit::MockMod::demo()?.pair().connection();
    /// let mut conn = linked.connection;
    /// // Raw bytes: a request before session/hello is refused with -32100.
    /// conn.send(r#"{"v":"gabp/1","id":"6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11","type":"request","method":"tools/list"}"#.into())
    ///     .await?;
    /// let answer = conn.next().await.ok_or("closed")??.into_body().ok_or("oversized")?;
    /// let answer: serde_json::Value = serde_json::from_slice(&answer)?;
    /// assert_eq!(answer["error"]["code"], -32100);
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn connection(self) -> LinkedConnection {
        let proxy = FaultProxy::new();
        for fault in self.faults {
            proxy.faults().inject(fault);
        }
        let (mod_side, served) = self.mock.serve_in_memory();
        let connection = Connection::new(proxy.link(mod_side)).with_peer("gabp-testkit mock");
        LinkedConnection {
            connection,
            mock: self.mock,
            recorder: proxy.recorder().clone(),
            faults: proxy.faults().clone(),
            proxy,
            served,
        }
    }

    /// Opens the connection and performs the handshake.
    ///
    /// # Errors
    ///
    /// [`TestkitError::Bridge`] when the handshake fails (a fault armed before connecting can cause that).
    pub async fn connect(mut self) -> Result<Pair, TestkitError> {
        let configure = self.configure.take();
        let linked = self.connection();
        let mut builder = Bridge::builder(linked.mock.token().clone());
        if let Some(configure) = configure {
            builder = configure(builder);
        }
        let bridge = builder
            .over(linked.connection)
            .await
            .map_err(TestkitError::Bridge)?;
        Ok(Pair {
            bridge,
            mock: linked.mock,
            recorder: linked.recorder,
            faults: linked.faults,
            proxy: linked.proxy,
            served: Some(linked.served),
        })
    }
}

/// A mock mod and a handshaken bridge; from [`pair`] or [`PairBuilder::connect`].
#[non_exhaustive]
pub struct Pair {
    /// The bridge, connected and handshaken.
    pub bridge: Bridge,
    /// The mod.
    pub mock: MockMod,
    /// Every frame between them.
    pub recorder: Recorder,
    /// The faults armed between them.
    pub faults: Faults,
    /// The proxy between them.
    pub proxy: FaultProxy,
    served: Option<JoinHandle<CloseReason>>,
}

impl fmt::Debug for Pair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pair")
            .field("bridge", &self.bridge)
            .field("mock", &self.mock)
            .field("recorder", &self.recorder)
            .finish_non_exhaustive()
    }
}

impl Pair {
    /// Waits until the mod has closed its side of the connection and says why (`None` when already asked, or
    /// when the serving task failed). Close the bridge first ([`Bridge::goodbye`], [`Bridge::close`]), or
    /// arm a fault that ends the connection, or this waits forever.
    pub async fn mod_closed(&mut self) -> Option<CloseReason> {
        self.served.take()?.await.ok()
    }
}

/// A mock mod and the bridge end of an in-memory connection to it, through a recording [`FaultProxy`]; from
/// [`PairBuilder::connection`].
#[non_exhaustive]
pub struct LinkedConnection {
    /// The bridge's end of the connection.
    pub connection: Connection,
    /// The mod.
    pub mock: MockMod,
    /// Every frame on the connection.
    pub recorder: Recorder,
    /// The faults armed on the connection.
    pub faults: Faults,
    /// The proxy.
    pub proxy: FaultProxy,
    /// The task serving the mod's end; it says why the mod closed the connection.
    pub served: JoinHandle<CloseReason>,
}

impl fmt::Debug for LinkedConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinkedConnection")
            .field("connection", &self.connection)
            .field("mock", &self.mock)
            .finish_non_exhaustive()
    }
}
