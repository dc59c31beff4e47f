//! The bridge side: [`connect`] to a listening mod, or [`spawn`] one and talk over its stdio.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use gabp_codec::{FrameCodec, DEFAULT_MAX_BODY_SIZE};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::process::{ChildStdin, ChildStdout, Command};

use crate::connection::Connection;
use crate::endpoint::{check_loopback, Endpoint};
use crate::error::TransportError;
use crate::process::ModProcess;
use crate::stream::ByteStream;
use crate::ws::WsSettings;

/// Connect to a mod listening at `endpoint` and frame the connection.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), gabp_transport::TransportError> {
/// use gabp_transport::{connect, Endpoint, Listener};
///
/// let listener = Listener::bind(&Endpoint::tcp_v4(0)).await?;
/// let bridge = connect(listener.endpoint()).await?;
/// let game = listener.accept().await?;
/// assert!(bridge.peer().starts_with("tcp://127.0.0.1:"));
/// # drop(game);
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// As [`connect_stream`].
pub async fn connect(endpoint: &Endpoint) -> Result<Connection, TransportError> {
    let stream = connect_stream(endpoint).await?;
    tracing::debug!(%endpoint, "connected");
    Ok(Connection::from_stream(
        stream,
        FrameCodec::new(),
        endpoint.to_string(),
    ))
}

/// Connect to a mod listening at `endpoint` and return the raw, unframed byte stream.
///
/// TCP and WebSocket refuse any address that is not loopback and set `TCP_NODELAY`; a WebSocket
/// is opened with the default [`WsSettings`] (see [`connect_with`]) and read and written as
/// `Content-Length` frames. A Unix socket served by
/// another user is refused before anything is sent ([`TransportError::ForeignPeer`]): the bridge
/// is about to send its token. A busy named pipe is retried for about five seconds.
///
/// # Errors
///
/// - [`TransportError::NotLoopback`] for a TCP address that is not loopback;
/// - [`TransportError::Unsupported`] for `stdio` (use [`spawn`]) and for a transport this platform
///   lacks;
/// - [`TransportError::ForeignPeer`] for a Unix socket of another user;
/// - [`TransportError::Io`] when the system refuses (nobody listening, no such socket, …).
pub async fn connect_stream(endpoint: &Endpoint) -> Result<ByteStream, TransportError> {
    match endpoint {
        Endpoint::Tcp(addr) => {
            check_loopback(addr)?;
            let stream = tokio::net::TcpStream::connect(addr)
                .await
                .map_err(|e| TransportError::io("connect to", endpoint, e))?;
            if let Err(e) = stream.set_nodelay(true) {
                tracing::debug!(error = %e, "cannot set TCP_NODELAY");
            }
            Ok(ByteStream::new(stream))
        }
        #[cfg(unix)]
        Endpoint::Unix(path) => crate::unix_socket::connect(path).await,
        #[cfg(not(unix))]
        Endpoint::Unix(_) => Err(TransportError::Unsupported {
            endpoint: endpoint.to_string(),
            reason: "Unix sockets are not supported on this platform; use pipe://NAME",
        }),
        #[cfg(windows)]
        Endpoint::Pipe(name) => crate::pipe::connect(name).await,
        #[cfg(not(windows))]
        Endpoint::Pipe(_) => Err(TransportError::Unsupported {
            endpoint: endpoint.to_string(),
            reason: "named pipes exist only on Windows; use unix:///path.sock",
        }),
        Endpoint::Stdio => Err(TransportError::Unsupported {
            endpoint: endpoint.to_string(),
            reason: "there is nothing to connect to; use spawn() to start the mod and talk over \
                     its stdin/stdout",
        }),
        Endpoint::WebSocket(addr) => {
            crate::ws::connect(*addr, &WsSettings::default(), DEFAULT_MAX_BODY_SIZE).await
        }
    }
}

/// [`connect`], with WebSocket `settings` (ping interval and timeout, a token sent at the
/// handshake) for a `ws://` endpoint; other transports ignore them.
///
/// # Errors
///
/// As [`connect_stream`]; a WebSocket handshake the mod refuses (a wrong token, an origin not
/// allowed) is a [`TransportError::Io`] of kind `PermissionDenied` naming the HTTP status.
pub async fn connect_with(
    endpoint: &Endpoint,
    settings: &WsSettings,
) -> Result<Connection, TransportError> {
    let stream = match endpoint {
        Endpoint::WebSocket(addr) => {
            crate::ws::connect(*addr, settings, DEFAULT_MAX_BODY_SIZE).await?
        }
        _ => connect_stream(endpoint).await?,
    };
    tracing::debug!(%endpoint, "connected");
    Ok(Connection::from_stream(
        stream,
        FrameCodec::new(),
        endpoint.to_string(),
    ))
}

/// Start a mod process and talk to it over its stdin and stdout.
///
/// The command's stdin and stdout are replaced by pipes (the returned [`Connection`]); its stderr
/// is left as configured: inherited (passed through) by default, or captured when the command was
/// given `Stdio::piped()`, in which case [`ModProcess::take_stderr`] hands it out. The child runs in
/// a process group of its own (see [`ModProcess`]); the whole group is killed when the connection
/// is dropped (both halves, if split), on [`ModProcess::kill`], or when the runtime shuts down;
/// [`ModProcess::wait`] observes the child's exit status. For a graceful stop, close the
/// connection's sink (the child sees end of input) and wait.
///
/// Takes a [`tokio::process::Command`] or a [`std::process::Command`]. Must be called inside a
/// Tokio runtime.
///
/// `cat` copies its stdin to its stdout, so it makes a perfect echoing "mod":
///
/// ```
/// # #[cfg(unix)]
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use bytes::Bytes;
/// use futures::{SinkExt, StreamExt};
///
/// let (mut conn, mut process) = gabp_transport::spawn(std::process::Command::new("cat"))?;
/// conn.send(Bytes::from_static(br#"{"v":"gabp/1"}"#)).await?;
/// let echoed = conn.next().await.transpose()?.and_then(|frame| frame.into_body());
/// assert_eq!(echoed.as_deref(), Some(&br#"{"v":"gabp/1"}"#[..]));
///
/// conn.close().await?; // end of input: the mod exits
/// assert!(process.wait().await?.success());
/// # Ok(())
/// # }
/// # #[cfg(not(unix))]
/// # fn main() {}
/// ```
///
/// # Errors
///
/// [`TransportError::NoRuntime`] outside a Tokio runtime; [`TransportError::Io`] when the program
/// cannot be started.
pub fn spawn(command: impl Into<Command>) -> Result<(Connection, ModProcess), TransportError> {
    let mut command: Command = command.into();
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut process = ModProcess::start_as(command, "gabp_transport::spawn")?;
    let missing = |what, program: &str| {
        TransportError::io(
            "take the stdio pipes of",
            program,
            io::Error::other(format!("the child has no {what} pipe")),
        )
    };
    let stdin = process
        .take_stdin()
        .ok_or_else(|| missing("stdin", process.program()))?;
    let stdout = process
        .take_stdout()
        .ok_or_else(|| missing("stdout", process.program()))?;
    let peer = match process.id() {
        Some(pid) => format!("child process {pid}"),
        None => "child process".to_owned(),
    };
    let pipes = ChildPipes {
        stdout,
        stdin: Some(stdin),
    };
    // The connection, not the returned process, keeps the child alive.
    let stream = match process.take_end_on_drop() {
        Some(guard) => ByteStream::with_guard(pipes, guard),
        None => ByteStream::new(pipes),
    };
    let connection = Connection::from_stream(stream, FrameCodec::new(), peer);
    Ok((connection, process))
}

/// The child's stdout (to read) and stdin (to write). Shutting the writing side down closes the
/// child's stdin, so it sees end of input; tokio's own `ChildStdin` shutdown leaves the pipe open.
struct ChildPipes {
    stdout: ChildStdout,
    stdin: Option<ChildStdin>,
}

impl ChildPipes {
    fn stdin(&mut self) -> io::Result<Pin<&mut ChildStdin>> {
        self.stdin.as_mut().map(Pin::new).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the child's stdin was closed by a shutdown",
            )
        })
    }
}

impl AsyncRead for ChildPipes {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stdout).poll_read(cx, buf)
    }
}

impl AsyncWrite for ChildPipes {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut().stdin() {
            Ok(stdin) => stdin.poll_write(cx, buf),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut().stdin() {
            Ok(stdin) => stdin.poll_write_vectored(cx, bufs),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.stdin
            .as_ref()
            .is_some_and(AsyncWrite::is_write_vectored)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().stdin {
            Some(stdin) => Pin::new(stdin).poll_flush(cx),
            None => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(stdin) = &mut this.stdin {
            if let Poll::Ready(Err(e)) = Pin::new(stdin).poll_flush(cx) {
                this.stdin = None;
                return Poll::Ready(Err(e));
            }
        }
        // Dropping the pipe closes it.
        this.stdin = None;
        Poll::Ready(Ok(()))
    }
}
