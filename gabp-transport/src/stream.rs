//! [`ByteStream`]: the raw, unframed byte stream under a [`Connection`](crate::Connection).

use std::any::Any;
use std::fmt;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::tcp;
use tokio::net::TcpStream;
#[cfg(unix)]
use tokio::net::{unix, UnixStream};

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
    io: Io,
}

/// TCP and Unix sockets are kept as themselves, so that [`ByteStream::split`] can split them without a
/// lock; anything else is boxed.
enum Io {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(UnixStream),
    Other(Pin<Box<dyn DuplexIo>>),
}

impl ByteStream {
    /// Erase the type of `io`.
    pub fn new<S>(io: S) -> Self
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let mut io = Some(io);
        let any: &mut dyn Any = &mut io;
        if let Some(stream) = any
            .downcast_mut::<Option<ByteStream>>()
            .and_then(Option::take)
        {
            return stream;
        }
        if let Some(tcp) = any
            .downcast_mut::<Option<TcpStream>>()
            .and_then(Option::take)
        {
            return ByteStream { io: Io::Tcp(tcp) };
        }
        #[cfg(unix)]
        if let Some(unix) = any
            .downcast_mut::<Option<UnixStream>>()
            .and_then(Option::take)
        {
            return ByteStream { io: Io::Unix(unix) };
        }
        match io {
            Some(io) => ByteStream {
                io: Io::Other(Box::pin(io)),
            },
            // Only a successful downcast takes the value, and it returns.
            None => unreachable!("the stream was taken by a downcast that did not return"),
        }
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

    /// Splits into a reading and a writing half that can be used from different tasks at once.
    ///
    /// TCP and Unix sockets split natively (`into_split`): reading and writing never wait for each other.
    /// Any other stream goes through [`tokio::io::split`], whose halves share the stream behind a mutex,
    /// so a write waits while a read is in progress on another thread and the other way round (on a
    /// multi-threaded runtime that costs a futex wait and wake, and two context switches, whenever they
    /// meet). Either way the halves behave the same: the stream is closed when both are dropped, and only
    /// [`AsyncWrite::poll_shutdown`] on the writing half shuts down the writing direction before that.
    pub(crate) fn split(self) -> (ReadPart, WritePart) {
        match self.io {
            Io::Tcp(tcp) => {
                let (read, write) = tcp.into_split();
                (ReadPart::Tcp(read), WritePart(Some(WriteKind::Tcp(write))))
            }
            #[cfg(unix)]
            Io::Unix(unix) => {
                let (read, write) = unix.into_split();
                (
                    ReadPart::Unix(read),
                    WritePart(Some(WriteKind::Unix(write))),
                )
            }
            Io::Other(_) => {
                let (read, write) = tokio::io::split(self);
                (
                    ReadPart::Other(read),
                    WritePart(Some(WriteKind::Other(write))),
                )
            }
        }
    }

    fn io(self: Pin<&mut Self>) -> Pin<&mut dyn DuplexIo> {
        match &mut self.get_mut().io {
            Io::Tcp(tcp) => Pin::<&mut TcpStream>::new(tcp),
            #[cfg(unix)]
            Io::Unix(unix) => Pin::<&mut UnixStream>::new(unix),
            Io::Other(other) => other.as_mut(),
        }
    }

    fn io_ref(&self) -> &dyn DuplexIo {
        match &self.io {
            Io::Tcp(tcp) => tcp,
            #[cfg(unix)]
            Io::Unix(unix) => unix,
            Io::Other(other) => &**other,
        }
    }
}

impl fmt::Debug for ByteStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ByteStream").finish_non_exhaustive()
    }
}

impl AsyncRead for ByteStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.io().poll_read(cx, buf)
    }
}

impl AsyncWrite for ByteStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.io().poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io().poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io().poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.io().poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io_ref().is_write_vectored()
    }
}

/// The reading half of a split [`ByteStream`].
pub(crate) enum ReadPart {
    Tcp(tcp::OwnedReadHalf),
    #[cfg(unix)]
    Unix(unix::OwnedReadHalf),
    Other(tokio::io::ReadHalf<ByteStream>),
}

impl AsyncRead for ReadPart {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ReadPart::Tcp(read) => Pin::new(read).poll_read(cx, buf),
            #[cfg(unix)]
            ReadPart::Unix(read) => Pin::new(read).poll_read(cx, buf),
            ReadPart::Other(read) => Pin::new(read).poll_read(cx, buf),
        }
    }
}

/// The writing half of a split [`ByteStream`]. Dropping it does not shut down the writing direction
/// (tokio's owned socket halves would), exactly like a [`tokio::io::split`] half: the socket closes when
/// both halves are gone.
pub(crate) struct WritePart(Option<WriteKind>);

enum WriteKind {
    Tcp(tcp::OwnedWriteHalf),
    #[cfg(unix)]
    Unix(unix::OwnedWriteHalf),
    Other(tokio::io::WriteHalf<ByteStream>),
}

impl WritePart {
    fn io(self: Pin<&mut Self>) -> Pin<&mut dyn AsyncWriteSend> {
        match self.get_mut().0.as_mut() {
            Some(WriteKind::Tcp(write)) => Pin::<&mut tcp::OwnedWriteHalf>::new(write),
            #[cfg(unix)]
            Some(WriteKind::Unix(write)) => Pin::<&mut unix::OwnedWriteHalf>::new(write),
            Some(WriteKind::Other(write)) => {
                Pin::<&mut tokio::io::WriteHalf<ByteStream>>::new(write)
            }
            // Taken only in `drop`.
            None => unreachable!("a write half used after drop"),
        }
    }
}

/// An [`AsyncWrite`] that can be a trait object here.
trait AsyncWriteSend: AsyncWrite + Send {}

impl<T: AsyncWrite + Send> AsyncWriteSend for T {}

impl Drop for WritePart {
    fn drop(&mut self) {
        match self.0.take() {
            Some(WriteKind::Tcp(write)) => write.forget(),
            #[cfg(unix)]
            Some(WriteKind::Unix(write)) => write.forget(),
            Some(WriteKind::Other(_)) | None => {}
        }
    }
}

impl AsyncWrite for WritePart {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.io().poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io().poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io().poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.io().poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        match &self.0 {
            Some(WriteKind::Tcp(write)) => write.is_write_vectored(),
            #[cfg(unix)]
            Some(WriteKind::Unix(write)) => write.is_write_vectored(),
            Some(WriteKind::Other(write)) => write.is_write_vectored(),
            None => false,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sockets_split_natively_and_other_streams_through_a_lock() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("address");
        let (client, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
        let tcp = ByteStream::new(client.expect("connect"));
        assert!(matches!(tcp.io, Io::Tcp(_)));
        assert!(matches!(tcp.split().0, ReadPart::Tcp(_)));
        drop(accepted);

        #[cfg(unix)]
        {
            let (a, _b) = UnixStream::pair().expect("pair");
            let unix = ByteStream::new(a);
            assert!(matches!(unix.io, Io::Unix(_)));
            assert!(matches!(unix.split().0, ReadPart::Unix(_)));
        }

        let (a, _b) = tokio::io::duplex(16);
        let other = ByteStream::new(a);
        assert!(matches!(other.io, Io::Other(_)));
        assert!(matches!(other.split().0, ReadPart::Other(_)));
        // A ByteStream of a ByteStream is that ByteStream (a socket still splits natively).
        let (a, _b) = tokio::io::duplex(16);
        assert!(matches!(
            ByteStream::new(ByteStream::new(a)).io,
            Io::Other(_)
        ));
        #[cfg(unix)]
        {
            let (a, _b) = UnixStream::pair().expect("pair");
            assert!(matches!(
                ByteStream::new(ByteStream::new(a)).io,
                Io::Unix(_)
            ));
        }
    }
}
