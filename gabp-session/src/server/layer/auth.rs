//! [`AuthLayer`]: `session/hello` first, with a constant-time token check.

use std::fmt;
use std::sync::Arc;

use gabp_transport::Token;
use gabp_types::decode::DecodeMode;
use gabp_types::methods::{HelloParams, Method, SessionHello};
use gabp_types::{ErrorCode, ErrorObject, Response};
use serde_json::json;
use tower::Layer;

use super::{Intercept, Interceptor};
use crate::server::session::BridgeInfo;
use crate::server::{CloseReason, ServerRequest};

/// The authentication rule (SPEC/1.0 gabp.md §7, security.md §2):
///
/// - before a successful `session/hello`, every other request is answered `-32100` (the connection stays
///   open);
/// - `session/hello` with a wrong token is answered `-32101` and the connection closes; the token is compared
///   in constant time ([`Token::verify`]) and never echoed or logged;
/// - `session/hello` on an established session is answered `-32600`;
/// - a hello with the right token marks the [`Session`](crate::server::Session) established and goes on to
///   the inner service, which answers with the welcome.
///
/// ```
/// use gabp_session::server::layer::AuthLayer;
/// use gabp_session::server::{ServerRequest, Session};
/// use gabp_transport::Token;
/// use gabp_types::{MethodName, Request, Response};
/// use tower::{service_fn, Layer, Service, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let inner = service_fn(|req: ServerRequest| async move {
///     Ok::<_, std::convert::Infallible>(req.reply(serde_json::json!({})))
/// });
/// let mut svc = AuthLayer::new(Token::generate()?).layer(inner);
/// let ping = Request::new(MethodName::new("session/ping")?, None);
/// let answer = svc.ready().await?.call(ServerRequest::new(ping, Session::detached())).await?;
/// assert_eq!(answer.error_object().map(|e| e.code.0), Some(-32100));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct AuthLayer {
    token: Arc<Token>,
}

impl AuthLayer {
    /// Bridges must present `token`.
    #[must_use]
    pub fn new(token: Token) -> Self {
        AuthLayer {
            token: Arc::new(token),
        }
    }

    /// The token bridges must present.
    pub(crate) fn token(&self) -> &Token {
        &self.token
    }
}

impl fmt::Debug for AuthLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthLayer").finish_non_exhaustive()
    }
}

impl<S> Layer<S> for AuthLayer {
    type Service = Auth<S>;

    fn layer(&self, inner: S) -> Auth<S> {
        Intercept::new(inner, self.clone())
    }
}

/// The service of [`AuthLayer`].
pub type Auth<S> = Intercept<S, AuthLayer>;

/// `-32101`, the same whatever was wrong with the token.
pub(crate) fn authentication_failed() -> ErrorObject {
    ErrorObject::new(
        ErrorCode::AUTHENTICATION_FAILED,
        "authentication failed: the token is not the one this mod expects",
    )
}

/// `-32600` for a second hello.
pub(crate) fn already_established() -> ErrorObject {
    ErrorObject::new(
        ErrorCode::INVALID_REQUEST,
        "the session is already established; session/hello is allowed once per connection",
    )
}

impl Interceptor for AuthLayer {
    fn intercept(&self, req: &ServerRequest) -> Option<Response> {
        if req.method() != SessionHello::NAME {
            if req.session.is_established() {
                return None;
            }
            let method = gabp_types::quoted_name(req.method());
            tracing::debug!(method = %method, "request before session/hello");
            return Some(
                req.error(
                    ErrorObject::new(
                        ErrorCode::AUTHENTICATION_REQUIRED,
                        "authentication required: send session/hello first",
                    )
                    .with_data(json!({ "method": method })),
                ),
            );
        }
        if req.session.is_established() {
            return Some(req.error(already_established()));
        }
        let candidate = req
            .request
            .params
            .as_ref()
            .and_then(|p| p.str_member("token"))
            .unwrap_or_default();
        if !self.token.verify(&candidate) {
            tracing::warn!(
                peer = req.session.peer(),
                "session/hello with a wrong token"
            );
            req.session.close_with(CloseReason::AuthenticationFailed);
            return Some(req.error(authentication_failed()));
        }
        match req.request.params_as::<HelloParams>() {
            Ok(hello) => {
                req.session.establish(BridgeInfo {
                    bridge_version: hello.bridge_version.into_string(),
                    platform: hello.platform,
                    launch_id: hello.launch_id,
                    client_info: hello.client_info,
                });
                tracing::debug!(peer = req.session.peer(), "session established");
                None
            }
            Err(_) => {
                // Serde's message may quote a value, and any value may be a token in the wrong field or case:
                // the hello checker's never does (SPEC/1.0 security.md §6).
                let checked = gabp_types::decode::check_params(
                    "session/hello",
                    req.request.params.as_ref(),
                    DecodeMode::Lenient,
                );
                let (path, message) = match &checked {
                    Err(e) => (e.pointer(), e.reason()),
                    Ok(()) => ("/params", "does not read as session/hello params"),
                };
                Some(
                    req.error(
                        ErrorObject::new(
                            ErrorCode::INVALID_PARAMS,
                            format!("invalid session/hello params: {path}: {message}"),
                        )
                        .with_data(json!({ "errors": [{ "path": path, "message": message }] })),
                    ),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::server::layer::testing::{call, code, echo, request};
    use crate::server::Session;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn hello(token: &str) -> gabp_types::Request {
        request(
            "session/hello",
            Some(json!({
                "token": token, "bridgeVersion": "1.0.0", "platform": "linux",
                "launchId": "6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11"
            })),
        )
    }

    #[tokio::test]
    async fn hello_first_then_everything() {
        let calls = Arc::new(AtomicUsize::new(0));
        let mut svc = AuthLayer::new(Token::new(TOKEN).unwrap()).layer(echo(calls.clone()));
        let session = Session::detached();
        let r = call(&mut svc, &session, request("session/ping", None)).await;
        assert_eq!(code(&r), Some(-32100));
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        let r = call(&mut svc, &session, hello(TOKEN)).await;
        assert_eq!(code(&r), None);
        assert!(session.is_established());
        assert_eq!(session.bridge().unwrap().bridge_version, "1.0.0");
        let r = call(&mut svc, &session, request("session/ping", None)).await;
        assert_eq!(code(&r), None);
        let r = call(&mut svc, &session, hello(TOKEN)).await;
        assert_eq!(code(&r), Some(-32600));
        assert!(!session.is_closing());
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn wrong_token_fails_closes_and_is_never_echoed() {
        let calls = Arc::new(AtomicUsize::new(0));
        let mut svc = AuthLayer::new(Token::new(TOKEN).unwrap()).layer(echo(calls.clone()));
        let session = Session::detached();
        let wrong = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";
        let r = call(&mut svc, &session, hello(wrong)).await;
        assert_eq!(code(&r), Some(-32101));
        assert!(!serde_json::to_string(&r.error_object())
            .unwrap()
            .contains("ffff"));
        assert!(session.is_closing());
        assert!(!session.is_established());
        // A missing token is just as wrong.
        let session = Session::detached();
        let r = call(
            &mut svc,
            &session,
            request("session/hello", Some(json!({}))),
        )
        .await;
        assert_eq!(code(&r), Some(-32101));
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn right_token_bad_params_is_invalid_params() {
        let calls = Arc::new(AtomicUsize::new(0));
        let mut svc = AuthLayer::new(Token::new(TOKEN).unwrap()).layer(echo(calls.clone()));
        let session = Session::detached();
        let r = call(
            &mut svc,
            &session,
            request("session/hello", Some(json!({ "token": TOKEN }))),
        )
        .await;
        assert_eq!(code(&r), Some(-32602));
        assert!(!r.error_object().unwrap().to_string().contains(TOKEN));
        assert!(!session.is_established());
    }
}
