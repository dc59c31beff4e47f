//! A connection's tower stack, as the table in [`layer`](super::layer) lists it: the protocol layers around the
//! router, type-erased only around the server's user layers, so that a request's future needs no box of its own
//! on the way to its handler.

use std::convert::Infallible;
use std::task::{Context, Poll};

use futures::future::Either;
use gabp_types::Response;
use tower::limit::ConcurrencyLimit;
use tower::Service;

use super::layer::{Auth, Capability, CatchPanic, ModService, Timeout, Trace};
use super::{Router, ServerRequest};

/// The concurrency limit and the time limit around the router.
pub(crate) type Core = ConcurrencyLimit<Timeout<Router>>;

/// The protocol layers outside the user's: trace, panics, authentication, capabilities.
pub(crate) type Protocol<S> = Trace<CatchPanic<Auth<Capability<S>>>>;

/// A connection's whole stack.
pub(crate) enum Stack {
    /// No user layers: one concrete service.
    Plain(Protocol<Core>),
    /// User layers between the protocol layers and the core: erased there.
    Layered(Protocol<ModService>),
}

type PlainFuture = <Protocol<Core> as Service<ServerRequest>>::Future;
type LayeredFuture = <Protocol<ModService> as Service<ServerRequest>>::Future;

impl Service<ServerRequest> for Stack {
    type Response = Response;
    type Error = Infallible;
    type Future = Either<PlainFuture, LayeredFuture>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        match self {
            Stack::Plain(service) => service.poll_ready(cx),
            Stack::Layered(service) => service.poll_ready(cx),
        }
    }

    fn call(&mut self, req: ServerRequest) -> Self::Future {
        match self {
            Stack::Plain(service) => Either::Left(service.call(req)),
            Stack::Layered(service) => Either::Right(service.call(req)),
        }
    }
}
