//! The mod side: [`Listener`].

use std::sync::atomic::{AtomicBool, Ordering};

use gabp_codec::FrameCodec;
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::connection::Connection;
use crate::endpoint::{check_loopback, Endpoint};
use crate::error::TransportError;
use crate::stream::ByteStream;
use crate::token::Token;
use crate::ws::WsSettings;

/// Whether some [`Listener`] in this process owns stdin/stdout.
static STDIO_CLAIMED: AtomicBool = AtomicBool::new(false);

/// A mod's listener on any GABP transport.
///
/// - **TCP** binds loopback only: any other address, such as `0.0.0.0` or a LAN address, is
///   refused with an error that says "loopback". Port `0` gets an ephemeral port;
///   [`Listener::endpoint`] tells which. Accepted sockets have `TCP_NODELAY` set.
/// - **Unix sockets** are created with mode 0600 from the first instant (bound in a private 0700
///   directory, `chmod`ed, then hard-linked into place); a live socket already at the path is never
///   clobbered ([`TransportError::SocketInUse`]), a stale one (nobody listening) is replaced, and
///   anything that is not a socket is left alone ([`TransportError::NotASocket`]). The socket file
///   is removed when the listener is dropped (if it is still ours). For an unpredictable path use
///   [`Endpoint::unix_unique_in`].
/// - **stdio** is the process's own stdin and stdout: [`Listener::accept`] yields exactly one
///   connection; a later call waits until that connection is dropped, then returns
///   [`TransportError::Closed`], so a serve loop ends when the bridge closes stdin. Only one stdio
///   listener may exist per process. **Nothing else may write to stdout** — log to stderr.
/// - **WebSocket** binds loopback only, like TCP; handshakes run in the background (at most 16 at
///   once, each within its timeout), so a slow client delays nobody, and only connections whose
///   handshake passed the checks of [`WsSettings`] (Origin, token) are handed out. Each reads and
///   writes as a [`ByteStream`] of `Content-Length` frames.
/// - **Named pipes** (Windows only, untested on this platform): one server instance always waits;
///   the pipe name is claimed exclusively.
///
/// `accept` is cancel-safe on every transport, so it can sit in a `tokio::select!` loop.
///
/// ```
/// use bytes::Bytes;
/// use futures::{SinkExt, StreamExt};
/// use gabp_transport::{connect, Endpoint, Listener};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let listener = Listener::bind(&Endpoint::tcp_v4(0)).await?;
/// let endpoint = listener.endpoint().clone(); // tcp://127.0.0.1:<the real port>
///
/// let server = tokio::spawn(async move {
///     let mut conn = listener.accept().await?;
///     while let Some(frame) = conn.next().await {
///         if let Some(body) = frame?.into_body() {
///             conn.send(body).await?; // echo
///         }
///     }
///     Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
/// });
///
/// let mut bridge = connect(&endpoint).await?;
/// bridge.send(Bytes::from_static(b"{}")).await?;
/// let echoed = bridge.next().await.transpose()?.and_then(|f| f.into_body());
/// assert_eq!(echoed.as_deref(), Some(&b"{}"[..]));
/// drop(bridge);
/// server.await?.map_err(|e| e.to_string())?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Listener {
    kind: Kind,
    endpoint: Endpoint,
    codec: FrameCodec,
}

#[derive(Debug)]
enum Kind {
    Tcp(tokio::net::TcpListener),
    #[cfg(unix)]
    Unix(crate::unix_socket::UnixSocketListener),
    #[cfg(windows)]
    Pipe(crate::pipe::PipeListener),
    Stdio(Mutex<StdioState>),
    WebSocket(crate::ws::WsListener),
}

#[derive(Debug)]
enum StdioState {
    Unused,
    /// Handed out; the receiver's sender lives inside the connection's stream.
    Taken(watch::Receiver<()>),
}

/// A TCP listener on `addr`, refused unless it is loopback (SPEC/1.0 security.md §4), and its bound address.
async fn bind_loopback(
    addr: &std::net::SocketAddr,
    endpoint: &Endpoint,
) -> Result<(tokio::net::TcpListener, std::net::SocketAddr), TransportError> {
    check_loopback(addr)?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| TransportError::io("bind", endpoint, e))?;
    let local = listener
        .local_addr()
        .map_err(|e| TransportError::io("read the address of", endpoint, e))?;
    Ok((listener, local))
}

impl Listener {
    /// Start listening at `endpoint`.
    ///
    /// Must be called inside a Tokio runtime with I/O enabled.
    ///
    /// # Errors
    ///
    /// - [`TransportError::NotLoopback`] for a TCP address that is not loopback;
    /// - [`TransportError::SocketInUse`] or [`TransportError::NotASocket`] for a Unix socket path
    ///   that is taken;
    /// - [`TransportError::Unsupported`] for a transport this platform does not have (named pipes
    ///   off Windows, Unix sockets on Windows), or for a second stdio listener;
    /// - [`TransportError::Io`] when the system refuses (address in use, no such directory, …).
    pub async fn bind(endpoint: &Endpoint) -> Result<Self, TransportError> {
        let (kind, endpoint) = match endpoint {
            Endpoint::Tcp(addr) => {
                let (listener, local) = bind_loopback(addr, endpoint).await?;
                tracing::debug!(address = %local, "listening on loopback TCP");
                (Kind::Tcp(listener), Endpoint::Tcp(local))
            }
            #[cfg(unix)]
            Endpoint::Unix(path) => (
                Kind::Unix(crate::unix_socket::UnixSocketListener::bind(path).await?),
                endpoint.clone(),
            ),
            #[cfg(not(unix))]
            Endpoint::Unix(_) => {
                return Err(TransportError::Unsupported {
                    endpoint: endpoint.to_string(),
                    reason: "Unix sockets are not supported on this platform; use pipe://NAME",
                })
            }
            #[cfg(windows)]
            Endpoint::Pipe(name) => (
                Kind::Pipe(crate::pipe::PipeListener::bind(name)?),
                endpoint.clone(),
            ),
            #[cfg(not(windows))]
            Endpoint::Pipe(_) => {
                return Err(TransportError::Unsupported {
                    endpoint: endpoint.to_string(),
                    reason: "named pipes exist only on Windows; use unix:///path.sock",
                })
            }
            Endpoint::WebSocket(addr) => {
                let (listener, local) = bind_loopback(addr, endpoint).await?;
                tracing::debug!(address = %local, "listening for WebSockets on loopback");
                let max_body = FrameCodec::new().max_body_size();
                (
                    Kind::WebSocket(crate::ws::WsListener::new(listener, max_body)),
                    Endpoint::WebSocket(local),
                )
            }
            Endpoint::Stdio => {
                if STDIO_CLAIMED.swap(true, Ordering::SeqCst) {
                    return Err(TransportError::Unsupported {
                        endpoint: endpoint.to_string(),
                        reason: "another listener in this process already owns stdin/stdout",
                    });
                }
                (Kind::Stdio(Mutex::new(StdioState::Unused)), Endpoint::Stdio)
            }
        };
        Ok(Listener {
            kind,
            endpoint,
            codec: FrameCodec::new(),
        })
    }

    /// The same listener, framing accepted connections with `codec` (and so its limits).
    #[must_use]
    pub fn with_codec(mut self, codec: FrameCodec) -> Self {
        if let Kind::WebSocket(ws) = &self.kind {
            ws.set_max_body(codec.max_body_size());
        }
        self.codec = codec;
        self
    }

    /// The same listener with these WebSocket settings (SPEC/1.0 transport.md §2.5); for other
    /// transports, unchanged. Handshakes already under way keep the settings they started with.
    #[must_use]
    pub fn with_ws_settings(self, settings: WsSettings) -> Self {
        if let Kind::WebSocket(ws) = &self.kind {
            ws.set_settings(|s| *s = settings);
        }
        self
    }

    /// The same listener checking tokens given at a WebSocket handshake against `token` (see
    /// [`WsSettings::with_token`]); for other transports, unchanged.
    #[must_use]
    pub fn with_ws_token(self, token: Token) -> Self {
        if let Kind::WebSocket(ws) = &self.kind {
            ws.set_settings(|s| s.token = Some(token));
        }
        self
    }

    /// Accept WebSocket handshakes from web pages of `origin` too, from now on (such as the mod's
    /// own inspect page, `http://127.0.0.1:PORT`). Returns `false`, doing nothing, when this is
    /// not a WebSocket listener.
    pub fn allow_ws_origin(&self, origin: &str) -> bool {
        match &self.kind {
            Kind::WebSocket(ws) => {
                ws.set_settings(|s| *s = s.clone().allow_origin(origin));
                true
            }
            _ => false,
        }
    }

    /// The WebSocket settings of a WebSocket listener.
    #[must_use]
    pub fn ws_settings(&self) -> Option<WsSettings> {
        match &self.kind {
            Kind::WebSocket(ws) => Some(ws.settings()),
            _ => None,
        }
    }

    /// The endpoint actually bound: for TCP port `0`, the port the system chose.
    #[must_use]
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Wait for the next bridge and return the framed connection.
    ///
    /// # Errors
    ///
    /// As [`Listener::accept_stream`].
    pub async fn accept(&self) -> Result<Connection, TransportError> {
        let (stream, peer) = self.accept_stream().await?;
        tracing::debug!(listener = %self.endpoint, %peer, "accepted a connection");
        Ok(Connection::from_stream(stream, self.codec.clone(), peer))
    }

    /// Wait for the next bridge and return its raw, unframed byte stream and a description of the
    /// peer (see [`Connection::peer`]).
    ///
    /// # Errors
    ///
    /// [`TransportError::Io`] when accepting fails (often transient, such as too many open files:
    /// the listener stays usable); [`TransportError::Closed`] from a stdio listener whose one
    /// connection has closed.
    pub async fn accept_stream(&self) -> Result<(ByteStream, String), TransportError> {
        match &self.kind {
            Kind::Tcp(listener) => {
                let (stream, peer) = listener
                    .accept()
                    .await
                    .map_err(|e| TransportError::io("accept on", &self.endpoint, e))?;
                if let Err(e) = stream.set_nodelay(true) {
                    tracing::debug!(error = %e, "cannot set TCP_NODELAY");
                }
                Ok((ByteStream::new(stream), Endpoint::Tcp(peer).to_string()))
            }
            #[cfg(unix)]
            Kind::Unix(listener) => Ok((listener.accept().await?, self.endpoint.to_string())),
            #[cfg(windows)]
            Kind::Pipe(listener) => Ok((listener.accept().await?, self.endpoint.to_string())),
            Kind::Stdio(state) => accept_stdio(state).await,
            Kind::WebSocket(ws) => ws.accept().await,
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Kind::Stdio(state) = &self.kind {
            let unused = matches!(*state.lock(), StdioState::Unused);
            if unused {
                // Never handed out: another listener may have stdio.
                STDIO_CLAIMED.store(false, Ordering::SeqCst);
            }
        }
    }
}

async fn accept_stdio(state: &Mutex<StdioState>) -> Result<(ByteStream, String), TransportError> {
    let taken = {
        let mut state = state.lock();
        match &*state {
            StdioState::Unused => {
                let (closed_tx, closed_rx) = watch::channel(());
                *state = StdioState::Taken(closed_rx);
                let io = tokio::io::join(tokio::io::stdin(), tokio::io::stdout());
                return Ok((ByteStream::with_guard(io, closed_tx), "stdio".to_owned()));
            }
            StdioState::Taken(rx) => rx.clone(),
        }
    };
    let mut closed = taken;
    // The sender never sends; `changed` fails once the connection (holding it) is dropped.
    while closed.changed().await.is_ok() {}
    Err(TransportError::Closed)
}
