//! [`BridgeService`]: the innermost service of the call path, which checks a request and sends it on the
//! current connection, and the handle that layers get.

use std::fmt;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use gabp_types::decode::DecodeMode;
use gabp_types::methods::WelcomeResult;
use serde_json::Value;
use tokio::sync::watch;
use tower::Service;
use tracing::Instrument;

use super::events::subscription::{subscribe, Subscription};
use super::link::{exchange, Link, Slot};
use super::request::{BridgeRequest, Reading};
use super::response::BridgeResponse;
use super::shared::Shared;
use super::state::ConnectionState;
use crate::Error;

/// The innermost service of a bridge's call path, and a cheap, clonable handle on the bridge.
///
/// As a tower [`Service`]`<`[`BridgeRequest`]`>` it sends the request on the current connection and resolves
/// to the mod's result; layers added with [`BridgeBuilder::layer`](crate::bridge::BridgeBuilder::layer) wrap
/// it. `poll_ready` is always ready: concurrency is bounded inside each call (the bridge's in-flight limit),
/// and the call's time limit covers that wait.
///
/// As a handle it gives layers what they need besides the call path: the welcome, the connection state
/// (reconnects included), and subscriptions. Requests made through the handle ([`BridgeService::request`],
/// [`BridgeService::subscribe`]) do not pass through the layers. A handle does not keep the connection open;
/// once every [`Bridge`](crate::bridge::Bridge) is dropped, calls fail with [`Error::Closed`].
///
/// Get one from [`BridgeBuilder::service`](crate::bridge::BridgeBuilder::service) (before connecting, to
/// build a layer) or [`Bridge::service`](crate::bridge::Bridge::service).
#[derive(Clone)]
pub struct BridgeService {
    pub(crate) shared: Arc<Shared>,
}

impl fmt::Debug for BridgeService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BridgeService")
            .field("state", &*self.shared.state.borrow())
            .finish_non_exhaustive()
    }
}

impl BridgeService {
    /// Sends `request` on the current connection and waits for its result (the call path without layers).
    ///
    /// # Errors
    ///
    /// See [`Error`].
    pub async fn send(&self, request: BridgeRequest) -> Result<BridgeResponse, Error> {
        self.dispatch(request).await
    }

    /// Sends a raw request, bypassing the layers. `params` is `null` for none, else a JSON object.
    ///
    /// # Errors
    ///
    /// See [`Error`].
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, Error> {
        let request = BridgeRequest::from_json(method, params)?;
        self.send(request).await.map(BridgeResponse::into_result)
    }

    /// The welcome of the current (or last) connection; `None` before the first handshake.
    pub fn welcome(&self) -> Option<Arc<WelcomeResult>> {
        self.shared.welcome.read().clone()
    }

    /// Whether the current welcome advertises `method` (always true for `session/*`, and for every method when
    /// the welcome lists no methods).
    pub fn is_advertised(&self, method: &str) -> bool {
        match self.shared.current.read().clone() {
            Some(link) => link.allows(method),
            None => {
                method.starts_with("session/")
                    || self.welcome().is_none_or(|w| {
                        w.capabilities.methods.is_none() || w.capabilities.has_method(method)
                    })
            }
        }
    }

    /// How many calls wait for their response on the current connection (a dropped or timed-out call is
    /// forgotten at once and no longer counts).
    pub fn pending_calls(&self) -> usize {
        self.shared
            .current
            .read()
            .clone()
            .map_or(0, |link| link.pending.load(Ordering::Acquire))
    }

    /// The connection state now.
    pub fn state(&self) -> ConnectionState {
        self.shared.state.borrow().clone()
    }

    /// A receiver of connection state changes (reconnects, loss, close).
    pub fn connection_state(&self) -> watch::Receiver<ConnectionState> {
        self.shared.state.subscribe()
    }

    /// Subscribes to `channels`, bypassing the layers; see [`Bridge::subscribe`](crate::bridge::Bridge::subscribe).
    ///
    /// Before the first handshake (a layer setting itself up) and while reconnecting, the subscription is
    /// registered locally and returned at once; the mod is asked during the next handshake, before the bridge
    /// reports itself connected, and channels it does not grant are dropped then.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRequest`] for no channels or an empty name; [`Error::Closed`] or
    /// [`Error::Disconnected`] when the bridge is gone; otherwise as any call.
    pub async fn subscribe<I, S>(&self, channels: I) -> Result<Subscription, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let channels = channels.into_iter().map(Into::into).collect();
        subscribe(&self.shared, channels, |request| self.dispatch(request)).await
    }

    /// The bare call path: the request goes out on the current connection. The checks run at once; the
    /// future owns what it needs (it is boxed by every layered call, so it is kept small).
    pub(crate) fn dispatch(
        &self,
        request: BridgeRequest,
    ) -> impl Future<Output = Result<BridgeResponse, Error>> + Send + 'static {
        let prepared = prepare(&self.shared, request);
        async move {
            let (link, request, timeout, reading) = prepared?;
            let span = tracing::debug_span!("gabp.call", method = %request.method);
            let result = exchange(&link, &request, Slot::Take, timeout, reading)
                .instrument(span)
                .await?;
            Ok(BridgeResponse::from_call(result, Some(request)))
        }
    }
}

impl Service<BridgeRequest> for BridgeService {
    type Response = BridgeResponse;
    type Error = Error;
    type Future = BoxFuture<'static, Result<BridgeResponse, Error>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: BridgeRequest) -> Self::Future {
        Box::pin(self.dispatch(request))
    }
}

/// Checks `request` against the current connection (a method the welcome advertises, SPEC/1.0 gabp.md §5, and
/// params that conform, §3.5): the connection, the request as it goes out, its time limit and how it is read.
fn prepare(
    shared: &Shared,
    request: BridgeRequest,
) -> Result<(Arc<Link>, gabp_types::Request, Duration, Reading), Error> {
    let link = shared.link()?;
    let (conforms, reading) = (request.conforms(), request.reading());
    let (method, params, timeout) = request.into_parts();
    if link.settings.check_advertised && !link.allows(method.as_str()) {
        return Err(Error::NotAdvertised {
            method: method.into_string(),
        });
    }
    // Strict writing: params of core methods built raw (by a caller or a layer) must conform.
    if !conforms {
        gabp_types::decode::check_params(method.as_str(), params.as_ref(), DecodeMode::Strict)
            .map_err(|e| Error::invalid_request(e.to_string()))?;
    }
    let timeout = timeout.unwrap_or(link.settings.request_timeout);
    // One request value for the whole call: every layered call boxes the call's future, and a small one is
    // cheaper to allocate and move.
    let request = gabp_types::Request::with_raw_params(method, params);
    Ok((link, request, timeout, reading))
}
