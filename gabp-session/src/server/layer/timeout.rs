//! [`TimeoutLayer`]: every request has a time limit.

use std::borrow::Cow;
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::server::registry::ToolTable;
use crate::server::time_limit::Work;
use crate::server::ServerRequest;
use gabp_types::methods::CORE_METHODS;
use gabp_types::{MessageId, Response};
use pin_project_lite::pin_project;
use tower::{Layer, Service};

/// The time-limit rule (`capabilities.limits.requestTimeout`): a request still running after its limit is
/// answered, and its handler is dropped (cancelled at its next `.await`). A `tools/call` is answered `-32403`
/// (Tool Timeout); any other method `-32603`. Both carry `data.timeoutMs` and `data.retryable: true`.
///
/// Tools may have their own limit ([`Tool::timeout`](crate::server::Tool::timeout)), given to the layer with
/// [`TimeoutLayer::with_tool_timeouts`].
///
/// ```
/// use std::time::Duration;
/// use gabp_session::server::layer::TimeoutLayer;
/// use gabp_session::server::{ServerRequest, Session};
/// use gabp_types::{MethodName, Request};
/// use tower::{service_fn, Layer, Service, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let slow = service_fn(|req: ServerRequest| async move {
///     tokio::time::sleep(Duration::from_secs(60)).await;
///     Ok::<_, std::convert::Infallible>(req.reply(serde_json::json!({})))
/// });
/// let mut svc = TimeoutLayer::new(Duration::from_secs(1)).layer(slow);
/// let req = Request::new(MethodName::new("game/slow")?, None);
/// let answer = svc.ready().await?.call(ServerRequest::new(req, Session::detached())).await?;
/// assert_eq!(answer.error_object().map(|e| e.code.0), Some(-32603));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct TimeoutLayer {
    default: Duration,
    tools: Arc<HashMap<String, Duration>>,
    table: Option<Arc<ToolTable>>,
}

impl TimeoutLayer {
    /// Every request gets `default`.
    #[must_use]
    pub fn new(default: Duration) -> Self {
        TimeoutLayer {
            default,
            tools: Arc::new(HashMap::new()),
            table: None,
        }
    }

    /// Tools named in `tools` get their own limit instead.
    #[must_use]
    pub fn with_tool_timeouts(mut self, tools: HashMap<String, Duration>) -> Self {
        self.tools = Arc::new(tools);
        self
    }

    /// Tools of the server's live table get the limit they were registered with.
    pub(crate) fn with_tool_table(mut self, table: Arc<ToolTable>) -> Self {
        self.table = Some(table);
        self
    }
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, inner: S) -> Timeout<S> {
        Timeout {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service of [`TimeoutLayer`].
#[derive(Debug, Clone)]
pub struct Timeout<S> {
    inner: S,
    layer: TimeoutLayer,
}

impl<S> Service<ServerRequest> for Timeout<S>
where
    S: Service<ServerRequest, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = TimeLimited<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: ServerRequest) -> Self::Future {
        let (subject, limit) = self.layer.subject(&req);
        let id = req.id();
        let start = tokio::time::Instant::now();
        TimeLimited {
            inner: self.inner.call(req),
            timer: None,
            start,
            subject,
            id,
            limit,
        }
    }
}

pin_project! {
    /// The future of [`Timeout`]: the inner service's future, answered with the time-limit error when its
    /// limit passes first. The timer is armed only if the inner future has to wait: most answer at once.
    pub struct TimeLimited<F> {
        #[pin]
        inner: F,
        // Boxed: a call that has to wait pays for it, and the future every call carries through the layers
        // stays small.
        timer: Option<Pin<Box<tokio::time::Sleep>>>,
        start: tokio::time::Instant,
        subject: Subject,
        id: MessageId,
        limit: Duration,
    }
}

impl<F> Future for TimeLimited<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(answer) = this.inner.poll(cx) {
            return Poll::Ready(answer);
        }
        if this.timer.is_none() {
            // The limit counts from the call, not from this first wait; one too large to add is no limit.
            let Some(deadline) = this.start.checked_add(*this.limit) else {
                return Poll::Pending;
            };
            *this.timer = Some(Box::pin(tokio::time::sleep_until(deadline)));
        }
        let expired = this
            .timer
            .as_mut()
            .is_some_and(|timer| timer.as_mut().poll(cx).is_ready());
        if !expired {
            return Poll::Pending;
        }
        let limit = *this.limit;
        let error = match &*this.subject {
            Subject::ToolNamed(tool) => Work::Tool(tool),
            Subject::ToolCopied(name) => Work::Tool(name.as_str()),
            Subject::Method(method) => Work::Method(method),
        }
        .timed_out("exceeded its", limit);
        tracing::debug!(message = %error.message, "request timed out");
        Poll::Ready(Ok(Response::error(*this.id, error)))
    }
}

impl<F> std::fmt::Debug for TimeLimited<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimeLimited")
            .field("id", &self.id)
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

/// What timed out, named without an allocation on the common path: a tool's name is copied inline when short,
/// a core method's name is static.
enum Subject {
    ToolNamed(String),
    ToolCopied(ShortName),
    Method(Cow<'static, str>),
}

/// The longest tool name kept inline.
const SHORT_NAME: usize = 48;

/// A name of at most [`SHORT_NAME`] bytes, copied.
struct ShortName {
    bytes: [u8; SHORT_NAME],
    len: u8,
}

impl ShortName {
    fn new(name: &str) -> Option<ShortName> {
        let mut bytes = [0; SHORT_NAME];
        bytes
            .get_mut(..name.len())?
            .copy_from_slice(name.as_bytes());
        Some(ShortName {
            bytes,
            len: u8::try_from(name.len()).ok()?,
        })
    }

    fn as_str(&self) -> &str {
        // A whole `str` was copied, so this is always that `str`.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl Subject {
    /// A tool named in its request.
    fn tool_named(name: Cow<'_, str>) -> Subject {
        match ShortName::new(&name) {
            Some(short) => Subject::ToolCopied(short),
            None => Subject::ToolNamed(name.into_owned()),
        }
    }
}

impl TimeoutLayer {
    fn subject(&self, req: &ServerRequest) -> (Subject, Duration) {
        let Some(name) = req.tool_name() else {
            let method = req.method();
            let method = match CORE_METHODS.iter().find(|m| **m == method) {
                Some(core) => Cow::Borrowed(*core),
                None => Cow::Owned(method.to_owned()),
            };
            return (Subject::Method(method), self.default);
        };
        // Most servers give no tool a limit of its own: then no tool is looked up.
        let limit = self.tools.get(name.as_ref()).copied().or_else(|| {
            let table = self.table.as_ref().filter(|t| t.has_own_limits());
            table.and_then(|t| t.timeout(&name))
        });
        (Subject::tool_named(name), limit.unwrap_or(self.default))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::layer::testing::{call, code, request};
    use crate::server::Session;
    use serde_json::json;

    #[tokio::test(start_paused = true)]
    async fn tools_get_32403_and_their_own_limit() {
        let slow = tower::service_fn(|req: ServerRequest| async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok::<_, Infallible>(req.reply(json!({})))
        });
        let mut svc = TimeoutLayer::new(Duration::from_secs(1))
            .with_tool_timeouts(HashMap::from([(
                "slow/ok".to_owned(),
                Duration::from_secs(10),
            )]))
            .layer(slow);
        let s = Session::detached();
        let r = call(
            &mut svc,
            &s,
            request("tools/call", Some(json!({"name": "slow/tool"}))),
        )
        .await;
        assert_eq!(code(&r), Some(-32403));
        let data = r.error_object().unwrap().data.clone().unwrap();
        assert_eq!(data["timeoutMs"], 1000);
        assert_eq!(data["retryable"], true);
        let r = call(
            &mut svc,
            &s,
            request("tools/call", Some(json!({"name": "slow/ok"}))),
        )
        .await;
        assert_eq!(code(&r), None);
        let r = call(&mut svc, &s, request("resources/read", None)).await;
        assert_eq!(code(&r), Some(-32603));
    }

    /// A tool is named in its timeout error, short name or long: with no limits of their own anywhere (nothing
    /// is looked up), and with limits for other tools (looked up, not found).
    #[tokio::test(start_paused = true)]
    async fn a_tool_without_a_limit_of_its_own_is_named_in_its_timeout() {
        let slow = tower::service_fn(|req: ServerRequest| async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok::<_, Infallible>(req.reply(json!({})))
        });
        let others = HashMap::from([("other/tool".to_owned(), Duration::ZERO)]);
        let layers = [
            TimeoutLayer::new(Duration::from_secs(1)),
            TimeoutLayer::new(Duration::from_secs(1)).with_tool_timeouts(others),
        ];
        let s = Session::detached();
        let long = format!("slow/{}", "x".repeat(SHORT_NAME));
        for layer in layers {
            let mut svc = layer.layer(slow);
            for name in ["slow/tool", &long[..SHORT_NAME], &long] {
                let params = json!({ "name": name });
                let r = call(&mut svc, &s, request("tools/call", Some(params))).await;
                assert_eq!(code(&r), Some(-32403), "{name}");
                let error = r.error_object().unwrap();
                assert_eq!(
                    error.message.as_str(),
                    format!("tool {name} exceeded its time limit of 1000 ms")
                );
                assert_eq!(error.data.as_ref().unwrap()["timeoutMs"], 1000);
            }
        }
    }

    /// The limit counts from the call: time a handler spends before its first wait counts too.
    #[tokio::test(start_paused = true)]
    async fn the_limit_counts_from_the_call_not_from_the_first_wait() {
        let mut svc = TimeoutLayer::new(Duration::from_secs(1)).layer(tower::service_fn(
            |req: ServerRequest| async move {
                tokio::time::sleep(Duration::from_millis(700)).await;
                Ok::<_, Infallible>(req.reply(json!({})))
            },
        ));
        let s = Session::detached();
        let future = svc.call(ServerRequest::new(request("game/slow", None), s.clone()));
        // 600 ms pass between the call and its first poll: 1.3 s in all is past the 1 s limit.
        tokio::time::advance(Duration::from_millis(600)).await;
        let r = future.await.unwrap();
        assert_eq!(code(&r), Some(-32603));
        // A handler that answers at once needs no timer and answers as it is.
        let mut quick = TimeoutLayer::new(Duration::ZERO).layer(tower::service_fn(
            |req: ServerRequest| async move { Ok::<_, Infallible>(req.reply(json!(1))) },
        ));
        let r = quick
            .call(ServerRequest::new(request("game/quick", None), s))
            .await
            .unwrap();
        assert_eq!(code(&r), None);
    }
}
