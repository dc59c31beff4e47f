//! [`ConcurrencyLimitLayer`]: at most N requests of one connection in flight.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use crate::server::ServerRequest;
use crate::slots::{Closed, Slots, Taken};
use gabp_types::Response;
use pin_project_lite::pin_project;
use tower::{Layer, Service};

/// A slot of a connection's limit, held by a request until it is answered.
type Slot = Taken<Arc<Slots>>;

/// The wait for a slot while none is free.
type Waiting = Pin<Box<dyn Future<Output = Result<Slot, Closed>> + Send + Sync>>;

/// The per-connection concurrency rule (`capabilities.limits.maxConcurrentRequests`): the service is not
/// ready while `max` requests are in flight, so the connection stops reading new requests until one
/// finishes. Each [`Layer::layer`] call makes a new, independent limit: the mod builds one stack per
/// connection, so the limit is per connection.
///
/// ```
/// use gabp_session::server::layer::ConcurrencyLimitLayer;
/// use gabp_session::server::{ServerRequest, Session};
/// use gabp_types::{MethodName, Request};
/// use tower::{service_fn, Layer, Service, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let inner = service_fn(|req: ServerRequest| async move {
///     Ok::<_, std::convert::Infallible>(req.reply(serde_json::json!({})))
/// });
/// let mut svc = ConcurrencyLimitLayer::new(1).layer(inner);
/// let ping = || ServerRequest::new(Request::new(MethodName::new("session/ping").unwrap(), None), Session::detached());
/// let first = svc.ready().await?.call(ping());
/// // While `first` is in flight the service is not ready.
/// assert!(futures::poll!(svc.ready()).is_pending());
/// first.await?;
/// svc.ready().await?.call(ping()).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ConcurrencyLimitLayer {
    max: usize,
}

impl ConcurrencyLimitLayer {
    /// At most `max` requests in flight (at least 1).
    #[must_use]
    pub fn new(max: usize) -> Self {
        ConcurrencyLimitLayer { max: max.max(1) }
    }
}

impl<S> Layer<S> for ConcurrencyLimitLayer {
    type Service = ConcurrencyLimit<S>;

    fn layer(&self, inner: S) -> ConcurrencyLimit<S> {
        ConcurrencyLimit {
            inner,
            slots: Arc::new(Slots::new(self.max)),
            slot: None,
            waiting: None,
        }
    }
}

/// The service of [`ConcurrencyLimitLayer`]. Clones share the limit.
pub struct ConcurrencyLimit<S> {
    inner: S,
    slots: Arc<Slots>,
    /// The slot `poll_ready` took, for the next call.
    slot: Option<Slot>,
    waiting: Option<Waiting>,
}

impl<S: Clone> Clone for ConcurrencyLimit<S> {
    fn clone(&self) -> Self {
        ConcurrencyLimit {
            inner: self.inner.clone(),
            slots: self.slots.clone(),
            slot: None,
            waiting: None,
        }
    }
}

impl<S> fmt::Debug for ConcurrencyLimit<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConcurrencyLimit")
            .field("available", &self.slots.available())
            .finish_non_exhaustive()
    }
}

impl<S> ConcurrencyLimit<S> {
    fn poll_slot(&mut self, cx: &mut Context<'_>) -> Poll<Slot> {
        if self.waiting.is_none() {
            if let Ok(slot) = Slots::try_take(self.slots.clone()) {
                return Poll::Ready(slot);
            }
            self.waiting = Some(Box::pin(Slots::take(self.slots.clone())));
        }
        let Some(waiting) = &mut self.waiting else {
            return Poll::Pending;
        };
        let taken = ready!(waiting.as_mut().poll(cx));
        self.waiting = None;
        // The limit is never closed, so `Closed` cannot happen; treat it as "not ready".
        taken.map_or(Poll::Pending, Poll::Ready)
    }
}

impl<S> Service<ServerRequest> for ConcurrencyLimit<S>
where
    S: Service<ServerRequest, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Limited<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        if self.slot.is_none() {
            self.slot = Some(ready!(self.poll_slot(cx)));
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: ServerRequest) -> Self::Future {
        let slot = self.slot.take();
        debug_assert!(slot.is_some(), "call without poll_ready");
        Limited {
            inner: self.inner.call(req),
            slot,
        }
    }
}

pin_project! {
    /// The future of [`ConcurrencyLimit`]: the inner service's future, holding its slot until it is answered
    /// (or dropped).
    pub struct Limited<F> {
        #[pin]
        inner: F,
        slot: Option<Slot>,
    }
}

impl<F> Future for Limited<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let response = ready!(this.inner.poll(cx));
        // The slot frees with the answer, not when whoever holds the future drops it.
        this.slot.take();
        Poll::Ready(response)
    }
}

impl<F> fmt::Debug for Limited<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limited").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::server::layer::testing::request;
    use crate::server::Session;
    use tower::ServiceExt;

    #[test]
    fn the_service_can_be_shared_across_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<ConcurrencyLimit<crate::server::Router>>();
        shared::<Limited<std::future::Ready<Result<Response, Infallible>>>>();
    }

    #[tokio::test(start_paused = true)]
    async fn the_third_request_waits_for_a_slot() {
        let inner = tower::service_fn(|req: ServerRequest| async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok::<_, Infallible>(req.reply(serde_json::json!({})))
        });
        let mut svc = ConcurrencyLimitLayer::new(2).layer(inner);
        let s = Session::detached();
        let mk = || ServerRequest::new(request("session/ping", None), s.clone());
        let a = svc.ready().await.unwrap().call(mk());
        let b = svc.ready().await.unwrap().call(mk());
        assert!(futures::poll!(svc.ready()).is_pending());
        let (a, b) = tokio::join!(a, b);
        assert!(a.is_ok() && b.is_ok());
        assert!(futures::poll!(svc.ready()).is_ready());
        // A fresh layer is a fresh limit.
        let mut other =
            ConcurrencyLimitLayer::new(2).layer(tower::service_fn(
                |req: ServerRequest| async move {
                    Ok::<_, Infallible>(req.reply(serde_json::json!({})))
                },
            ));
        assert!(futures::poll!(other.ready()).is_ready());
    }
}
