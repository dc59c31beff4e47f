//! [`InterceptLayer`]: answer some requests before they reach the handlers.

use std::convert::Infallible;
use std::fmt;
use std::task::{Context, Poll};

use gabp_types::Response;
use tower::{Layer, Service};

use super::{answer_now, passed_on, Answered};
use crate::server::ServerRequest;

/// The simplest interceptor: `intercept` sees each request first and either answers it (`Some(response)`,
/// and the request goes no further) or lets it through (`None`). For access control, rate limits, audit
/// logs, or a gate. Add it with [`ModServerBuilder::layer`](crate::server::ModServerBuilder::layer).
///
/// ```
/// use gabp_session::server::layer::InterceptLayer;
/// use gabp_session::server::{ModServer, ServerRequest};
/// use gabp_types::{ErrorCode, ErrorObject};
///
/// let deny_admin = InterceptLayer::new(|req: &ServerRequest| {
///     req.tool_name()
///         .filter(|tool| tool.starts_with("admin/"))
///         .map(|_| req.error(ErrorObject::new(ErrorCode::ACCESS_DENIED, "admin tools are disabled")))
/// });
/// let builder = ModServer::builder().layer(deny_admin);
/// # let _ = builder;
/// ```
#[derive(Clone)]
pub struct InterceptLayer<F> {
    intercept: F,
}

impl<F> InterceptLayer<F>
where
    F: Fn(&ServerRequest) -> Option<Response> + Clone + Send + Sync + 'static,
{
    /// Intercepts with `intercept`.
    pub fn new(intercept: F) -> Self {
        InterceptLayer { intercept }
    }
}

impl<F> fmt::Debug for InterceptLayer<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InterceptLayer").finish_non_exhaustive()
    }
}

impl<S, F: Clone> Layer<S> for InterceptLayer<F> {
    type Service = Intercept<S, F>;

    fn layer(&self, inner: S) -> Intercept<S, F> {
        Intercept::new(inner, self.intercept.clone())
    }
}

/// What an [`Intercept`] does with each request: answers it (`Some(response)`) or lets it through (`None`).
/// Closures `Fn(&ServerRequest) -> Option<Response>` are interceptors; so are [`AuthLayer`](super::AuthLayer)
/// and [`CapabilityLayer`](super::CapabilityLayer).
pub trait Interceptor {
    /// The answer to `req`, or `None` to pass it on.
    fn intercept(&self, req: &ServerRequest) -> Option<Response>;
}

impl<F: Fn(&ServerRequest) -> Option<Response>> Interceptor for F {
    fn intercept(&self, req: &ServerRequest) -> Option<Response> {
        self(req)
    }
}

/// The service of [`InterceptLayer`], [`AuthLayer`](super::AuthLayer) and
/// [`CapabilityLayer`](super::CapabilityLayer).
#[derive(Clone)]
pub struct Intercept<S, F> {
    inner: S,
    intercept: F,
}

impl<S, F> Intercept<S, F> {
    pub(crate) fn new(inner: S, intercept: F) -> Self {
        Intercept { inner, intercept }
    }
}

impl<S, F> fmt::Debug for Intercept<S, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Intercept").finish_non_exhaustive()
    }
}

impl<S, F> Service<ServerRequest> for Intercept<S, F>
where
    S: Service<ServerRequest, Response = Response, Error = Infallible>,
    F: Interceptor,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Answered<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: ServerRequest) -> Self::Future {
        match self.intercept.intercept(&req) {
            Some(answer) => answer_now(answer),
            None => passed_on(self.inner.call(req)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;
    use crate::server::layer::testing::{call, code, echo, request};
    use crate::server::Session;
    use gabp_types::{ErrorCode, ErrorObject};

    #[tokio::test]
    async fn answers_or_passes() {
        let calls = Arc::new(AtomicUsize::new(0));
        let mut svc = InterceptLayer::new(|req: &ServerRequest| {
            (req.method() == "game/secret")
                .then(|| req.error(ErrorObject::new(ErrorCode::ACCESS_DENIED, "no")))
        })
        .layer(echo(calls.clone()));
        let s = Session::detached();
        assert_eq!(
            code(&call(&mut svc, &s, request("game/secret", None)).await),
            Some(-32103)
        );
        assert_eq!(
            code(&call(&mut svc, &s, request("game/open", None)).await),
            None
        );
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
