//! What a handler can know about the call it serves: [`CallContext`], the extractors built from it
//! ([`FromContext`]), and the mod's shared [`State`].

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use gabp_types::{ErrorCode, MessageId, Request};
use tokio_util::sync::CancellationToken;

use super::error::CallError;
use super::events::EventPublisher;
use super::progress::Progress;
use super::session::{ServerRequest, Session};

/// Values shared by every handler of a mod, one per type, registered with
/// [`ModServerBuilder::with_state`](super::ModServerBuilder::with_state).
#[derive(Default, Clone)]
pub(crate) struct StateMap {
    values: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl StateMap {
    pub(crate) fn insert<T: Clone + Send + Sync + 'static>(&mut self, value: T) {
        self.values.insert(TypeId::of::<T>(), Arc::new(value));
    }

    pub(crate) fn contains(&self, state: StateType) -> bool {
        self.values.contains_key(&state.id)
    }

    fn get<T: Clone + Send + Sync + 'static>(&self) -> Option<T> {
        self.values
            .get(&TypeId::of::<T>())
            .and_then(|v| v.downcast_ref::<T>())
            .cloned()
    }
}

/// The call a handler serves: which session (peer, bridge, subscriptions), the request id, a cancellation
/// token, the mod's event publisher and its shared state. Cheap to clone.
///
/// The token fires when the call is cancelled: it ran past its time limit, its connection ended (the bridge
/// went away, or the mod shut down and gave up waiting), or its future was dropped for any other reason
/// (SPEC/1.0 gabp.md §7). A long handler checks it or selects on [`CallContext::cancelled`].
///
/// ```
/// use gabp_session::server::{CallContext, CallError, Tool};
///
/// let tool = Tool::new("world/scan", |ctx: CallContext, radius: u32| async move {
///     for _ in 0..radius {
///         if ctx.is_cancelled() {
///             return Err(CallError::new("cancelled"));
///         }
///         tokio::task::yield_now().await;
///     }
///     Ok::<_, CallError>(format!("scanned for {}", ctx.session().peer()))
/// });
/// assert_eq!(tool.name(), "world/scan");
/// ```
#[derive(Clone)]
pub struct CallContext {
    session: Session,
    request_id: MessageId,
    /// The call's own token; `None`: the session's (a handler that takes no context needs none of its own).
    cancellation: Option<CancellationToken>,
    events: EventPublisher,
    state: Arc<StateMap>,
    progress: Option<Arc<Progress>>,
    content_limit: usize,
    /// The request of a custom method, for handlers that read it whole.
    request: Option<Arc<Request>>,
}

impl fmt::Debug for CallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallContext")
            .field("session", &self.session)
            .field("request_id", &self.request_id)
            .field("cancelled", &self.cancellation().is_cancelled())
            .finish_non_exhaustive()
    }
}

impl CallContext {
    pub(crate) fn new(
        session: Session,
        request_id: MessageId,
        cancellation: Option<CancellationToken>,
        events: EventPublisher,
        state: Arc<StateMap>,
        content_limit: usize,
    ) -> Self {
        CallContext {
            session,
            request_id,
            cancellation,
            events,
            state,
            progress: None,
            content_limit,
            request: None,
        }
    }

    pub(crate) fn with_request(mut self, request: Request) -> Self {
        self.request = Some(Arc::new(request));
        self
    }

    /// How many bytes of content items (pictures, sound) the call's result may carry, decoded: more is
    /// answered `-32603` (SPEC/1.0 extensions.md §content). A tool that renders can choose its size by it.
    #[must_use]
    pub fn max_content_bytes(&self) -> usize {
        self.content_limit
    }

    pub(crate) fn with_progress(mut self, progress: Option<Arc<Progress>>) -> Self {
        self.progress = progress;
        self
    }

    /// Reports the call's progress: `done` of `total` (when known), with an optional message for people.
    /// Sent to the bridge as `tools/progress` events when its request asked for them (SPEC/1.0 extensions.md
    /// §progress), at most one per 50 ms; otherwise nothing happens.
    pub fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(progress) = &self.progress {
            progress.report(done, total, message);
        }
    }

    /// Whether the bridge asked for this call's progress.
    #[must_use]
    pub fn reports_progress(&self) -> bool {
        self.progress.is_some()
    }

    /// The session (connection) the call arrived on: its peer, the bridge's hello, its subscriptions.
    #[must_use]
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The id of the request being served.
    #[must_use]
    pub fn request_id(&self) -> MessageId {
        self.request_id
    }

    /// The call's cancellation token (see the type's documentation for when it fires).
    #[must_use]
    pub fn cancellation(&self) -> &CancellationToken {
        self.cancellation
            .as_ref()
            .unwrap_or_else(|| self.session.cancellation())
    }

    /// Whether the call has been cancelled.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.cancellation().is_cancelled()
    }

    /// Completes when the call is cancelled.
    pub async fn cancelled(&self) {
        self.cancellation().cancelled().await;
    }

    /// The mod's event publisher.
    #[must_use]
    pub fn events(&self) -> &EventPublisher {
        &self.events
    }

    /// The shared value of type `T` registered with
    /// [`ModServerBuilder::with_state`](super::ModServerBuilder::with_state), if any.
    #[must_use]
    pub fn state<T: Clone + Send + Sync + 'static>(&self) -> Option<T> {
        self.state.get::<T>()
    }
}

/// A shared state a handler takes: its type, and the type's name for the error that says it is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateType {
    id: TypeId,
    name: &'static str,
}

impl StateType {
    /// The state of type `T`.
    #[must_use]
    pub fn of<T: 'static>() -> Self {
        StateType {
            id: TypeId::of::<T>(),
            name: std::any::type_name::<T>(),
        }
    }

    /// The type's name (`std::any::type_name`).
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// What a handler can take as an argument before its input: built from the [`CallContext`], the way axum's
/// extractors are built from a request. Implemented for [`CallContext`], [`Session`], [`CancellationToken`],
/// [`EventPublisher`], [`State<T>`] and, for custom methods, the whole [`ServerRequest`].
pub trait FromContext: Sized {
    /// Builds the value; an error answers the call with it.
    ///
    /// # Errors
    ///
    /// The extractor's error, sent as the call's answer.
    fn from_context(context: &CallContext) -> Result<Self, CallError>;

    /// The shared state it takes, if any: checked when the server is built.
    #[must_use]
    fn state() -> Option<StateType> {
        None
    }
}

impl FromContext for CallContext {
    fn from_context(context: &CallContext) -> Result<Self, CallError> {
        Ok(context.clone())
    }
}

impl FromContext for Session {
    fn from_context(context: &CallContext) -> Result<Self, CallError> {
        Ok(context.session.clone())
    }
}

impl FromContext for CancellationToken {
    fn from_context(context: &CallContext) -> Result<Self, CallError> {
        Ok(context.cancellation().clone())
    }
}

impl FromContext for EventPublisher {
    fn from_context(context: &CallContext) -> Result<Self, CallError> {
        Ok(context.events.clone())
    }
}

/// The request of a custom method, whole (its params unread); other calls have none to give.
impl FromContext for ServerRequest {
    fn from_context(context: &CallContext) -> Result<Self, CallError> {
        let request = context.request.as_deref().cloned().ok_or_else(|| {
            CallError::new("only a custom method's handler can take the whole request")
                .with_code(ErrorCode::INTERNAL_ERROR)
        })?;
        Ok(ServerRequest::new(request, context.session.clone()))
    }
}

/// The mod's shared value of type `T`, registered once with
/// [`ModServerBuilder::with_state`](super::ModServerBuilder::with_state) and handed to every handler that
/// asks for it (a clone: share mutable data through an `Arc`). A server whose handler takes a state nobody
/// registered is not built ([`Error::MissingState`](crate::Error::MissingState)).
///
/// ```
/// use std::sync::{Arc, atomic::{AtomicU64, Ordering}};
/// use gabp_session::server::{CallError, ModServer, State, Tool};
///
/// #[derive(Clone, Default)]
/// struct Score(Arc<AtomicU64>);
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = ModServer::builder()
///     .token(gabp_transport::Token::generate()?)
///     .with_state(Score::default())
///     .tool(Tool::new("score/add", |State(score): State<Score>, points: u64| async move {
///         Ok::<_, CallError>(score.0.fetch_add(points, Ordering::Relaxed) + points)
///     }))
///     .build()?;
/// # drop(server);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct State<T>(pub T);

impl<T: Clone + Send + Sync + 'static> FromContext for State<T> {
    fn from_context(context: &CallContext) -> Result<Self, CallError> {
        context.state::<T>().map(State).ok_or_else(|| {
            CallError::new(format!(
                "no shared state of type {} was registered with with_state",
                std::any::type_name::<T>()
            ))
            .with_code(ErrorCode::INTERNAL_ERROR)
        })
    }

    fn state() -> Option<StateType> {
        Some(StateType::of::<T>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(state: StateMap) -> CallContext {
        CallContext::new(
            Session::detached(),
            MessageId::nil(),
            Some(CancellationToken::new()),
            EventPublisher::new(Arc::new(super::super::events::EventHub::new(1024))),
            Arc::new(state),
            1024,
        )
    }

    #[test]
    fn state_is_found_by_type() {
        let mut map = StateMap::default();
        map.insert(7_u32);
        map.insert(String::from("world"));
        let ctx = context(map);
        assert_eq!(State::<u32>::from_context(&ctx).unwrap().0, 7);
        assert_eq!(State::<String>::from_context(&ctx).unwrap().0, "world");
    }

    #[test]
    fn missing_state_is_an_internal_error_naming_the_type() {
        let ctx = context(StateMap::default());
        let error = State::<u64>::from_context(&ctx).unwrap_err();
        assert_eq!(error.code(), ErrorCode::INTERNAL_ERROR);
        assert!(error.to_string().contains("u64"), "{error}");
    }

    #[test]
    fn the_token_is_the_calls() {
        let ctx = context(StateMap::default());
        let token = CancellationToken::from_context(&ctx).unwrap();
        token.cancel();
        assert!(ctx.is_cancelled());
    }
}
