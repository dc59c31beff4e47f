//! [`ByteStream`]: the raw, unframed byte stream under a [`Connection`](crate::Connection).

use std::fmt;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What a [`ByteStream`] can hold.
trait DuplexIo: AsyncRead + AsyncWrite + Send + 'static {}

impl<T: AsyncRead + AsyncWrite + Send + 'static> DuplexIo for T {}

/// Any bidirectional byte stream, type-erased: a TCP or Unix socket, a named pipe, a process's
/// stdin/stdout pair, a `tokio::io::duplex` half, or anything else that is
/// [`AsyncRead`] + [`AsyncWrite`] + [`Send`].
///
/// A [`Connection`](crate::Connection) frames one; [`Listener::accept_stream`](crate::Listener::accept_stream)
/// and [`connect_stream`](crate::connect_stream) hand one out unframed.
///
/// ```
/// use gabp_transport::ByteStream;
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let (a, b) = tokio::io::duplex(64);
/// let (mut a, mut b) = (ByteStream::new(a), ByteStream::new(b));
/// a.write_all(b"ping").await?;
/// let mut buf = [0u8; 4];
/// b.read_exact(&mut buf).await?;
/// assert_eq!(&buf, b"ping");
/// # Ok(())
/// # }
/// ```
pub struct ByteStream {
    io: Pin<Box<dyn DuplexIo>>,
}

impl ByteStream {
    /// Erase the type of `io`.
    pub fn new<S>(io: S) -> Self
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        ByteStream { io: Box::pin(io) }
    }

    /// Erase the type of `io`, keeping `guard` alive exactly as long as the stream (its `Drop` runs
    /// when the stream, or both halves of a split stream, are dropped).
    pub(crate) fn with_guard<S, G>(io: S, guard: G) -> Self
    where
        S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
        G: Send + Unpin + 'static,
    {
        ByteStream::new(Guarded { io, _guard: guard })
    }
}

impl fmt::Debug for ByteStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ByteStream").finish_non_exhaustive()
    }
}

impl AsyncRead for ByteStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.io.as_mut().poll_read(cx, buf)
    }
}

impl AsyncWrite for ByteStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.io.as_mut().poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io.as_mut().poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io.as_mut().poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.io.as_mut().poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

/// A stream that owns something whose `Drop` matters (a child-killer, a "closed" signal).
struct Guarded<S, G> {
    io: S,
    _guard: G,
}

impl<S: AsyncRead + Unpin, G: Unpin> AsyncRead for Guarded<S, G> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin, G: Unpin> AsyncWrite for Guarded<S, G> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}
