//! MCP over streamable HTTP at `/mcp`, on loopback only, behind a bearer key compared in constant time. As the
//! MCP specification asks of streamable HTTP servers, a request whose `Origin` is not allowed is refused (403):
//! loopback origins are allowed, others only when listed.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
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

/// The `--http` address: `HOST:PORT` with a loopback host (`localhost`, `127.0.0.1`, `[::1]`) or any socket
/// address (refused later by [`HttpServer::bind`] when it is not loopback).
///
/// # Errors
///
/// [`ServeError::BadAddress`] when it is neither.
pub fn parse_addr(text: &str) -> Result<SocketAddr, ServeError> {
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    let bad = || ServeError::BadAddress(text.to_owned());
    let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    if host.eq_ignore_ascii_case("localhost") {
        Ok(SocketAddr::from(([127, 0, 0, 1], port)))
    } else {
        Err(bad())
    }
}

/// An `--allow-origin` value, checked: `SCHEME://HOST[:PORT]`, nothing after.
///
/// # Errors
///
/// [`ServeError::BadOrigin`] otherwise.
pub fn parse_origin(text: &str) -> Result<String, ServeError> {
    let bad = || ServeError::BadOrigin(text.to_owned());
    let (scheme, rest) = text.split_once("://").ok_or_else(bad)?;
    let scheme_ok = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    let rest_ok = !rest.is_empty()
        && !rest.contains(['/', '?', '#', '@'])
        && !rest.chars().any(|c| c.is_whitespace() || c.is_control());
    if scheme_ok && rest_ok {
        Ok(text.to_ascii_lowercase())
    } else {
        Err(bad())
    }
}

/// The origins allowed without `--allow-origin`: pages served from this machine.
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];

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
    /// Binds `addr` (loopback only) for `front`. Requests with an `Origin` header are served only from a
    /// loopback origin or one of `origins` (from [`parse_origin`]); requests without one are served.
    ///
    /// # Errors
    ///
    /// [`ServeError::NotLoopback`], [`ServeError::Http`].
    pub async fn bind(
        front: GabpMcp,
        addr: SocketAddr,
        access: Access,
        origins: &[String],
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
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts([
                "localhost".to_owned(),
                "127.0.0.1".to_owned(),
                "::1".to_owned(),
                "[::1]".to_owned(),
                format!("127.0.0.1:{}", addr.port()),
                format!("localhost:{}", addr.port()),
                format!("[::1]:{}", addr.port()),
            ])
            .with_allowed_origins(
                LOOPBACK_ORIGINS
                    .iter()
                    .map(|o| (*o).to_owned())
                    .chain(origins.iter().cloned()),
            )
            .enforce_origin_validation();
        let service = StreamableHttpService::new(
            move || Ok(front.for_session()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let router = Router::new()
            .nest_service("/mcp", service)
            .layer(middleware::from_fn(session_deleted))
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

/// A session's end (`DELETE /mcp`) is answered 204, as clients expect of a DELETE that leaves nothing to say;
/// rmcp answers 202.
async fn session_deleted(request: Request, next: Next) -> Response {
    let delete = request.method() == Method::DELETE;
    let response = next.run(request).await;
    if delete && response.status() == StatusCode::ACCEPTED {
        return StatusCode::NO_CONTENT.into_response();
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn localhost_and_bracketed_v6_loopback_are_addresses() {
        let v4: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert_eq!(parse_addr("localhost:8080").unwrap(), v4);
        assert_eq!(parse_addr("LocalHost:8080").unwrap(), v4);
        assert_eq!(parse_addr("127.0.0.1:8080").unwrap(), v4);
        let v6: SocketAddr = "[::1]:8080".parse().unwrap();
        assert_eq!(parse_addr("[::1]:8080").unwrap(), v6);
    }

    #[test]
    fn an_address_without_a_port_or_with_another_host_name_is_refused_by_name() {
        for bad in [
            "localhost",
            "localhost:",
            "localhost:99999",
            "example.com:80",
            "",
        ] {
            let error = parse_addr(bad).unwrap_err();
            assert!(
                matches!(&error, ServeError::BadAddress(t) if t == bad),
                "{bad}: {error:?}"
            );
            assert!(error.to_string().contains("localhost:8080"), "{error}");
        }
    }

    #[test]
    fn origins_are_scheme_host_and_port_only() {
        assert_eq!(
            parse_origin("https://App.Example.com").unwrap(),
            "https://app.example.com"
        );
        assert_eq!(
            parse_origin("http://localhost:3000").unwrap(),
            "http://localhost:3000"
        );
        for bad in [
            "app.example.com",
            "https://",
            "https://app.example.com/",
            "https://a.example/path",
            "://x",
            "1http://x",
            "https://user@x",
            "https://x y",
        ] {
            let error = parse_origin(bad).unwrap_err();
            assert!(
                matches!(&error, ServeError::BadOrigin(t) if t == bad),
                "{bad}: {error:?}"
            );
        }
    }

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
