//! The connection driver of a bridge: one reader task, one writer task, the table of pending calls, the
//! handshake, keepalive and the supervisor that reconnects.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use gabp_transport::{Connection, Token};
use gabp_types::decode::{DecodeError, DecodeMode};
use gabp_types::methods::{
    ChannelsParams, ClientInfo, EventsSubscribe, EventsUnsubscribe, HelloParams, HelloToken,
    Method, Platform, SessionHello, SessionPing, SubscribeResult, WelcomeResult,
};
use gabp_types::{
    ErrorCode, ErrorObject, MessageId, MethodName, NonEmptyString, Outcome, Response, UniqueVec,
};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot, watch, Semaphore, TryAcquireError};
use tokio::task::JoinHandle;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::cancel::Cancelled;
use crate::engine::{self, Answer, Delivery, Ended, Engine, Outgoing, Queues, Role, Signal};

use super::builder::{Connector, Keepalive, ReconnectPolicy, Settings};
use super::events::Router;
use super::service::to_object;
use super::welcome::parse_welcome;
use super::{
    BridgeError, BridgeRequest, BridgeResponse, ConnectionState, DisconnectReason, ProtocolError,
    Subscription,
};

/// Locks a mutex, ignoring poisoning (no code here panics while holding a lock, and the data stays usable).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn read<T: Clone>(lock: &RwLock<T>) -> T {
    lock.read().unwrap_or_else(PoisonError::into_inner).clone()
}

fn write<T>(lock: &RwLock<T>, value: T) -> T {
    std::mem::replace(
        &mut *lock.write().unwrap_or_else(PoisonError::into_inner),
        value,
    )
}

/// What the welcome of a connection says, once it has arrived.
struct LinkInfo {
    /// `None`: the welcome lists no methods, so everything is allowed.
    advertised: Option<HashSet<String>>,
    max_body: usize,
}

/// One connection to the mod.
pub(crate) struct Link {
    generation: u64,
    /// Requests for the connection's engine, which owns the table of calls waiting for their answer.
    outgoing: mpsc::Sender<Outgoing>,
    /// How many calls wait for their answer; a caller that gave up no longer counts.
    pending: AtomicUsize,
    in_flight: Semaphore,
    kill: CancellationToken,
    /// Closing gracefully: the writer sends what is queued and closes our side; the reader goes on until the
    /// mod closes its side too (or [`CLOSE_GRACE`] passes).
    close_writes: CancellationToken,
    reason: Mutex<Option<DisconnectReason>>,
    base: Instant,
    last_rx: AtomicU64,
    info: std::sync::OnceLock<LinkInfo>,
    codec_max_body: usize,
    settings: Arc<Settings>,
}

impl Link {
    /// Ends the connection for `reason` (the first reason given wins).
    fn shut(&self, reason: DisconnectReason) {
        {
            let mut r = lock(&self.reason);
            if r.is_none() {
                *r = Some(reason);
            }
        }
        self.kill.cancel();
    }

    fn reason(&self) -> DisconnectReason {
        lock(&self.reason)
            .clone()
            .unwrap_or(DisconnectReason::Shutdown)
    }

    fn touch(&self) {
        let nanos = u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.last_rx.store(nanos, Ordering::Relaxed);
    }

    fn last_rx(&self) -> Instant {
        self.base + Duration::from_nanos(self.last_rx.load(Ordering::Relaxed))
    }

    fn max_body(&self) -> usize {
        self.info.get().map_or(self.codec_max_body, |i| i.max_body)
    }

    fn allows(&self, method: &str) -> bool {
        if method.starts_with("session/") {
            return true;
        }
        match self.info.get() {
            Some(LinkInfo {
                advertised: Some(methods),
                ..
            }) => methods.contains(method),
            _ => true,
        }
    }

    /// Refuses new calls; the engine has ended, so the calls still waiting have failed.
    fn fail_all(&self) {
        self.in_flight.close();
    }

    /// Tells the engine that the caller of `id` gave up. Should the queue be full, the engine sweeps the
    /// abandoned call later.
    fn forget(&self, id: MessageId) {
        let _ = self.outgoing.try_send(Outgoing::Forget(id));
    }
}

/// Removes a call from the pending table when its future is dropped (timeout or cancellation).
/// Counts the call as pending while it lives.
struct PendingGuard<'a> {
    link: &'a Link,
    id: MessageId,
    armed: bool,
}

impl<'a> PendingGuard<'a> {
    fn new(link: &'a Link, id: MessageId) -> Self {
        link.pending.fetch_add(1, Ordering::AcqRel);
        PendingGuard {
            link,
            id,
            armed: true,
        }
    }
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.link.pending.fetch_sub(1, Ordering::AcqRel);
        if self.armed {
            self.link.forget(self.id);
        }
    }
}

/// Whether a call takes one of the connection's in-flight slots.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// Calls made by users and layers, and subscription changes.
    Take,
    /// Keepalive pings: a connection busy with long calls must still be able to prove it is alive.
    Bypass,
}

/// Sends one request on `link` and waits for its outcome, within `timeout`.
async fn call_link(
    link: &Link,
    method: MethodName,
    params: Option<Map<String, Value>>,
    timeout: Duration,
) -> Result<Value, BridgeError> {
    call_link_slot(link, method, params, timeout, Slot::Take).await
}

async fn call_link_slot(
    link: &Link,
    method: MethodName,
    params: Option<Map<String, Value>>,
    timeout: Duration,
    slot: Slot,
) -> Result<Value, BridgeError> {
    // One request value for the whole call (no copies of the method or params kept beside it): every layered
    // call boxes this future, and a small one is cheaper to allocate and move.
    let request = gabp_types::Request::new(method, params);
    match tokio::time::timeout(timeout, exchange(link, &request, slot)).await {
        Ok(result) => result,
        Err(_) => Err(BridgeError::Timeout {
            method: request.method.into_string(),
            after: timeout,
        }),
    }
}

async fn exchange(
    link: &Link,
    request: &gabp_types::Request,
    slot: Slot,
) -> Result<Value, BridgeError> {
    // The waits for a slot and for room in the outgoing queue are rare; they are boxed so that this future
    // stays small.
    let _permit = match slot {
        Slot::Take => Some(match link.in_flight.try_acquire() {
            Ok(permit) => permit,
            Err(TryAcquireError::NoPermits) => Box::pin(link.in_flight.acquire())
                .await
                .map_err(|_| BridgeError::Disconnected)?,
            Err(TryAcquireError::Closed) => return Err(BridgeError::Disconnected),
        }),
        Slot::Bypass => None,
    };
    let body = serde_json::to_vec(request)
        .map_err(|e| BridgeError::invalid_request(format!("cannot serialize the request: {e}")))?;
    let limit = link.max_body();
    if body.len() > limit {
        return Err(BridgeError::TooLarge {
            len: body.len(),
            limit,
        });
    }
    let (reply, rx) = oneshot::channel();
    let call = Outgoing::Call {
        id: request.id,
        body: Bytes::from(body),
        reply,
    };
    match link.outgoing.try_send(call) {
        Ok(()) => {}
        Err(mpsc::error::TrySendError::Full(call)) => Box::pin(link.outgoing.send(call))
            .await
            .map_err(|_| BridgeError::Disconnected)?,
        Err(mpsc::error::TrySendError::Closed(_)) => return Err(BridgeError::Disconnected),
    }
    // From here on the engine has the call in its table (or will have, in queue order): dropping this future
    // tells it to forget the call.
    let mut guard = PendingGuard::new(link, request.id);
    let delivery = rx.await;
    guard.armed = false;
    match delivery {
        Ok(Delivery::Outcome(Outcome::Result(value))) => Ok(value),
        Ok(Delivery::Outcome(Outcome::Error(error))) => {
            let tool = request
                .params
                .as_ref()
                .and_then(|p| p.get("name"))
                .and_then(Value::as_str);
            Err(BridgeError::from_remote(
                error,
                request.method.as_str(),
                tool,
            ))
        }
        Ok(Delivery::Invalid(reason)) => Err(ProtocolError::InvalidResponse {
            method: request.method.as_str().to_owned(),
            reason,
        }
        .into()),
        Err(_) => Err(BridgeError::Disconnected),
    }
}

/// A call checked and ready to go out on `link`.
struct Prepared {
    link: Arc<Link>,
    method: MethodName,
    params: Option<Map<String, Value>>,
    timeout: Duration,
}

/// State shared by a bridge's handles, services, subscriptions and tasks.
pub(crate) struct Shared {
    token: Token,
    launch_id: String,
    settings: RwLock<Arc<Settings>>,
    current: RwLock<Option<Arc<Link>>>,
    welcome: RwLock<Option<Arc<WelcomeResult>>>,
    pub(crate) state: watch::Sender<ConnectionState>,
    router: Mutex<Router>,
    /// Serializes subscription changes (local registration plus the round trip) and the restore step of a
    /// handshake, so that the mod sees them in the order they happened here.
    subscriptions: tokio::sync::Mutex<()>,
    pub(crate) shutdown: CancellationToken,
    closing: AtomicBool,
    generation: AtomicU64,
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
        })
    }

    pub(crate) fn configure(&self, settings: Settings) {
        lock(&self.router).set_reorder(settings.reorder);
        write(&self.settings, Arc::new(settings));
    }

    pub(crate) fn settings(&self) -> Arc<Settings> {
        read(&self.settings)
    }

    /// Gives up before any connection (the first connection failed, or the builder was dropped): ends the
    /// subscriptions registered so far and publishes the terminal `state`.
    pub(crate) fn abandon(&self, state: ConnectionState) {
        finish(self, state);
    }

    pub(crate) fn welcome(&self) -> Option<Arc<WelcomeResult>> {
        read(&self.welcome)
    }

    pub(crate) fn is_advertised(&self, method: &str) -> bool {
        match read(&self.current) {
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
        read(&self.current).map_or(0, |link| link.pending.load(Ordering::Acquire))
    }

    pub(crate) fn begin_close(&self) {
        self.closing.store(true, Ordering::SeqCst);
    }

    fn no_link_error(&self) -> BridgeError {
        if self.closing.load(Ordering::SeqCst)
            || self.shutdown.is_cancelled()
            || matches!(*self.state.borrow(), ConnectionState::Closed)
        {
            BridgeError::Closed
        } else {
            BridgeError::Disconnected
        }
    }

    fn link(&self) -> Result<Arc<Link>, BridgeError> {
        if self.shutdown.is_cancelled() {
            return Err(BridgeError::Closed);
        }
        read(&self.current).ok_or_else(|| self.no_link_error())
    }

    /// The bare call path: the request goes out on the current connection. The checks run at once; the
    /// future owns what it needs (it is boxed by every layered call, so it is kept small).
    pub(crate) fn dispatch(
        &self,
        request: BridgeRequest,
    ) -> impl Future<Output = Result<BridgeResponse, BridgeError>> + Send + 'static {
        let prepared = self.prepare(request);
        async move {
            let Prepared {
                link,
                method,
                params,
                timeout,
            } = prepared?;
            let span = tracing::debug_span!("gabp.call", method = %method);
            call_link_slot(&link, method, params, timeout, Slot::Take)
                .instrument(span)
                .await
                .map(BridgeResponse::new)
        }
    }

    fn prepare(&self, request: BridgeRequest) -> Result<Prepared, BridgeError> {
        let link = self.link()?;
        let (method, params, timeout) = request.into_parts();
        if link.settings.check_advertised && !link.allows(method.as_str()) {
            return Err(BridgeError::NotAdvertised {
                method: method.into_string(),
            });
        }
        // Strict writing: params of core methods (possibly built raw, or rewritten by a layer) must conform.
        gabp_types::decode::check_params(method.as_str(), params.as_ref(), DecodeMode::Strict)
            .map_err(|e| BridgeError::invalid_request(e.to_string()))?;
        let timeout = timeout.unwrap_or(link.settings.request_timeout);
        Ok(Prepared {
            link,
            method,
            params,
            timeout,
        })
    }

    /// Registers a subscription and asks the mod through `send`.
    pub(crate) async fn subscribe<F, Fut>(
        self: &Arc<Self>,
        channels: Vec<String>,
        send: F,
    ) -> Result<Subscription, BridgeError>
    where
        F: FnOnce(BridgeRequest) -> Fut,
        Fut: Future<Output = Result<BridgeResponse, BridgeError>>,
    {
        let mut unique: Vec<String> = Vec::with_capacity(channels.len());
        for channel in channels {
            if channel.is_empty() {
                return Err(BridgeError::invalid_request("a channel name is empty"));
            }
            if !unique.contains(&channel) {
                unique.push(channel);
            }
        }
        if unique.is_empty() {
            return Err(BridgeError::invalid_request("no channels to subscribe to"));
        }
        let request = channels_request::<EventsSubscribe>(&unique)?;
        let _order = self.subscriptions.lock().await;
        if self.state.borrow().is_terminal() || self.shutdown.is_cancelled() {
            return Err(self.no_link_error_terminal());
        }
        let capacity = self.settings().subscription_queue;
        let (id, queue) = lock(&self.router).add(unique, capacity);
        // From here on, dropping `subscription` (this future cancelled) undoes the registration.
        let mut subscription = Subscription::new(id, queue, self.clone());
        if read(&self.current).is_none() {
            // Connecting or reconnecting: the next handshake asks the mod, before reporting itself connected.
            return Ok(subscription);
        }
        match send(request)
            .await
            .and_then(|r| subscribe_result(r.into_result()))
        {
            Ok(result) => {
                let granted: HashSet<&str> = result.subscribed.iter().map(String::as_str).collect();
                lock(&self.router).retain_granted(id, &granted);
                Ok(subscription)
            }
            Err(e) => {
                subscription.detach();
                lock(&self.router).remove(id);
                Err(e)
            }
        }
    }

    fn no_link_error_terminal(&self) -> BridgeError {
        match *self.state.borrow() {
            ConnectionState::Disconnected { .. } if !self.shutdown.is_cancelled() => {
                BridgeError::Disconnected
            }
            _ => BridgeError::Closed,
        }
    }

    /// Removes a subscription and unsubscribes the channels nobody listens to any more.
    pub(crate) async fn unsubscribe(&self, id: u64) -> Result<(), BridgeError> {
        let _order = self.subscriptions.lock().await;
        let emptied = lock(&self.router).remove(id);
        if emptied.is_empty() {
            return Ok(());
        }
        let Some(link) = read(&self.current) else {
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
                lock(&self.router).remove(id);
            }
        }
    }
}

fn channels_request<M: Method<Params = ChannelsParams>>(
    channels: &[String],
) -> Result<BridgeRequest, BridgeError> {
    let names = channels
        .iter()
        .map(|c| NonEmptyString::new(c.clone()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| BridgeError::invalid_request(e.to_string()))?;
    let channels =
        UniqueVec::new(names).map_err(|e| BridgeError::invalid_request(e.to_string()))?;
    BridgeRequest::typed::<M>(&ChannelsParams { channels })
}

fn subscribe_result(value: Value) -> Result<SubscribeResult, BridgeError> {
    serde_json::from_value(value).map_err(|e| {
        ProtocolError::InvalidResult {
            method: EventsSubscribe::NAME.to_owned(),
            reason: e.to_string(),
        }
        .into()
    })
}

/// A connection's running tasks.
pub(crate) struct Running {
    link: Arc<Link>,
    reader: JoinHandle<()>,
    keepalive: Option<JoinHandle<()>>,
}

/// Performs the first handshake over `connection`, then supervises the connection in a task.
pub(crate) async fn start(
    shared: &Arc<Shared>,
    connection: Connection,
    connector: Option<Arc<dyn Connector>>,
) -> Result<Arc<WelcomeResult>, BridgeError> {
    // If this future is dropped before the handshake completes, nothing will ever connect this bridge.
    let mut abandon = OnDrop(Some(|| shared.abandon(ConnectionState::Closed)));
    let result = establish(shared, connection, false).await;
    abandon.disarm();
    match result {
        Ok((running, welcome)) => {
            tokio::spawn(supervise(shared.clone(), running, connector));
            Ok(welcome)
        }
        Err(e) => {
            shared.abandon(ConnectionState::Disconnected {
                reason: DisconnectReason::Transport(e.to_string()),
            });
            Err(e)
        }
    }
}

/// Runs a closure when dropped, unless disarmed.
struct OnDrop<F: FnOnce()>(Option<F>);

impl<F: FnOnce()> OnDrop<F> {
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl<F: FnOnce()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// Starts the tasks of a connection, performs the handshake, restores subscriptions, and publishes the
/// connection as current.
async fn establish(
    shared: &Arc<Shared>,
    connection: Connection,
    reconnect: bool,
) -> Result<(Running, Arc<WelcomeResult>), BridgeError> {
    let settings = shared.settings();
    let generation = shared.generation.load(Ordering::SeqCst) + 1;
    let peer = connection.peer().to_owned();
    let codec_max_body = connection.codec().max_body_size();
    let (outgoing, queue) = mpsc::channel(settings.outgoing_queue);
    let base = Instant::now();
    let link = Arc::new(Link {
        generation,
        outgoing,
        pending: AtomicUsize::new(0),
        in_flight: Semaphore::new(settings.max_in_flight),
        kill: CancellationToken::new(),
        close_writes: CancellationToken::new(),
        reason: Mutex::new(None),
        base,
        last_rx: AtomicU64::new(0),
        info: std::sync::OnceLock::new(),
        codec_max_body,
        settings: settings.clone(),
    });
    let span = tracing::debug_span!("gabp.bridge", peer = %peer, generation);
    let role = BridgeRole::new(link.clone(), shared.clone());
    let queues = Queues {
        outgoing: Some(queue),
        events: None,
    };
    let limits = engine::Limits {
        max_message_size: codec_max_body,
        backlog: settings.outgoing_queue,
        calls: settings.max_in_flight,
        drain_timeout: CLOSE_GRACE,
    };
    let engine = Engine::new(connection, role, queues, limits);
    let reader = tokio::spawn(run_engine(engine, link.clone()).instrument(span.clone()));
    let running = Running {
        link: link.clone(),
        reader,
        keepalive: None,
    };
    // Dropped mid-handshake (the caller gave up): stop the connection's tasks.
    let mut stop = OnDrop(Some(|| link.shut(DisconnectReason::Shutdown)));
    let handshake = handshake(shared, &link, &settings, reconnect).instrument(span.clone());
    let welcome = tokio::select! {
        result = handshake => result,
        () = shared.shutdown.cancelled() => Err(BridgeError::Closed),
    };
    stop.disarm();
    match welcome {
        Ok(welcome) => {
            let mut running = running;
            if let Some(keepalive) = settings.keepalive {
                running.keepalive = Some(tokio::spawn(
                    keep_alive(link.clone(), keepalive).instrument(span),
                ));
            }
            Ok((running, welcome))
        }
        Err(e) => {
            link.shut(DisconnectReason::Shutdown);
            teardown(shared, running).await;
            Err(e)
        }
    }
}

async fn handshake(
    shared: &Arc<Shared>,
    link: &Arc<Link>,
    settings: &Settings,
    reconnect: bool,
) -> Result<Arc<WelcomeResult>, BridgeError> {
    let token = HelloToken::new(shared.token.expose_secret())
        .map_err(|e| BridgeError::invalid_request(format!("the token cannot be sent: {e}")))?;
    let bridge_version = NonEmptyString::new(env!("CARGO_PKG_VERSION"))
        .map_err(|e| BridgeError::invalid_request(e.to_string()))?;
    let hello = HelloParams {
        token,
        bridge_version,
        platform: Platform::current(),
        launch_id: shared.launch_id.clone(),
        client_info: Some(ClientInfo {
            name: Some(settings.client_name.clone()),
            version: Some(settings.client_version.clone()),
        }),
    };
    let params = to_object(&hello)?;
    let method = MethodName::new(SessionHello::NAME)
        .map_err(|e| BridgeError::invalid_request(e.to_string()))?;
    let value = call_link(link, method, Some(params), settings.handshake_timeout).await?;
    let welcome = Arc::new(parse_welcome(value)?);
    let max_body = welcome
        .capabilities
        .limits
        .and_then(|l| l.max_message_size)
        .and_then(|m| usize::try_from(m.get()).ok())
        .map_or(link.codec_max_body, |m| m.min(link.codec_max_body));
    if let Some(limit) = welcome
        .capabilities
        .limits
        .and_then(|l| l.max_concurrent_requests)
        .and_then(|m| usize::try_from(m.get()).ok())
    {
        if limit < settings.max_in_flight {
            link.in_flight
                .forget_permits(settings.max_in_flight - limit);
        }
    }
    let advertised = welcome
        .capabilities
        .methods
        .as_ref()
        .map(|m| m.iter().map(|n| n.as_str().to_owned()).collect());
    let _ = link.info.set(LinkInfo {
        advertised,
        max_body,
    });
    // Restore (or establish) subscriptions, then publish the connection, all under the subscription lock so no
    // local subscription can slip between the two. A subscribe holds the lock during its round trip; should a
    // layer hold that request back, this attempt fails after the handshake timeout instead of waiting forever.
    let _order = tokio::time::timeout(settings.handshake_timeout, shared.subscriptions.lock())
        .await
        .map_err(|_| BridgeError::Timeout {
            method: EventsSubscribe::NAME.to_owned(),
            after: settings.handshake_timeout,
        })?;
    if reconnect {
        lock(&shared.router).mark_reconnected();
    }
    let mut asked: HashSet<String> = HashSet::new();
    loop {
        let wanted: Vec<String> = lock(&shared.router)
            .channels()
            .into_iter()
            .filter(|c| !asked.contains(c))
            .collect();
        if wanted.is_empty() {
            break;
        }
        if !link.allows(EventsSubscribe::NAME) {
            tracing::warn!(channels = ?wanted, "the mod does not offer events/subscribe; subscriptions dropped");
            lock(&shared.router).retain_granted_all(&HashSet::new());
            break;
        }
        let (method, params, _) = channels_request::<EventsSubscribe>(&wanted)?.into_parts();
        let value = call_link(link, method, params, settings.request_timeout).await?;
        let result = subscribe_result(value)?;
        let granted: HashSet<&str> = result.subscribed.iter().map(String::as_str).collect();
        let refused: HashSet<&str> = wanted
            .iter()
            .map(String::as_str)
            .filter(|c| !granted.contains(c))
            .collect();
        if !refused.is_empty() {
            let mut router = lock(&shared.router);
            let all = router.channels();
            let keep: HashSet<&str> = all
                .iter()
                .map(String::as_str)
                .filter(|c| !refused.contains(c))
                .collect();
            router.retain_granted_all(&keep);
        }
        asked.extend(wanted);
    }
    shared.generation.store(link.generation, Ordering::SeqCst);
    write(&shared.welcome, Some(welcome.clone()));
    write(&shared.current, Some(link.clone()));
    shared.state.send_replace(ConnectionState::Connected {
        generation: link.generation,
    });
    tracing::debug!(agent = %welcome.agent_id, "connected");
    Ok(welcome)
}

/// Ends a connection: waits for the reader (so every response it already read is delivered), then fails the
/// pending calls and resets event ordering.
async fn teardown(shared: &Shared, running: Running) -> DisconnectReason {
    let Running {
        link,
        reader,
        keepalive,
    } = running;
    link.kill.cancel();
    let _ = reader.await;
    {
        let mut current = shared
            .current
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, &link)) {
            *current = None;
        }
    }
    link.fail_all();
    if let Some(keepalive) = keepalive {
        keepalive.abort();
    }
    lock(&shared.router).reset_order();
    link.reason()
}

/// Watches a connection; when it ends, reconnects per the policy or reports the end.
async fn supervise(
    shared: Arc<Shared>,
    mut running: Running,
    connector: Option<Arc<dyn Connector>>,
) {
    loop {
        tokio::select! {
            () = running.link.kill.cancelled() => {}
            () = shared.shutdown.cancelled() => {
                // Close our side and give the mod a moment to close its own (a mod on stdio sees the end of its
                // input and exits), reading whatever it still sends.
                running.link.close_writes.cancel();
                let _ = tokio::time::timeout(CLOSE_GRACE, running.link.kill.cancelled()).await;
                running.link.shut(DisconnectReason::Shutdown);
            }
        }
        let reason = teardown(&shared, running).await;
        tracing::debug!(%reason, "connection ended");
        if shared.closing.load(Ordering::SeqCst) || shared.shutdown.is_cancelled() {
            finish(&shared, ConnectionState::Closed);
            return;
        }
        let policy = shared.settings().reconnect.clone();
        let (Some(policy), Some(connector)) = (policy, connector.as_ref()) else {
            finish(&shared, ConnectionState::Disconnected { reason });
            return;
        };
        match reconnect(&shared, &policy, connector.as_ref(), reason).await {
            Ok(next) => running = next,
            Err(state) => {
                finish(&shared, state);
                return;
            }
        }
    }
}

fn finish(shared: &Shared, state: ConnectionState) {
    let closed = matches!(state, ConnectionState::Closed);
    lock(&shared.router).close_all(|| {
        if closed {
            BridgeError::Closed
        } else {
            BridgeError::Disconnected
        }
    });
    shared.state.send_replace(state);
}

async fn reconnect(
    shared: &Arc<Shared>,
    policy: &ReconnectPolicy,
    connector: &dyn Connector,
    lost: DisconnectReason,
) -> Result<Running, ConnectionState> {
    let timeout = shared.settings().handshake_timeout;
    let mut last_error = lost.to_string();
    let mut attempt: u32 = 0;
    loop {
        attempt = attempt.saturating_add(1);
        if policy.attempts_limit().is_some_and(|max| attempt > max) {
            return Err(ConnectionState::Disconnected {
                reason: DisconnectReason::GaveUp {
                    attempts: attempt - 1,
                    last_error,
                },
            });
        }
        shared.state.send_replace(ConnectionState::Reconnecting {
            attempt,
            reason: lost.clone(),
        });
        let delay = policy.delay(attempt);
        tracing::debug!(attempt, ?delay, "reconnecting");
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = shared.shutdown.cancelled() => return Err(ConnectionState::Closed),
        }
        let connected = tokio::select! {
            r = tokio::time::timeout(timeout, connector.connect()) => r,
            () = shared.shutdown.cancelled() => return Err(ConnectionState::Closed),
        };
        let connection = match connected {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                last_error = e.to_string();
                continue;
            }
            Err(_) => {
                last_error = format!("connecting took longer than {timeout:?}");
                continue;
            }
        };
        match establish(shared, connection, true).await {
            Ok((running, _)) => return Ok(running),
            Err(BridgeError::AuthenticationFailed { .. }) => {
                return Err(ConnectionState::Disconnected {
                    reason: DisconnectReason::AuthenticationFailed,
                })
            }
            Err(BridgeError::Closed) => return Err(ConnectionState::Closed),
            Err(e) => last_error = e.to_string(),
        }
    }
}

/// Runs a connection's engine; when it ends, the connection is shut and refuses new calls.
async fn run_engine(engine: Engine<BridgeRole>, link: Arc<Link>) {
    let reason = match engine.run().await {
        Ended::Eof => DisconnectReason::PeerClosed,
        Ended::Io(e) | Ended::Framing(e) => DisconnectReason::Transport(e),
        Ended::Signal(reason) => reason,
    };
    link.shut(reason);
    link.fail_all();
}

/// How long a graceful close waits for the mod to close its side after we closed ours.
const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// The bridge's side of a connection: its [`Role`] in the connection engine (SPEC/1.0 gabp.md §2). A bridge
/// routes events to its subscriptions, answers the mod's requests `-32601` (it serves no methods), never
/// answers bad frames, and ends when its link is shut.
struct BridgeRole {
    link: Arc<Link>,
    shared: Arc<Shared>,
    killed: Cancelled,
    closing: Cancelled,
    closing_sent: bool,
    /// When the oldest event held back for reordering is due.
    reorder: Option<Pin<Box<Sleep>>>,
}

impl BridgeRole {
    fn new(link: Arc<Link>, shared: Arc<Shared>) -> Self {
        BridgeRole {
            killed: Cancelled::new(link.kill.clone()),
            closing: Cancelled::new(link.close_writes.clone()),
            closing_sent: false,
            link,
            shared,
            reorder: None,
        }
    }

    fn set_reorder(&mut self, deadline: Option<Instant>) {
        match (deadline, &mut self.reorder) {
            (None, _) => self.reorder = None,
            (Some(at), Some(sleep)) => sleep.as_mut().reset(at),
            (Some(at), None) => self.reorder = Some(Box::pin(tokio::time::sleep_until(at))),
        }
    }
}

impl Role for BridgeRole {
    type Reason = DisconnectReason;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<()> {
        Poll::Ready(())
    }

    fn call(&mut self, request: gabp_types::Request) -> Answer {
        tracing::debug!(method = %request.method, "the mod sent a request; a bridge serves none");
        let error = ErrorObject::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("the bridge serves no methods ({})", request.method),
        )
        .with_data(serde_json::json!({ "method": request.method.as_str() }));
        Box::pin(std::future::ready(Ok(Response::error(request.id, error))))
    }

    fn on_event(&mut self, event: gabp_types::Event) {
        let deadline = {
            let mut router = lock(&self.shared.router);
            router.dispatch(event, Instant::now());
            router.next_deadline()
        };
        self.set_reorder(deadline);
    }

    fn on_invalid(&mut self, _body: Bytes, error: DecodeError) -> Option<Response> {
        tracing::debug!(%error, "dropping an invalid frame");
        None
    }

    fn answers_bad_frames(&self) -> bool {
        false
    }

    fn poll_signal(&mut self, cx: &mut Context<'_>) -> Poll<Signal<DisconnectReason>> {
        if Pin::new(&mut self.killed).poll(cx).is_ready() {
            return Poll::Ready(Signal::End(self.link.reason()));
        }
        if !self.closing_sent && Pin::new(&mut self.closing).poll(cx).is_ready() {
            self.closing_sent = true;
            return Poll::Ready(Signal::CloseWrites);
        }
        if let Some(reorder) = &mut self.reorder {
            if reorder.as_mut().poll(cx).is_ready() {
                let deadline = {
                    let mut router = lock(&self.shared.router);
                    router.release_expired(Instant::now());
                    router.next_deadline()
                };
                self.set_reorder(deadline);
                // A new deadline registers on the next poll.
                if self.reorder.is_some() {
                    cx.waker().wake_by_ref();
                }
            }
        }
        Poll::Pending
    }

    fn on_frame(&mut self) {
        self.link.touch();
    }
}

/// Pings after `interval` of silence; declares the mod dead after `timeout` of silence.
async fn keep_alive(link: Arc<Link>, keepalive: Keepalive) {
    let mut ping: Option<JoinHandle<()>> = None;
    loop {
        let now = Instant::now();
        let last = link.last_rx().max(link.base);
        let silent = now.saturating_duration_since(last);
        if silent >= keepalive.timeout() {
            tracing::debug!(?silent, "keepalive: the mod is silent; declaring it dead");
            link.shut(DisconnectReason::KeepaliveTimeout);
            return;
        }
        let next = if silent >= keepalive.interval() {
            if ping.as_ref().is_none_or(JoinHandle::is_finished) {
                let link = link.clone();
                let timeout = keepalive.timeout();
                ping = Some(tokio::spawn(async move {
                    if let Ok(method) = MethodName::new(SessionPing::NAME) {
                        let _ = call_link_slot(&link, method, None, timeout, Slot::Bypass).await;
                    }
                }));
            }
            (last + keepalive.timeout()).min(now + keepalive.interval())
        } else {
            last + keepalive.interval()
        };
        tokio::select! {
            () = tokio::time::sleep_until(next) => {}
            () = link.kill.cancelled() => break,
        }
    }
    if let Some(ping) = ping {
        ping.abort();
    }
}
