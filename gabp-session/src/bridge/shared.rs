//! [`Shared`]: the state a bridge's handles, services, subscriptions and tasks share.

use std::collections::HashSet;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use std::time::Duration;

use gabp_transport::Token;
use gabp_types::decode::DecodeMode;
use gabp_types::methods::{
    ChannelsParams, EventsSubscribe, EventsUnsubscribe, Method, SubscribeResult, WelcomeResult,
};
use gabp_types::{MessageId, MethodName, NonEmptyString, Params, UniqueVec};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::events::Router;
use super::link::{call_link, exchange, Link, Reading, Slot};
use super::response::typed_result;
use super::session::finish;
use super::settings::Settings;
use super::tools::ToolCache;
use super::{BridgeRequest, BridgeResponse, ConnectionState, Subscription};
use crate::Error;

/// A call checked and ready to go out on `link`.
pub(super) struct Prepared {
    pub(super) link: Arc<Link>,
    pub(super) method: MethodName,
    pub(super) params: Option<Params>,
    pub(super) timeout: Duration,
    pub(super) reading: Reading,
}

/// State shared by a bridge's handles, services, subscriptions and tasks.
pub(crate) struct Shared {
    pub(super) token: Token,
    pub(super) launch_id: String,
    pub(super) settings: RwLock<Arc<Settings>>,
    pub(super) current: RwLock<Option<Arc<Link>>>,
    pub(super) welcome: RwLock<Option<Arc<WelcomeResult>>>,
    pub(crate) state: watch::Sender<ConnectionState>,
    pub(super) router: Mutex<Router>,
    /// Serializes subscription changes (local registration plus the round trip) and the restore step of a
    /// handshake, so that the mod sees them in the order they happened here.
    pub(super) subscriptions: tokio::sync::Mutex<()>,
    pub(crate) shutdown: CancellationToken,
    pub(super) closing: AtomicBool,
    pub(super) generation: AtomicU64,
    /// The tool list of [`Bridge::tools`](super::Bridge::tools).
    pub(super) tools: ToolCache,
    /// Where the progress events of calls in flight go, by token (SPEC/1.0 extensions.md §progress).
    pub(super) progress: super::progress::ProgressRoutes,
}

impl Shared {
    pub(crate) fn new(token: Token, settings: Settings) -> Arc<Shared> {
        let (state, _) = watch::channel(ConnectionState::Connecting);
        Arc::new(Shared {
            token,
            launch_id: MessageId::new_v4().to_string(),
            router: Mutex::new(Router::new(settings.reorder)),
            settings: RwLock::new(Arc::new(settings)),
            current: RwLock::new(None),
            welcome: RwLock::new(None),
            state,
            subscriptions: tokio::sync::Mutex::new(()),
            shutdown: CancellationToken::new(),
            closing: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            progress: super::progress::ProgressRoutes::default(),
            tools: ToolCache::default(),
        })
    }

    pub(crate) fn configure(&self, settings: Settings) {
        self.router.lock().set_reorder(settings.reorder);
        *self.settings.write() = Arc::new(settings);
    }

    pub(crate) fn settings(&self) -> Arc<Settings> {
        self.settings.read().clone()
    }

    /// Gives up before any connection (the first connection failed, or the builder was dropped): ends the
    /// subscriptions registered so far and publishes the terminal `state`.
    pub(crate) fn abandon(&self, state: ConnectionState) {
        finish(self, state);
    }

    pub(crate) fn welcome(&self) -> Option<Arc<WelcomeResult>> {
        self.welcome.read().clone()
    }

    pub(crate) fn is_advertised(&self, method: &str) -> bool {
        match self.current.read().clone() {
            Some(link) => link.allows(method),
            None => {
                method.starts_with("session/")
                    || self.welcome().is_none_or(|w| {
                        w.capabilities.methods.is_none() || w.capabilities.has_method(method)
                    })
            }
        }
    }

    /// How many calls on the current connection wait for their response.
    pub(crate) fn pending_calls(&self) -> usize {
        self.current
            .read()
            .clone()
            .map_or(0, |link| link.pending.load(Ordering::Acquire))
    }

    pub(crate) fn begin_close(&self) {
        self.closing.store(true, Ordering::SeqCst);
    }

    pub(super) fn no_link_error(&self) -> Error {
        if self.closing.load(Ordering::SeqCst)
            || self.shutdown.is_cancelled()
            || matches!(*self.state.borrow(), ConnectionState::Closed)
        {
            Error::Closed
        } else {
            Error::Disconnected
        }
    }

    pub(super) fn link(&self) -> Result<Arc<Link>, Error> {
        if self.shutdown.is_cancelled() {
            return Err(Error::Closed);
        }
        self.current
            .read()
            .clone()
            .ok_or_else(|| self.no_link_error())
    }

    /// The bare call path: the request goes out on the current connection. The checks run at once; the
    /// future owns what it needs (it is boxed by every layered call, so it is kept small).
    pub(crate) fn dispatch(
        &self,
        request: BridgeRequest,
    ) -> impl Future<Output = Result<BridgeResponse, Error>> + Send + 'static {
        let prepared = self.prepare(request);
        async move {
            let Prepared {
                link,
                method,
                params,
                timeout,
                reading,
            } = prepared?;
            let span = tracing::debug_span!("gabp.call", method = %method);
            // One request value for the whole call: every layered call boxes this future, and a small one is
            // cheaper to allocate and move.
            let request = gabp_types::Request::with_raw_params(method, params);
            let result = exchange(&link, &request, Slot::Take, timeout, reading)
                .instrument(span)
                .await?;
            Ok(BridgeResponse::from_call(result, Some(request)))
        }
    }

    pub(super) fn prepare(&self, request: BridgeRequest) -> Result<Prepared, Error> {
        let link = self.link()?;
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
        Ok(Prepared {
            link,
            method,
            params,
            timeout,
            reading,
        })
    }

    /// Registers a subscription and asks the mod through `send`.
    pub(crate) async fn subscribe<F, Fut>(
        self: &Arc<Self>,
        channels: Vec<String>,
        send: F,
    ) -> Result<Subscription, Error>
    where
        F: FnOnce(BridgeRequest) -> Fut,
        Fut: Future<Output = Result<BridgeResponse, Error>>,
    {
        let mut unique: Vec<String> = Vec::with_capacity(channels.len());
        for channel in channels {
            if channel.is_empty() {
                return Err(Error::invalid_request("a channel name is empty"));
            }
            if !unique.contains(&channel) {
                unique.push(channel);
            }
        }
        if unique.is_empty() {
            return Err(Error::invalid_request("no channels to subscribe to"));
        }
        let request = channels_request::<EventsSubscribe>(&unique)?;
        let _order = self.subscriptions.lock().await;
        if self.state.borrow().is_terminal() || self.shutdown.is_cancelled() {
            return Err(self.no_link_error_terminal());
        }
        let settings = self.settings();
        let (capacity, max_bytes) = (
            settings.subscription_queue,
            settings.subscription_queue_bytes,
        );
        let (id, queue) = self.router.lock().add(unique, capacity, max_bytes);
        // From here on, dropping `subscription` (this future cancelled) undoes the registration.
        let mut subscription = Subscription::new(id, queue, self.clone());
        if self.current.read().clone().is_none() {
            // Connecting or reconnecting: the next handshake asks the mod, before reporting itself connected.
            return Ok(subscription);
        }
        match send(request)
            .await
            .and_then(|r| typed_result(EventsSubscribe::NAME, r.result_as::<SubscribeResult>()))
        {
            Ok(result) => {
                let granted: HashSet<&str> = result.subscribed.iter().map(String::as_str).collect();
                self.router.lock().retain_granted(id, &granted);
                Ok(subscription)
            }
            Err(e) => {
                subscription.detach();
                self.router.lock().remove(id);
                Err(e)
            }
        }
    }

    pub(super) fn no_link_error_terminal(&self) -> Error {
        match *self.state.borrow() {
            ConnectionState::Disconnected { .. } if !self.shutdown.is_cancelled() => {
                Error::Disconnected
            }
            _ => Error::Closed,
        }
    }

    /// Removes a subscription and unsubscribes the channels nobody listens to any more.
    pub(crate) async fn unsubscribe(&self, id: u64) -> Result<(), Error> {
        let _order = self.subscriptions.lock().await;
        let emptied = self.router.lock().remove(id);
        if emptied.is_empty() {
            return Ok(());
        }
        let Some(link) = self.current.read().clone() else {
            return Ok(());
        };
        if !link.allows(EventsUnsubscribe::NAME) {
            // Nothing to undo at a mod that cannot unsubscribe; its events for these channels are dropped here.
            return Ok(());
        }
        let request = channels_request::<EventsUnsubscribe>(&emptied)?;
        let (method, params, _) = request.into_parts();
        call_link(&link, method, params, link.settings.request_timeout)
            .await
            .map(drop)
    }

    /// [`Shared::unsubscribe`] from a `Drop`: in a task when there is a runtime; else only locally.
    pub(crate) fn unsubscribe_in_background(self: Arc<Self>, id: u64) {
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if let Err(e) = self.unsubscribe(id).await {
                        tracing::debug!(error = %e, "unsubscribing a dropped subscription failed");
                    }
                });
            }
            Err(_) => {
                self.router.lock().remove(id);
            }
        }
    }
}

pub(super) fn channels_request<M: Method<Params = ChannelsParams>>(
    channels: &[String],
) -> Result<BridgeRequest, Error> {
    let names = channels
        .iter()
        .map(|c| NonEmptyString::new(c.clone()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::invalid_request(e.to_string()))?;
    let channels = UniqueVec::new(names).map_err(|e| Error::invalid_request(e.to_string()))?;
    BridgeRequest::typed::<M>(&ChannelsParams { channels })
}
