//! The protocol rules as tower layers, each usable and testable on its own.
//!
//! [`ModServer`](super::ModServer) stacks them for every connection, outermost first:
//!
//! | layer | rule |
//! |---|---|
//! | [`TraceLayer`] | a `tracing` span per request (inside the connection's span) |
//! | [`CatchPanicLayer`] | a panicking handler is answered `-32603`; the mod keeps serving |
//! | [`AuthLayer`] | `session/hello` first (`-32100`), constant-time token check (`-32101`, then close), a second hello is `-32600` |
//! | [`CapabilityLayer`] | a method the welcome does not advertise is `-32601` with `data.method` |
//! | your layers, from [`ModServerBuilder::layer`](super::ModServerBuilder::layer) | interceptors ([`InterceptLayer`] or any tower layer): answer a request yourself or pass it on |
//! | [`ConcurrencyLimitLayer`] | at most N requests of a connection in flight; the connection stops reading meanwhile |
//! | [`TimeoutLayer`] | a request over its time limit is answered: `-32403` for tools, `-32603` otherwise |
//! | [`Router`](super::Router) | the methods themselves |
//!
//! Every layer's service answers with a [`Response`] and never fails
//! (`Error = Infallible`): a protocol error is an error response, not a service error.

pub(crate) mod auth;
pub(crate) mod capability;
pub(crate) mod intercept;
pub(crate) mod panic;
pub(crate) mod timeout;
pub(crate) mod trace;
pub(crate) mod user;

use std::convert::Infallible;

use futures::future::{BoxFuture, Either, Ready};
use gabp_types::Response;
use tower::util::BoxService;

pub use auth::{Auth, AuthLayer};
pub use capability::{Capability, CapabilityLayer};
pub use intercept::{Intercept, InterceptLayer, Interceptor};
pub use panic::{CatchPanic, CatchPanicLayer, PanicGuarded};
pub use timeout::{TimeLimited, Timeout, TimeoutLayer};
/// Tower's own limit: its service is not ready while N requests are in flight.
pub use tower::limit::ConcurrencyLimitLayer;
pub use trace::{Trace, TraceLayer, Traced};

use super::ServerRequest;

/// The type-erased service every layer of the mod's stack wraps and every user layer receives.
pub type ModService = BoxService<ServerRequest, Response, Infallible>;

/// The future of the built-in layers' services that have to erase their inner service's future.
pub type ResponseFuture = BoxFuture<'static, Result<Response, Infallible>>;

/// The future of a layer that either answers a request at once or passes it on to the inner service's future
/// `F` (no allocation of its own).
pub type Answered<F> = Either<Ready<Result<Response, Infallible>>, F>;

/// An answer given at once.
pub(crate) fn answer_now<F>(response: Response) -> Answered<F> {
    Either::Left(futures::future::ready(Ok(response)))
}

/// The request passed on.
pub(crate) fn passed_on<F>(future: F) -> Answered<F> {
    Either::Right(future)
}

#[cfg(test)]
pub(crate) mod testing {
    //! Small services for testing layers alone.

    use std::convert::Infallible;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use gabp_types::{MethodName, Request, Response};
    use serde_json::{json, Map, Value};
    use tower::{Service, ServiceExt};

    use crate::server::{ServerRequest, Session};

    /// A service that answers `{"ok": method}` and counts its calls.
    pub(crate) fn echo(
        calls: Arc<AtomicUsize>,
    ) -> impl Service<
        ServerRequest,
        Response = Response,
        Error = Infallible,
        Future = impl Send + 'static,
    > + Clone
           + Send
           + 'static {
        tower::service_fn(move |req: ServerRequest| {
            calls.fetch_add(1, Ordering::SeqCst);
            let id = req.id();
            let method = req.method().to_owned();
            async move { Ok::<_, Infallible>(Response::success(id, json!({ "ok": method }))) }
        })
    }

    pub(crate) fn request(method: &str, params: Option<Value>) -> Request {
        let params = params.map(|p| match p {
            Value::Object(m) => m,
            _ => Map::new(),
        });
        Request::new(MethodName::new(method).unwrap(), params)
    }

    pub(crate) async fn call<S>(svc: &mut S, session: &Session, request: Request) -> Response
    where
        S: Service<ServerRequest, Response = Response, Error = Infallible>,
    {
        svc.ready()
            .await
            .unwrap()
            .call(ServerRequest::new(request, session.clone()))
            .await
            .unwrap()
    }

    pub(crate) fn code(r: &Response) -> Option<i64> {
        r.error_object().map(|e| e.code.0)
    }
}
