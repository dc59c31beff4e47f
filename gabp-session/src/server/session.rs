//! What every service in the mod's stack receives: [`ServerRequest`], the request plus its connection's
//! [`Session`].

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use std::task::Context;

use futures::task::AtomicWaker;
use gabp_types::methods::{ClientInfo, Method, Platform, ToolsCall};
use gabp_types::{ErrorCode, ErrorObject, MessageId, Request, Response};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::events::{SubscriberQueue, Subscriptions};

/// A request as it travels through the mod's tower stack: the decoded [`Request`] and the [`Session`] of the
/// connection it arrived on.
///
/// Services answer with a [`Response`] carrying the request's id; [`ServerRequest::reply`] and
/// [`ServerRequest::error`] build one.
///
/// ```
/// use gabp_session::server::{ServerRequest, Session};
/// use gabp_types::{ErrorCode, ErrorObject, MethodName, Request};
///
/// let request = Request::new(MethodName::new("game/pause")?, None);
/// let req = ServerRequest::new(request, Session::detached());
/// let answer = req.error(ErrorObject::new(ErrorCode::ACCESS_DENIED, "not now"));
/// assert_eq!(answer.id, req.request.id);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ServerRequest {
    /// The request.
    pub request: Request,
    /// The connection it arrived on.
    pub session: Session,
}

impl ServerRequest {
    /// Pairs a request with its session.
    #[must_use]
    pub fn new(request: Request, session: Session) -> Self {
        ServerRequest { request, session }
    }

    /// The method name.
    #[must_use]
    pub fn method(&self) -> &str {
        self.request.method.as_str()
    }

    /// The request id.
    #[must_use]
    pub fn id(&self) -> MessageId {
        self.request.id
    }

    /// For `tools/call`, the name of the tool being called.
    #[must_use]
    pub fn tool_name(&self) -> Option<Cow<'_, str>> {
        if self.method() != ToolsCall::NAME {
            return None;
        }
        self.request.params.as_ref()?.str_member("name")
    }

    /// A success response to this request.
    #[must_use]
    pub fn reply(&self, result: Value) -> Response {
        Response::success(self.request.id, result)
    }

    /// An error response to this request.
    #[must_use]
    pub fn error(&self, error: ErrorObject) -> Response {
        Response::error(self.request.id, error)
    }
}

/// Why a connection closed; returned by [`ModServer::serve_connection`](super::ModServer::serve_connection).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CloseReason {
    /// The bridge closed its side of the stream; in-flight requests were answered first.
    #[error("the bridge closed the stream")]
    Eof,
    /// The bridge sent `session/goodbye`; it was answered, then the connection closed.
    #[error("the bridge said goodbye")]
    Goodbye,
    /// `session/hello` carried a wrong token; it was answered with -32101, then the connection closed.
    #[error("authentication failed")]
    AuthenticationFailed,
    /// No successful `session/hello` arrived within the hello deadline.
    #[error("no session/hello in time")]
    HelloTimeout,
    /// The byte stream broke the framing rules: a fatal header error (answered with -32700, then closed), or
    /// the input ended inside a frame (closed without an answer, SPEC/1.0 transport.md §7).
    #[error("framing error: {0}")]
    Framing(String),
    /// Reading from or writing to the bridge failed (it is gone).
    #[error("i/o error: {0}")]
    Io(String),
    /// The server was shut down.
    #[error("the server shut down")]
    Shutdown,
    /// The mod was already serving its maximum number of connections.
    #[error("too many connections")]
    TooManyConnections,
    /// A service closed the session with [`Session::close`].
    #[error("closed by the mod")]
    Requested,
    /// The bridge, before any successful `session/hello`, sent requests without reading their answers until
    /// its queue of answers was full (SPEC/1.0 security.md §7); closed at once.
    #[error("the bridge sent requests before session/hello and did not read the answers")]
    NotReading,
    /// The mod was serving its maximum number of connections and this one, the oldest without a successful
    /// `session/hello`, made room for a new one (SPEC/1.0 security.md §7).
    #[error("made room for a new connection: no session/hello yet and the mod was full")]
    Displaced,
}

/// What the bridge said about itself in `session/hello` (never the token).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BridgeInfo {
    /// The bridge's software version.
    pub bridge_version: String,
    /// The bridge's operating system.
    pub platform: Platform,
    /// The launch id.
    pub launch_id: String,
    /// The bridge application, if it said.
    pub client_info: Option<ClientInfo>,
}

/// One bridge connection, as seen by the services of the mod's stack: whether it is authenticated, who the
/// bridge is, its event subscriptions, and a way to close it. Cheap to clone.
#[derive(Clone)]
pub struct Session {
    inner: Arc<SessionInner>,
}

struct SessionInner {
    id: u64,
    peer: String,
    established: AtomicBool,
    bridge: Mutex<Option<BridgeInfo>>,
    closing: AtomicBool,
    close_reason: Mutex<Option<CloseReason>>,
    waker: AtomicWaker,
    subscriptions: Subscriptions,
    /// Fires when the connection ends; every call's token is a child of it.
    ended: CancellationToken,
    /// Where this connection's progress events go (SPEC/1.0 extensions.md §progress).
    progress: Option<Arc<super::progress::ProgressSink>>,
    /// The calls a `tools/cancel` may name (SPEC/1.0 extensions.md §cancel).
    in_flight: Option<Arc<crate::engine::InFlight>>,
}

static NEXT_SESSION_ID: AtomicU64 = AtomicU64::new(1);

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.inner.id)
            .field("peer", &self.inner.peer)
            .field("established", &self.is_established())
            .finish_non_exhaustive()
    }
}

impl Session {
    pub(crate) fn new(peer: String, queue: Arc<SubscriberQueue>) -> Self {
        Session::with_extensions(peer, queue, None, None)
    }

    /// A session whose calls can report progress into `progress` and be cancelled through `in_flight`.
    pub(crate) fn with_extensions(
        peer: String,
        queue: Arc<SubscriberQueue>,
        progress: Option<Arc<super::progress::ProgressSink>>,
        in_flight: Option<Arc<crate::engine::InFlight>>,
    ) -> Self {
        Session {
            inner: Arc::new(SessionInner {
                id: NEXT_SESSION_ID.fetch_add(1, Ordering::Relaxed),
                peer,
                established: AtomicBool::new(false),
                bridge: Mutex::new(None),
                closing: AtomicBool::new(false),
                close_reason: Mutex::new(None),
                waker: AtomicWaker::new(),
                subscriptions: Subscriptions::new(queue),
                ended: CancellationToken::new(),
                progress,
                in_flight,
            }),
        }
    }

    /// A session attached to no connection, for testing services and layers on their own. Events it
    /// subscribes to are counted as dropped.
    #[must_use]
    pub fn detached() -> Self {
        let (queue, _rx) = SubscriberQueue::new(1, 1 << 20);
        Session::new("detached".to_owned(), queue)
    }

    /// A number identifying this connection among the mod's connections (for logs).
    #[must_use]
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Who is at the other end (see [`gabp_transport::Connection::peer`]).
    #[must_use]
    pub fn peer(&self) -> &str {
        &self.inner.peer
    }

    /// Whether `session/hello` succeeded on this connection.
    #[must_use]
    pub fn is_established(&self) -> bool {
        self.inner.established.load(Ordering::Acquire)
    }

    /// Marks the session established (called by the authentication layer once the token matched).
    pub(crate) fn establish(&self, bridge: BridgeInfo) {
        *self.inner.bridge.lock() = Some(bridge);
        self.inner.established.store(true, Ordering::Release);
        // The connection's loop ends its hello deadline now.
        self.inner.waker.wake();
    }

    /// What the bridge said about itself in `session/hello`.
    #[must_use]
    pub fn bridge(&self) -> Option<BridgeInfo> {
        self.inner.bridge.lock().clone()
    }

    /// Asks the connection to close: it stops reading, answers the requests in flight, then closes.
    pub fn close(&self) {
        self.close_with(CloseReason::Requested);
    }

    pub(crate) fn close_with(&self, reason: CloseReason) {
        {
            let mut slot = self.inner.close_reason.lock();
            if slot.is_none() {
                *slot = Some(reason);
            }
        }
        self.inner.closing.store(true, Ordering::Release);
        self.inner.waker.wake();
    }

    /// Whether the connection has been asked to close.
    #[must_use]
    pub fn is_closing(&self) -> bool {
        self.inner.closing.load(Ordering::Acquire)
    }

    /// The close request, if any; registers `cx` to be woken by a later [`Session::close`] (or by the session's
    /// establishment).
    pub(crate) fn poll_close_requested(&self, cx: &mut Context<'_>) -> Option<CloseReason> {
        self.inner.waker.register(cx.waker());
        if self.is_closing() {
            self.inner.close_reason.lock().clone()
        } else {
            None
        }
    }

    /// The channels this connection is subscribed to, in name order.
    #[must_use]
    pub fn subscriptions(&self) -> Vec<String> {
        self.inner.subscriptions.channels()
    }

    /// How many events this connection's queue accepted, and how many it dropped because it was full.
    #[must_use]
    pub fn event_counts(&self) -> (u64, u64) {
        let q = self.inner.subscriptions.queue();
        (q.delivered(), q.dropped())
    }

    /// The capacity of this connection's event queue.
    #[must_use]
    pub fn event_queue_capacity(&self) -> usize {
        self.inner.subscriptions.queue().capacity()
    }

    /// A token that fires when the connection has ended (the calls still running on it are cancelled).
    #[must_use]
    pub fn cancellation(&self) -> &CancellationToken {
        &self.inner.ended
    }

    /// Marks the connection ended: cancels every call still running on it.
    pub(crate) fn end(&self) {
        self.inner.ended.cancel();
    }

    pub(crate) fn progress_sink(&self) -> Option<&Arc<super::progress::ProgressSink>> {
        self.inner.progress.as_ref()
    }

    pub(crate) fn in_flight(&self) -> Option<&Arc<crate::engine::InFlight>> {
        self.inner.in_flight.as_ref()
    }

    pub(crate) fn subscription_state(&self) -> &Subscriptions {
        &self.inner.subscriptions
    }
}

/// `-32603` with a message.
pub(crate) fn internal_error(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(ErrorCode::INTERNAL_ERROR, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gabp_types::MethodName;

    #[test]
    fn close_is_sticky_and_first_reason_wins() {
        let s = Session::detached();
        assert!(!s.is_closing());
        s.close_with(CloseReason::Goodbye);
        s.close();
        assert!(s.is_closing());
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert_eq!(s.poll_close_requested(&mut cx), Some(CloseReason::Goodbye));
    }

    #[test]
    fn tool_name_only_for_tools_call() {
        let mut params = serde_json::Map::new();
        params.insert("name".into(), "a/b".into());
        let r = ServerRequest::new(
            Request::new(MethodName::new("tools/call").unwrap(), Some(params.clone())),
            Session::detached(),
        );
        assert_eq!(r.tool_name().as_deref(), Some("a/b"));
        let r = ServerRequest::new(
            Request::new(MethodName::new("x/y").unwrap(), Some(params)),
            Session::detached(),
        );
        assert_eq!(r.tool_name(), None);
        assert_ne!(Session::detached().id(), Session::detached().id());
    }
}
