//! [`TraceLayer`]: a `tracing` span per request.

use std::convert::Infallible;
use std::task::{Context, Poll};

use crate::server::ServerRequest;
use futures::future::Inspect;
use futures::FutureExt;
use gabp_types::Response;
use tower::{Layer, Service};
use tracing::instrument::Instrumented;
use tracing::Instrument;

/// Opens a `gabp.request` span (fields `method`, `id`, and `tool` for `tools/call`) around each request,
/// as a child of the connection's `gabp.connection` span, and logs the outcome at `DEBUG` (the error code,
/// if any). Params and results are never logged, so tokens never reach a log.
///
/// ```
/// use gabp_session::server::layer::TraceLayer;
/// use gabp_session::server::{ServerRequest, Session};
/// use gabp_types::{MethodName, Request};
/// use tower::{service_fn, Layer, Service, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let inner = service_fn(|req: ServerRequest| async move {
///     Ok::<_, std::convert::Infallible>(req.reply(serde_json::json!({})))
/// });
/// let mut svc = TraceLayer::new().layer(inner);
/// let req = Request::new(MethodName::new("session/ping")?, None);
/// svc.ready().await?.call(ServerRequest::new(req, Session::detached())).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct TraceLayer;

impl TraceLayer {
    /// The layer.
    #[must_use]
    pub fn new() -> Self {
        TraceLayer
    }
}

impl<S> Layer<S> for TraceLayer {
    type Service = Trace<S>;

    fn layer(&self, inner: S) -> Trace<S> {
        Trace { inner }
    }
}

/// The service of [`TraceLayer`].
#[derive(Debug, Clone)]
pub struct Trace<S> {
    inner: S,
}

impl<S> Service<ServerRequest> for Trace<S>
where
    S: Service<ServerRequest, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Instrumented<Traced<S::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: ServerRequest) -> Self::Future {
        let span = tracing::debug_span!(
            "gabp.request",
            method = %gabp_types::quoted_name(req.method()),
            id = %req.id(),
            tool = req.tool_name().as_deref().map(gabp_types::quoted_name).as_deref(),
        );
        let inner = span.in_scope(|| self.inner.call(req));
        let log: fn(&Result<Response, Infallible>) = log_outcome;
        inner.inspect(log).instrument(span)
    }
}

/// The future of [`Trace`] (inside its span): the inner service's future, its outcome logged.
pub type Traced<F> = Inspect<F, fn(&Result<Response, Infallible>)>;

fn log_outcome(response: &Result<Response, Infallible>) {
    if let Ok(response) = response {
        match response.error_object() {
            Some(e) => tracing::debug!(code = e.code.0, "answered with an error"),
            None => tracing::trace!("answered"),
        }
    }
}
