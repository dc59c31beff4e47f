//! [`TransportError`]: why a listener, a connection or a child process could not be set up.

use std::io;
use std::path::PathBuf;

use crate::endpoint::EndpointError;

/// Why binding, accepting, connecting or spawning failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The endpoint is not acceptable (for TCP: not loopback; the message says "loopback").
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    /// The operation does not apply to this endpoint on this platform (e.g. `connect` to `stdio`,
    /// a named pipe on Unix, a Unix socket on Windows).
    #[error("{endpoint}: {reason}")]
    Unsupported {
        /// The endpoint, as text.
        endpoint: String,
        /// Why, and what to use instead.
        reason: &'static str,
    },
    /// A live socket is already listening at this path; it was left alone.
    #[error(
        "a live socket is already listening at {}; refusing to replace it",
        path.display()
    )]
    SocketInUse {
        /// The socket path.
        path: PathBuf,
    },
    /// Something other than a socket exists at this path; it was left alone.
    #[error("{} exists and is not a socket; refusing to replace it", path.display())]
    NotASocket {
        /// The path.
        path: PathBuf,
    },
    /// The Unix socket is served by a process of another user; nothing was sent to it (a bridge
    /// would otherwise hand its token to whoever squatted the path).
    #[error("{endpoint} is served by user id {uid}, not by this user; refusing to talk to it")]
    ForeignPeer {
        /// The endpoint, as text.
        endpoint: String,
        /// The user id of the process serving it.
        uid: u32,
    },
    /// The stdio listener already handed out its one connection and that connection has closed.
    #[error("the stdio listener has no more connections: its one connection has closed")]
    Closed,
    /// An I/O operation failed.
    #[error("cannot {op} {target}: {source}")]
    Io {
        /// What was being done, as a verb phrase ("bind", "connect to", "accept on").
        op: &'static str,
        /// On what (an endpoint, a path or a program).
        target: String,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// There is no Tokio runtime to run the operation on.
    #[error("{0} must be called from inside a Tokio runtime")]
    NoRuntime(&'static str),
}

impl TransportError {
    pub(crate) fn io(op: &'static str, target: impl std::fmt::Display, source: io::Error) -> Self {
        TransportError::Io {
            op,
            target: target.to_string(),
            source,
        }
    }

    /// The underlying I/O error kind, if this is an I/O error.
    #[must_use]
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        match self {
            TransportError::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }
}
