//! One connection to the mod as the call path sees it ([`Link`]): its in-flight slots, what its welcome
//! allows, and the exchange of one call with the connection's engine; and the keepalive that watches it.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::Duration;

use gabp_types::methods::{Method, SessionPing, ToolsCall, ToolsCancel};
use gabp_types::{MessageId, MethodName, Params};
use tokio::sync::{Semaphore, TryAcquireError};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::engine::{CallResult, Delivery, FrameSender, Outgoing, TrySendError};

use super::reconnect::Keepalive;
use super::request::{BridgeRequest, Reading};
use super::response::failed;
use super::settings::Settings;
use super::state::DisconnectReason;
use crate::Error;

/// What the welcome of a connection says, once it has arrived.
pub(super) struct LinkInfo {
    /// `None`: the welcome lists no methods, so everything is allowed.
    advertised: Option<HashSet<String>>,
    /// Whether `tools/call` is allowed and `tools/cancel` advertised: asked on every call, so looked up once.
    tools_call: bool,
    tools_cancel: bool,
    pub(super) max_body: usize,
}

impl LinkInfo {
    pub(super) fn new(advertised: Option<HashSet<String>>, max_body: usize) -> Self {
        let lists = |method: &str| advertised.as_ref().map(|a| a.contains(method));
        LinkInfo {
            tools_call: lists(ToolsCall::NAME).unwrap_or(true),
            tools_cancel: lists(ToolsCancel::NAME).unwrap_or(false),
            advertised,
            max_body,
        }
    }

    fn allows(&self, method: &str) -> bool {
        if method == ToolsCall::NAME {
            return self.tools_call;
        }
        self.advertised.as_ref().is_none_or(|a| a.contains(method))
    }

    fn advertises(&self, method: &str) -> bool {
        if method == ToolsCancel::NAME {
            return self.tools_cancel;
        }
        self.advertised.as_ref().is_some_and(|a| a.contains(method))
    }
}

/// One connection to the mod.
pub(crate) struct Link {
    pub(super) generation: u64,
    /// Requests for the connection's engine, which owns the table of calls waiting for their answer.
    pub(super) outgoing: FrameSender<Outgoing>,
    /// How many calls wait for their answer; a caller that gave up no longer counts.
    pub(super) pending: AtomicUsize,
    pub(super) in_flight: Semaphore,
    pub(super) kill: CancellationToken,
    /// Closing gracefully: the writer sends what is queued and closes our side; the reader goes on until the
    /// mod closes its side too (or [`CLOSE_GRACE`] passes).
    pub(super) close_writes: CancellationToken,
    pub(super) reason: Mutex<Option<DisconnectReason>>,
    pub(super) base: Instant,
    pub(super) last_rx: AtomicU64,
    pub(super) info: std::sync::OnceLock<LinkInfo>,
    pub(super) codec_max_body: usize,
    pub(super) settings: Arc<Settings>,
}

impl Link {
    /// Ends the connection for `reason` (the first reason given wins).
    pub(super) fn shut(&self, reason: DisconnectReason) {
        self.note(reason);
        self.kill.cancel();
    }

    /// Records why the connection is ending, unless a reason is already known.
    pub(super) fn note(&self, reason: DisconnectReason) {
        let mut r = self.reason.lock();
        if r.is_none() {
            *r = Some(reason);
        }
    }

    /// The error of a call the connection can no longer answer: the framing fault when the mod broke the
    /// framing, else [`Error::Disconnected`].
    pub(super) fn lost(&self) -> Error {
        match &*self.reason.lock() {
            Some(DisconnectReason::Framing(fault)) => Error::Framing {
                fault: fault.clone(),
            },
            _ => Error::Disconnected,
        }
    }

    pub(super) fn reason(&self) -> DisconnectReason {
        self.reason
            .lock()
            .clone()
            .unwrap_or(DisconnectReason::Shutdown)
    }

    pub(super) fn touch(&self) {
        let nanos = u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.last_rx.store(nanos, Ordering::Relaxed);
    }

    pub(super) fn last_rx(&self) -> Instant {
        self.base + Duration::from_nanos(self.last_rx.load(Ordering::Relaxed))
    }

    pub(super) fn max_body(&self) -> usize {
        self.info.get().map_or(self.codec_max_body, |i| i.max_body)
    }

    pub(super) fn allows(&self, method: &str) -> bool {
        method.starts_with("session/") || self.info.get().is_none_or(|i| i.allows(method))
    }

    /// Refuses new calls; the engine has ended, so the calls still waiting have failed.
    pub(super) fn fail_all(&self) {
        self.in_flight.close();
    }

    /// Whether the mod's welcome lists `method` (an extension method, such as `tools/cancel`).
    pub(super) fn advertises(&self, method: &str) -> bool {
        self.info.get().is_some_and(|i| i.advertises(method))
    }

    /// Tells the engine that the caller of `id` gave up; with `cancel`, the mod is asked to stop the call
    /// (SPEC/1.0 extensions.md §cancel). Should the queue be full, the engine sweeps the abandoned call later.
    pub(super) fn forget(&self, id: MessageId, cancel: bool) {
        let cancel = cancel.then(|| cancel_body(id)).flatten();
        let _ = self.outgoing.try_send(Outgoing::Forget { id, cancel });
    }
}

/// A `tools/cancel` request for call `id`, serialized.
fn cancel_body(id: MessageId) -> Option<bytes::Bytes> {
    use gabp_types::methods::ToolsCancelParams;
    let method = MethodName::from_static(ToolsCancel::NAME).ok()?;
    let params = Params::from_serialize(&ToolsCancelParams { id }).ok()?;
    crate::engine::to_body(&gabp_types::Request::with_raw_params(method, Some(params))).ok()
}

/// Removes a call from the pending table when its future is dropped (timeout or cancellation), and asks the
/// mod to cancel a dropped `tools/call` when it offers `tools/cancel`. Counts the call as pending while it
/// lives.
pub(super) struct PendingGuard<'a> {
    pub(super) link: &'a Link,
    pub(super) id: MessageId,
    pub(super) armed: bool,
    cancel: bool,
}

impl<'a> PendingGuard<'a> {
    pub(super) fn new(link: &'a Link, id: MessageId, method: &str) -> Self {
        link.pending.fetch_add(1, Ordering::AcqRel);
        PendingGuard {
            link,
            id,
            armed: true,
            cancel: method == ToolsCall::NAME && link.advertises(ToolsCancel::NAME),
        }
    }
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.link.pending.fetch_sub(1, Ordering::AcqRel);
        if self.armed {
            self.link.forget(self.id, self.cancel);
        }
    }
}

/// Whether a call takes one of the connection's in-flight slots.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    /// Calls made by users and layers, and subscription changes.
    Take,
    /// Keepalive pings: a connection busy with long calls must still be able to prove it is alive.
    Bypass,
}

/// Sends `request` on `link`, past the call path (the handshake, subscription changes), and waits for its
/// outcome, within `timeout`.
pub(super) async fn call_link(
    link: &Link,
    request: BridgeRequest,
    timeout: Duration,
) -> Result<CallResult, Error> {
    let (method, params, _) = request.into_parts();
    // One request value for the whole call (no copies of the method or params kept beside it).
    let request = gabp_types::Request::with_raw_params(method, params);
    exchange(link, &request, Slot::Take, timeout, Reading::Whole).await
}

/// Sends `request` and waits for its outcome. The time limit is counted here while the call waits for a slot or
/// for room in the outgoing queue, and by the engine once the call is in its table (one timer for all calls).
pub(super) async fn exchange(
    link: &Link,
    request: &gabp_types::Request,
    slot: Slot,
    timeout: Duration,
    reading: Reading,
) -> Result<CallResult, Error> {
    // A limit too far to represent is as good as none (about 30 years, as tokio's own timeouts do).
    let now = Instant::now();
    let deadline = now
        .checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30));
    let timed_out = || Error::Timeout {
        method: request.method.as_str().to_owned(),
        after: timeout,
    };
    // The waits for a slot and for room in the outgoing queue are rare; they are boxed so that this future
    // stays small.
    let _permit = match slot {
        Slot::Take => Some(match link.in_flight.try_acquire() {
            Ok(permit) => permit,
            Err(TryAcquireError::NoPermits) => {
                waited(link.in_flight.acquire(), deadline, timed_out, link).await?
            }
            Err(TryAcquireError::Closed) => return Err(link.lost()),
        }),
        Slot::Bypass => None,
    };
    let body = crate::engine::to_body(request)
        .map_err(|e| Error::invalid_request(format!("cannot serialize the request: {e}")))?;
    let limit = link.max_body();
    if body.len() > limit {
        return Err(Error::TooLarge {
            len: body.len(),
            limit,
        });
    }
    let (reply, rx) = tokio::sync::oneshot::channel();
    let call = Outgoing::Call {
        id: request.id,
        body,
        reply,
        deadline,
    };
    match link.outgoing.try_send(call) {
        Ok(()) => {}
        Err(TrySendError::Full(call)) => {
            waited(link.outgoing.send(call), deadline, timed_out, link).await?
        }
        Err(TrySendError::Closed(_)) => return Err(link.lost()),
    }
    // From here on the engine has the call in its table (or will have, in queue order): dropping this future
    // tells it to forget the call.
    let mut guard = PendingGuard::new(link, request.id, request.method.as_str());
    let delivery = rx.await;
    guard.armed = false;
    match delivery {
        Ok(Delivery::Answered(Ok(result))) if reading == Reading::AsType => Ok(result),
        Ok(Delivery::Answered(answered)) => answered
            .and_then(CallResult::read)
            .map_err(|failure| failed(failure, request)),
        Ok(Delivery::TimedOut { written }) => {
            // A request the mod has: it is asked to stop the call, as when a caller gives up.
            guard.armed = written;
            Err(timed_out())
        }
        Err(_) => Err(link.lost()),
    }
}

/// A rare wait of a call (for a slot, for room in the queue), boxed so that the call's future stays small, within
/// the call's `deadline`; the connection closing meanwhile is [`Link::lost`].
fn waited<'a, T, E>(
    wait: impl std::future::Future<Output = Result<T, E>> + Send + 'a,
    deadline: Instant,
    timed_out: impl FnOnce() -> Error + Send + 'a,
    link: &'a Link,
) -> impl std::future::Future<Output = Result<T, Error>> + Send + 'a
where
    T: Send + 'a,
    E: 'a,
{
    // Boxed here, before the caller awaits: only the box is held in the call's future.
    let wait = Box::pin(tokio::time::timeout_at(deadline, wait));
    async move {
        wait.await
            .map_err(|_| timed_out())?
            .map_err(|_| link.lost())
    }
}

/// Pings after `interval` of silence; declares the mod dead after `timeout` of silence.
pub(super) async fn keep_alive(link: Arc<Link>, keepalive: Keepalive) {
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
                    if let Ok(method) = MethodName::from_static(SessionPing::NAME) {
                        let ping = gabp_types::Request::with_raw_params(method, None);
                        let _ =
                            exchange(&link, &ping, Slot::Bypass, timeout, Reading::AsType).await;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(methods: &[&str]) -> LinkInfo {
        LinkInfo::new(
            Some(methods.iter().map(|m| (*m).to_owned()).collect()),
            1024,
        )
    }

    #[test]
    fn the_methods_asked_on_every_call_follow_the_welcome_like_the_others() {
        let both = listing(&["tools/call", "tools/cancel", "state/get"]);
        let neither = listing(&["state/get"]);
        let unlisted = LinkInfo::new(None, 1024);
        for method in ["tools/call", "state/get"] {
            assert!(both.allows(method) && unlisted.allows(method), "{method}");
        }
        assert!(!neither.allows("tools/call"));
        assert!(neither.allows("state/get") && !neither.allows("state/set"));
        assert!(both.advertises("tools/cancel") && both.advertises("state/get"));
        assert!(!neither.advertises("tools/cancel") && !neither.advertises("tools/call"));
        // A welcome without a list allows every method and advertises none.
        assert!(!unlisted.advertises("tools/cancel") && !unlisted.advertises("state/get"));
    }
}
