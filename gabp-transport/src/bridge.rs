//! The bridge side: [`connect`] to a listening mod, or [`spawn`] one and talk over its stdio.

use std::fmt;
use std::io;
use std::process::ExitStatus;
use std::sync::Arc;

use gabp_codec::FrameCodec;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{oneshot, watch, Notify};

use crate::connection::Connection;
use crate::endpoint::{check_loopback, Endpoint};
use crate::error::TransportError;
use crate::stream::ByteStream;

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
/// TCP refuses any address that is not loopback and sets `TCP_NODELAY`. A Unix socket served by
/// another user is refused before anything is sent ([`TransportError::ForeignPeer`]): the bridge
/// is about to send its token. A busy named pipe is retried for about five seconds.
///
/// # Errors
///
/// - [`TransportError::Endpoint`] for a TCP address that is not loopback;
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
    }
}

/// Start a mod process and talk to it over its stdin and stdout.
///
/// The command's stdin and stdout are replaced by pipes (the returned [`Connection`]); its stderr
/// is left as configured: inherited (passed through) by default, or captured when the command was
/// given `Stdio::piped()`, in which case [`ModProcess::take_stderr`] hands it out. The child is
/// killed when the connection is dropped (both halves, if split), or when the runtime shuts down;
/// [`ModProcess::wait`] observes its exit status. For a graceful stop, close the connection's
/// sink (the child sees end of input) and wait.
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
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|_| TransportError::NoRuntime("gabp_transport::spawn"))?;
    let mut command: Command = command.into();
    let program = command
        .as_std()
        .get_program()
        .to_string_lossy()
        .into_owned();
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .map_err(|e| TransportError::io("start", &program, e))?;
    let pid = child.id();
    let missing = |what| {
        TransportError::io(
            "take the stdio pipes of",
            &program,
            io::Error::other(format!("the child has no {what} pipe")),
        )
    };
    let stdin = child.stdin.take().ok_or_else(|| missing("stdin"))?;
    let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
    let stderr = child.stderr.take();

    let (drop_tx, drop_rx) = oneshot::channel::<()>();
    let (status_tx, status_rx) = watch::channel(None);
    let kill = Arc::new(Notify::new());
    let kill_requested = Arc::clone(&kill);
    runtime.spawn(async move {
        let outcome = tokio::select! {
            status = child.wait() => status,
            // The connection was dropped (the sender is never used otherwise), or kill() was called.
            _ = drop_rx => { let _ = child.start_kill(); child.wait().await }
            () = kill_requested.notified() => { let _ = child.start_kill(); child.wait().await }
        };
        let outcome = outcome.map_err(|e| (e.kind(), e.to_string()));
        status_tx.send_replace(Some(outcome));
    });

    let peer = match pid {
        Some(pid) => format!("child process {pid}"),
        None => "child process".to_owned(),
    };
    tracing::debug!(%program, ?pid, "spawned a mod process");
    let pipes = ChildPipes {
        stdout,
        stdin: Some(stdin),
    };
    let stream = ByteStream::with_guard(pipes, KillOnDrop(drop_tx));
    let connection = Connection::from_stream(stream, FrameCodec::new(), peer);
    let process = ModProcess {
        pid,
        program,
        status: status_rx,
        kill,
        stderr,
    };
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

/// Kills the child when dropped: dropping the sender wakes the supervisor task.
struct KillOnDrop(#[allow(dead_code)] oneshot::Sender<()>);

type Outcome = Option<Result<ExitStatus, (io::ErrorKind, String)>>;

/// A mod process started by [`spawn`]: its id, its exit status, and its stderr if captured.
///
/// Dropping a `ModProcess` does not kill the child; dropping its [`Connection`] does.
pub struct ModProcess {
    pid: Option<u32>,
    program: String,
    status: watch::Receiver<Outcome>,
    kill: Arc<Notify>,
    stderr: Option<ChildStderr>,
}

impl ModProcess {
    /// The child's process id, if it had one when it was started.
    #[must_use]
    pub fn id(&self) -> Option<u32> {
        self.pid
    }

    /// The child's stderr, if the command was given `Stdio::piped()` for it (once).
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.stderr.take()
    }

    /// Ask for the child to be killed now. Returns at once; [`ModProcess::wait`] sees the result.
    pub fn kill(&self) {
        self.kill.notify_one();
    }

    /// The exit status, if the child has exited.
    #[must_use]
    pub fn try_status(&self) -> Option<ExitStatus> {
        match &*self.status.borrow() {
            Some(Ok(status)) => Some(*status),
            _ => None,
        }
    }

    /// Wait until the child has exited and return its status. Cancel-safe.
    ///
    /// # Errors
    ///
    /// [`TransportError::Io`] if waiting for the child failed, or if the runtime shut down before
    /// the child's exit was seen (the child is killed then).
    pub async fn wait(&mut self) -> Result<ExitStatus, TransportError> {
        let outcome = self
            .status
            .wait_for(Option::is_some)
            .await
            .map(|o| o.clone())
            .map_err(|_| {
                TransportError::io(
                    "wait for",
                    &self.program,
                    io::Error::other("the runtime shut down before the child exited"),
                )
            })?;
        match outcome {
            Some(Ok(status)) => Ok(status),
            Some(Err((kind, message))) => Err(TransportError::io(
                "wait for",
                &self.program,
                io::Error::new(kind, message),
            )),
            None => Err(TransportError::io(
                "wait for",
                &self.program,
                io::Error::other("no exit status"),
            )),
        }
    }
}

impl fmt::Debug for ModProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModProcess")
            .field("pid", &self.pid)
            .field("program", &self.program)
            .field("status", &self.try_status())
            .finish_non_exhaustive()
    }
}
