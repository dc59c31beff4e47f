//! [`CallPath`]: how a bridge's call reaches the innermost service, straight or through the layers, which are
//! boxed once and shared by every call.

use std::any::Any;
use std::future::Future;
use std::task::{Context, Poll};

use tower::util::BoxCloneSyncService;
use tower::{Service, ServiceExt};

use super::request::{BridgeRequest, Reading};
use super::response::BridgeResponse;
use super::service::BridgeService;
use crate::Error;

/// The boxed stack of a layered call path.
pub(crate) type LayeredService = BoxCloneSyncService<BridgeRequest, BridgeResponse, Error>;

/// The call path of a bridge: the bare service, or the layered stack boxed once.
pub(crate) enum CallPath {
    Direct,
    /// One instance shared by every call: a call polls it ready and calls it under the lock (no clone, no
    /// allocation); a call that finds it not ready takes that instance away and leaves a fresh clone (see
    /// [`CallPath::send`]).
    Layered(parking_lot::Mutex<LayeredService>),
}

impl CallPath {
    /// Sends `request` along the path: through the layers, or straight to `raw`. The path is chosen now, so
    /// that the future holds only the way taken (no copy of the request beside it).
    pub(crate) fn send(
        &self,
        raw: &BridgeService,
        mut request: BridgeRequest,
    ) -> impl Future<Output = Result<BridgeResponse, Error>> + Send + 'static {
        use futures::future::{ready, Either};
        let CallPath::Layered(shared) = self else {
            return Either::Left(Either::Left(raw.dispatch(request)));
        };
        // Layers may read the result as they like: it is read whole before it reaches them.
        request.set_reading(Reading::Whole);
        let mut service = shared.lock();
        let mut cx = Context::from_waker(futures::task::noop_waker_ref());
        match service.poll_ready(&mut cx) {
            Poll::Ready(Ok(())) => Either::Left(Either::Right(service.call(request))),
            Poll::Ready(Err(error)) => Either::Right(Either::Right(ready(Err(error)))),
            Poll::Pending => {
                // Its readiness is under way with a waker nobody polls: this call takes the instance (with
                // whatever it reserved while polled) and drives it; the calls after it get a fresh clone.
                let fresh = service.clone();
                let stalled = std::mem::replace(&mut *service, fresh);
                Either::Right(Either::Left(stalled.oneshot(request)))
            }
        }
    }
}

/// Boxes a layered service once; the bare service (no layers) stays unboxed so its calls cost nothing extra.
pub(super) fn call_path<S>(service: S) -> CallPath
where
    S: Service<BridgeRequest, Response = BridgeResponse, Error = Error>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    let mut slot = Some(service);
    if (&mut slot as &mut dyn Any)
        .downcast_mut::<Option<BridgeService>>()
        .is_some()
    {
        return CallPath::Direct;
    }
    match slot {
        Some(service) => {
            CallPath::Layered(parking_lot::Mutex::new(BoxCloneSyncService::new(service)))
        }
        None => CallPath::Direct,
    }
}
