//! [`CatchPanicLayer`]: a panicking handler costs one request, not the mod.

use std::any::Any;
use std::convert::Infallible;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use gabp_types::{MessageId, Response};
use pin_project_lite::pin_project;
use tower::{Layer, Service};

use super::{answer_now, passed_on, Answered};
use crate::server::session::internal_error;
use crate::server::ServerRequest;

/// The panic-isolation rule: a handler that panics (while being called or while running) is answered
/// `-32603` (Internal Error), the panic is logged with the request's id (inside [`TraceLayer`](super::TraceLayer)'s
/// span, which names the method), and the connection and the mod keep serving. The panic message is not sent
/// to the bridge.
///
/// ```
/// use gabp_session::server::layer::CatchPanicLayer;
/// use gabp_session::server::{ServerRequest, Session};
/// use gabp_types::{MethodName, Request, Response};
/// use tower::{service_fn, Layer, Service, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let boom = service_fn(|_: ServerRequest| async move {
///     if true { panic!("boom") }
///     Ok::<Response, std::convert::Infallible>(unreachable!())
/// });
/// let mut svc = CatchPanicLayer::new().layer(boom);
/// let req = Request::new(MethodName::new("game/boom")?, None);
/// let answer = svc.ready().await?.call(ServerRequest::new(req, Session::detached())).await?;
/// assert_eq!(answer.error_object().map(|e| e.code.0), Some(-32603));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct CatchPanicLayer;

impl CatchPanicLayer {
    /// The layer.
    #[must_use]
    pub fn new() -> Self {
        CatchPanicLayer
    }
}

impl<S> Layer<S> for CatchPanicLayer {
    type Service = CatchPanic<S>;

    fn layer(&self, inner: S) -> CatchPanic<S> {
        CatchPanic { inner }
    }
}

/// The service of [`CatchPanicLayer`].
#[derive(Debug, Clone)]
pub struct CatchPanic<S> {
    inner: S,
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("<non-string panic payload>")
}

fn panicked(id: MessageId, payload: &(dyn Any + Send)) -> Response {
    tracing::error!(
        %id,
        panic = panic_message(payload),
        "a request handler panicked"
    );
    Response::error(
        id,
        internal_error("internal error: the request handler panicked"),
    )
}

impl<S> Service<ServerRequest> for CatchPanic<S>
where
    S: Service<ServerRequest, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Answered<PanicGuarded<S::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: ServerRequest) -> Self::Future {
        let id = req.id();
        match catch_unwind(AssertUnwindSafe(|| self.inner.call(req))) {
            Ok(inner) => passed_on(PanicGuarded { inner, id }),
            Err(payload) => answer_now(panicked(id, &*payload)),
        }
    }
}

pin_project! {
    /// The future of [`CatchPanic`]: the inner service's future, a panic while polling it answered `-32603`.
    pub struct PanicGuarded<F> {
        #[pin]
        inner: F,
        id: MessageId,
    }
}

impl<F> Future for PanicGuarded<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let inner = this.inner;
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(poll) => poll,
            // Answered now, so the panicked future is never polled again.
            Err(payload) => Poll::Ready(Ok(panicked(*this.id, &*payload))),
        }
    }
}

impl<F> std::fmt::Debug for PanicGuarded<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PanicGuarded")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::layer::testing::{call, code, request};
    use crate::server::Session;

    #[tokio::test]
    async fn panics_in_call_and_in_the_future() {
        struct PanicsInCall;
        impl Service<ServerRequest> for PanicsInCall {
            type Response = Response;
            type Error = Infallible;
            type Future = futures::future::Ready<Result<Response, Infallible>>;
            fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
                Poll::Ready(Ok(()))
            }
            fn call(&mut self, _: ServerRequest) -> Self::Future {
                panic!("in call")
            }
        }
        let s = Session::detached();
        let mut svc = CatchPanicLayer::new().layer(PanicsInCall);
        assert_eq!(
            code(&call(&mut svc, &s, request("a/b", None)).await),
            Some(-32603)
        );
        let mut svc =
            CatchPanicLayer::new().layer(tower::service_fn(|req: ServerRequest| async move {
                if req.method() == "a/panic" {
                    panic!("{}", String::from("in future"));
                }
                Ok::<_, Infallible>(req.reply(serde_json::json!({})))
            }));
        let r = call(&mut svc, &s, request("a/panic", None)).await;
        assert_eq!(code(&r), Some(-32603));
        assert!(!r.error_object().unwrap().message.contains("in future"));
        assert_eq!(
            code(&call(&mut svc, &s, request("a/fine", None)).await),
            None
        );
    }
}
