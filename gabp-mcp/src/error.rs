//! [`ServeError`]: the one error of this crate, for serving MCP on stdio or over HTTP.

use std::net::SocketAddr;

use crate::http::API_KEY_VAR;

/// Why serving MCP did not start or stopped. No variant quotes the bearer key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The client on stdio did not set up an MCP session (it sent no `initialize`, or went away first).
    #[error("MCP on stdio: {0}")]
    Initialize(#[source] Box<rmcp::service::ServerInitializeError>),
    /// The task serving the MCP session on stdio panicked or was cancelled.
    #[error("MCP on stdio: {0}")]
    Session(#[source] tokio::task::JoinError),
    /// The HTTP address is not a loopback address: anyone on the network could drive the games.
    #[error("--http {0}: not a loopback address; gabp mcp serves HTTP on 127.0.0.1 or [::1] only, because anyone who reaches it can start games and run their tools")]
    NotLoopback(SocketAddr),
    /// The `--http` address is neither `HOST:PORT` with a loopback host (`localhost`, `127.0.0.1`, `[::1]`) nor a
    /// socket address.
    #[error("--http {0}: expected a loopback HOST:PORT such as localhost:8080, 127.0.0.1:8080 or [::1]:8080")]
    BadAddress(String),
    /// An `--allow-origin` value is not `SCHEME://HOST[:PORT]`, the form a browser sends in `Origin`.
    #[error("--allow-origin {0}: expected an origin such as https://app.example.com or http://localhost:3000 (scheme, host and optional port, nothing after)")]
    BadOrigin(String),
    /// No key and no explicit consent to serve HTTP without one.
    #[error("--http needs a bearer key in {API_KEY_VAR} (clients send `Authorization: Bearer <key>`); give --no-auth to serve without one")]
    NoKey,
    /// Binding or serving HTTP failed.
    #[error("HTTP server on {addr}: {source}")]
    Http {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}
