//! [`CapabilityLayer`]: only the methods the welcome advertises are served.

use std::fmt;
use std::sync::Arc;

use gabp_types::methods::{Method, SessionHello, ToolsCall};
use gabp_types::{ErrorCode, ErrorObject, Response};
use serde_json::json;
use tower::Layer;

use super::{Intercept, Interceptor};
use crate::server::ServerRequest;
use crate::OwnKeySet;

/// The capability rule: a request for a method that is not in the welcome's `capabilities.methods` is
/// answered `-32601` (Method Not Found) with `data.method`, and never reaches the inner service. A mod
/// without `state/get` handlers, for example, neither advertises nor serves it.
///
/// ```
/// use gabp_session::server::layer::CapabilityLayer;
/// use gabp_session::server::{ServerRequest, Session};
/// use gabp_types::{MethodName, Request};
/// use tower::{service_fn, Layer, Service, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let inner = service_fn(|req: ServerRequest| async move {
///     Ok::<_, std::convert::Infallible>(req.reply(serde_json::json!({})))
/// });
/// let mut svc = CapabilityLayer::new(["session/ping"]).layer(inner);
/// let get = Request::new(MethodName::new("state/get")?, None);
/// let answer = svc.ready().await?.call(ServerRequest::new(get, Session::detached())).await?;
/// let error = answer.error_object().expect("refused");
/// assert_eq!(error.code.0, -32601);
/// assert_eq!(error.data.as_ref().unwrap()["method"], "state/get");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct CapabilityLayer {
    methods: Arc<OwnKeySet<String>>,
    /// Whether `tools/call` is served: asked on nearly every request, so looked up once.
    tools_call: bool,
}

impl CapabilityLayer {
    /// Serves exactly `methods` (`session/hello` is always allowed through).
    pub fn new<I, S>(methods: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let methods: OwnKeySet<String> = methods.into_iter().map(Into::into).collect();
        CapabilityLayer {
            tools_call: methods.contains(ToolsCall::NAME),
            methods: Arc::new(methods),
        }
    }
}

impl fmt::Debug for CapabilityLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut methods: Vec<&String> = self.methods.iter().collect();
        methods.sort();
        f.debug_struct("CapabilityLayer")
            .field("methods", &methods)
            .finish()
    }
}

impl<S> Layer<S> for CapabilityLayer {
    type Service = Capability<S>;

    fn layer(&self, inner: S) -> Capability<S> {
        Intercept::new(inner, self.clone())
    }
}

/// The service of [`CapabilityLayer`].
pub type Capability<S> = Intercept<S, CapabilityLayer>;

/// `-32601` with `data.method`.
pub(crate) fn method_not_found(method: &str) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("method not found: {}", gabp_types::quoted_name(method)),
    )
    .with_data(json!({ "method": gabp_types::quoted_name(method) }))
}

impl Interceptor for CapabilityLayer {
    fn intercept(&self, req: &ServerRequest) -> Option<Response> {
        let method = req.method();
        let served = if method == ToolsCall::NAME {
            self.tools_call
        } else {
            method == SessionHello::NAME || self.methods.contains(method)
        };
        (!served).then(|| req.error(method_not_found(method)))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::server::layer::testing::{call, code, echo, request};
    use crate::server::Session;

    #[tokio::test]
    async fn unadvertised_methods_never_reach_the_service() {
        let calls = Arc::new(AtomicUsize::new(0));
        let mut svc = CapabilityLayer::new(["tools/list"]).layer(echo(calls.clone()));
        let s = Session::detached();
        assert_eq!(
            code(&call(&mut svc, &s, request("tools/list", None)).await),
            None
        );
        assert_eq!(
            code(&call(&mut svc, &s, request("session/hello", None)).await),
            None
        );
        let r = call(&mut svc, &s, request("state/set", None)).await;
        assert_eq!(code(&r), Some(-32601));
        assert_eq!(
            r.error_object().unwrap().data.as_ref().unwrap()["method"],
            "state/set"
        );
        // `tools/call`, looked up once, follows the list like any other method.
        let r = call(&mut svc, &s, request("tools/call", None)).await;
        assert_eq!(code(&r), Some(-32601));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        let mut tools = CapabilityLayer::new(["tools/call"]).layer(echo(calls.clone()));
        let r = call(&mut tools, &s, request("tools/call", None)).await;
        assert_eq!(code(&r), None);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }
}
