//! MCP over streamable HTTP at `/mcp`, on loopback only, behind a bearer key compared in constant time.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use subtle::ConstantTimeEq;
use tokio_util::sync::CancellationToken;

use crate::{GabpMcp, ServeError};

/// The environment variable that holds the bearer key.
pub const API_KEY_VAR: &str = "GABP_MCP_API_KEY";

/// Who may call: clients with this key, or anyone (only when asked for explicitly).
#[derive(Clone)]
pub enum Access {
    /// `Authorization: Bearer <key>` required.
    Key(Arc<str>),
    /// No authentication (`--no-auth`).
    Open,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Access::Key(_) => "Key(..)",
            Access::Open => "Open",
        })
    }
}

impl Access {
    /// The key from `key` when given and not empty; [`Access::Open`] only with `no_auth`.
    ///
    /// # Errors
    ///
    /// [`ServeError::NoKey`] with neither.
    pub fn new(key: Option<String>, no_auth: bool) -> Result<Access, ServeError> {
        match key.filter(|k| !k.is_empty()) {
            Some(key) => Ok(Access::Key(key.into())),
            None if no_auth => Ok(Access::Open),
            None => Err(ServeError::NoKey),
        }
    }
}

/// A bound HTTP server, not yet serving.
pub struct HttpServer {
    listener: tokio::net::TcpListener,
    router: Router,
    addr: SocketAddr,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl HttpServer {
    /// Binds `addr` (loopback only) for `front`.
    ///
    /// # Errors
    ///
    /// [`ServeError::NotLoopback`], [`ServeError::Http`].
    pub async fn bind(
        front: GabpMcp,
        addr: SocketAddr,
        access: Access,
    ) -> Result<HttpServer, ServeError> {
        if !addr.ip().is_loopback() {
            return Err(ServeError::NotLoopback(addr));
        }
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Http { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| ServeError::Http { addr, source })?;
        let config = StreamableHttpServerConfig::default().with_allowed_hosts([
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
            "[::1]".to_owned(),
            format!("127.0.0.1:{}", addr.port()),
            format!("localhost:{}", addr.port()),
            format!("[::1]:{}", addr.port()),
        ]);
        let service = StreamableHttpService::new(
            move || Ok(front.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let router = Router::new()
            .nest_service("/mcp", service)
            .layer(middleware::from_fn_with_state(access, authorize));
        Ok(HttpServer {
            listener,
            router,
            addr,
        })
    }

    /// The address bound (with the real port when 0 was asked for).
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until `stop` fires.
    ///
    /// # Errors
    ///
    /// [`ServeError::Http`].
    pub async fn serve(self, stop: CancellationToken) -> Result<(), ServeError> {
        let addr = self.addr;
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await
            .map_err(|source| ServeError::Http { addr, source })
    }
}

async fn authorize(State(access): State<Access>, request: Request, next: Next) -> Response {
    if let Access::Key(key) = &access {
        let presented = request
            .headers()
            .get(header::AUTHORIZATION)
            .map(|v| v.as_bytes())
            .unwrap_or_default();
        let expected = format!("Bearer {key}");
        let matches: bool = presented.ct_eq(expected.as_bytes()).into();
        if !matches {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "missing or wrong API key: send `Authorization: Bearer <key>` with the key in GABP_MCP_API_KEY\n",
            )
                .into_response();
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_or_explicit_consent_is_needed() {
        assert!(matches!(Access::new(None, false), Err(ServeError::NoKey)));
        assert!(matches!(
            Access::new(Some(String::new()), false),
            Err(ServeError::NoKey)
        ));
        assert!(matches!(Access::new(None, true), Ok(Access::Open)));
        assert!(matches!(
            Access::new(Some("k".into()), true),
            Ok(Access::Key(_))
        ));
        assert_eq!(
            format!("{:?}", Access::new(Some("secret".into()), false).unwrap()),
            "Key(..)"
        );
    }
}
