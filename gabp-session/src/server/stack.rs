//! A connection's tower stack, as the table in [`layer`](super::layer) lists it: the protocol layers around the
//! router, type-erased only around the server's user layers, so that a request's future needs no box of its own
//! on the way to its handler.

use tower::limit::ConcurrencyLimit;
use tower::util::Either;

use super::layer::{Auth, Capability, CatchPanic, ModService, Timeout, Trace};
use super::Router;

/// The concurrency limit and the time limit around the router.
pub(crate) type Core = ConcurrencyLimit<Timeout<Router>>;

/// The protocol layers outside the user's: trace, panics, authentication, capabilities.
pub(crate) type Protocol<S> = Trace<CatchPanic<Auth<Capability<S>>>>;

/// A connection's whole stack: one concrete service without user layers (`Left`); with them, erased between
/// the protocol layers and the core (`Right`).
pub(crate) type Stack = Either<Protocol<Core>, Protocol<ModService>>;
