//! [`Bridge`]: the handle an automation holds on a connected mod, and how its calls go along the call path.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use gabp_types::methods::{GoodbyeParams, Method, SessionGoodbye, WelcomeResult};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::DropGuard;

use super::events::subscription::{subscribe, Subscription};
use super::path::CallPath;
use super::request::{BridgeRequest, Reading};
use super::response::BridgeResponse;
use super::service::BridgeService;
use super::settings::GOODBYE_WAIT;
use super::shared::Shared;
use super::state::ConnectionState;
use crate::Error;

/// A client connection to a mod: handshake done, calls and subscriptions ready.
///
/// Cheap to clone; clones share the connection. The connection closes when the last clone is dropped (or on
/// [`Bridge::close`] / [`Bridge::goodbye`]). See the [module documentation](crate::bridge) for an overview and an
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

    /// The state this bridge shares with its connection's tasks.
    pub(super) fn shared(&self) -> &Arc<Shared> {
        &self.inner.raw.shared
    }

    /// The welcome of the current connection (after a reconnect, the new one's).
    pub fn welcome(&self) -> Arc<WelcomeResult> {
        self.inner
            .raw
            .welcome()
            .unwrap_or_else(|| self.inner.first_welcome.clone())
    }

    /// Whether the welcome advertises `method` (see
    /// [`BridgeBuilder::check_advertised`](crate::bridge::BridgeBuilder::check_advertised)).
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
        self.shared().tools.noted(response)
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
        subscribe(self.shared(), channels, |request| self.send(request)).await
    }

    /// Says goodbye (`session/goodbye`) and closes the bridge: no reconnect follows, and pending calls fail
    /// with [`Error::Disconnected`]. A mod that closes the connection without answering counts as a
    /// goodbye. The answer is awaited for at most [`GOODBYE_WAIT`] (or the call time limit, if shorter).
    ///
    /// # Errors
    ///
    /// An error the mod answered with, or [`Error::Timeout`] after the wait (the bridge is closed anyway).
    pub async fn goodbye(&self, reason: Option<&str>) -> Result<(), Error> {
        let shared = self.shared();
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
        let shared = self.shared();
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

    /// Sends `request` (one of the bridge's own typed calls of `method`) and reads its result as `T`: on the
    /// path without layers, straight from the text the mod wrote.
    pub(super) fn send_as<T: DeserializeOwned>(
        &self,
        mut request: BridgeRequest,
        method: &'static str,
    ) -> impl Future<Output = Result<T, Error>> + Send + '_ {
        request.set_reading(Reading::AsType);
        // A combinator, not an async block, so that the call's future is held once.
        self.send_on_path(request).map(move |sent| {
            let read = sent.and_then(|response| response.read_as(method));
            self.shared().tools.noted(read)
        })
    }

    /// Sends `request` on the call path, under this handle's time limit unless it has its own. The path is
    /// taken at once: the callers are the bridge's own async methods, which stay lazy.
    fn send_on_path(
        &self,
        mut request: BridgeRequest,
    ) -> impl Future<Output = Result<BridgeResponse, Error>> + Send + 'static {
        if request.timeout().is_none() {
            request.set_timeout(self.timeout);
        }
        self.inner.path.send(&self.inner.raw, request)
    }
}
