//! The author's own layers ([`ModServerBuilder::layer`](crate::server::ModServerBuilder::layer)): how they join the stack.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::FutureExt;
use gabp_types::Response;
use tower::{BoxError, Service};

use super::{ModService, ResponseFuture};
use crate::server::session::internal_error;
use crate::server::ServerRequest;

/// A user layer, applied to each connection's stack.
pub(crate) type LayerFn = Arc<dyn Fn(ModService) -> ModService + Send + Sync>;

pub(crate) fn apply_layers(layers: &[LayerFn], mut service: ModService) -> ModService {
    for layer in layers.iter().rev() {
        service = layer(service);
    }
    service
}

/// Adapts a user layer's service to the stack: a service error becomes a `-32603` answer.
pub(crate) struct ErrorsAsResponses<S> {
    pub(crate) inner: S,
    pub(crate) failed: Option<String>,
}

impl<S> Service<ServerRequest> for ErrorsAsResponses<S>
where
    S: Service<ServerRequest, Response = Response>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        if self.failed.is_some() {
            return Poll::Ready(Ok(()));
        }
        match self.inner.poll_ready(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(())) => Poll::Ready(Ok(())),
            Poll::Ready(Err(e)) => {
                let e: BoxError = e.into();
                tracing::error!(error = %e, "a layer's service failed; its requests are answered -32603");
                self.failed = Some(e.to_string());
                Poll::Ready(Ok(()))
            }
        }
    }

    fn call(&mut self, req: ServerRequest) -> ResponseFuture {
        if let Some(reason) = &self.failed {
            let answer = req.error(internal_error(format!("the service failed: {reason}")));
            return futures::future::ready(Ok(answer)).boxed();
        }
        let id = req.id();
        self.inner
            .call(req)
            .map(move |r| {
                Ok(r.unwrap_or_else(|e| {
                    let e: BoxError = e.into();
                    Response::error(id, internal_error(format!("internal error: {e}")))
                }))
            })
            .boxed()
    }
}
