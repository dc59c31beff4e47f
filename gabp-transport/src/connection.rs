//! [`Connection`]: a framed GABP connection over any byte stream.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::{Sink, Stream};
use gabp_codec::{Frame, FrameCodec, FrameError};
use tokio::io::{AsyncRead, AsyncWrite, ReadHalf, WriteHalf};
use tokio_util::codec::{Framed, FramedParts, FramedWrite};

use crate::stream::ByteStream;

/// A framed GABP connection: `Content-Length` frames ([`gabp_codec::FrameCodec`]) over a
/// [`ByteStream`].
///
/// It is a [`Stream`] of `Result<Frame, FrameError>` (a body, or a recoverable
/// [`Frame::Oversized`] notice; an `Err` is fatal and ends the stream) and a [`Sink`] of
/// [`Bytes`] (a body; the codec writes the header). Every transport yields one:
/// [`Listener::accept`](crate::Listener::accept), [`connect`](crate::connect) and
/// [`spawn`](crate::spawn); [`Connection::new`] is the adapter for any other
/// [`AsyncRead`] + [`AsyncWrite`], such as a `tokio::io::duplex` pair.
///
/// Reading is cancel-safe: a `next()` dropped inside `tokio::select!` loses nothing, because all
/// decoding progress lives in the codec.
///
/// ```
/// use bytes::Bytes;
/// use futures::{SinkExt, StreamExt};
/// use gabp_transport::{Connection, Frame};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (a, b) = tokio::io::duplex(4096);
/// let (mut bridge, mut game) = (Connection::new(a), Connection::new(b));
///
/// bridge.send(Bytes::from_static(br#"{"v":"gabp/1"}"#)).await?;
/// let frame = game.next().await.transpose()?;
/// assert_eq!(frame, Some(Frame::Body(r#"{"v":"gabp/1"}"#.into())));
/// # Ok(())
/// # }
/// ```
pub struct Connection {
    framed: Framed<ByteStream, FrameCodec>,
    peer: String,
}

impl Connection {
    /// Frame any byte stream with the default codec limits (1 MiB bodies, 8 KiB headers).
    pub fn new<S>(io: S) -> Self
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        Self::with_codec(io, FrameCodec::new())
    }

    /// Frame any byte stream with the given codec (and so its limits).
    pub fn with_codec<S>(io: S, codec: FrameCodec) -> Self
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        Self::from_stream(ByteStream::new(io), codec, "stream".to_owned())
    }

    pub(crate) fn from_stream(stream: ByteStream, codec: FrameCodec, peer: String) -> Self {
        Connection {
            framed: Framed::new(stream, codec),
            peer,
        }
    }

    /// The same connection with `peer` as its description (for logs and spans).
    #[must_use]
    pub fn with_peer(mut self, peer: impl Into<String>) -> Self {
        self.peer = peer.into();
        self
    }

    /// Who is at the other end, for logs and spans: `tcp://127.0.0.1:50312`,
    /// `unix:///run/gabp.sock`, `stdio`, `child process 4242`, or `stream` for the adapter.
    #[must_use]
    pub fn peer(&self) -> &str {
        &self.peer
    }

    /// The codec, with its limits.
    #[must_use]
    pub fn codec(&self) -> &FrameCodec {
        self.framed.codec()
    }

    /// The codec, mutably. Replace it only before the first frame is read: the codec holds the
    /// decoding state.
    pub fn codec_mut(&mut self) -> &mut FrameCodec {
        self.framed.codec_mut()
    }

    /// Split into a reading half and a writing half that can live in different tasks (DESIGN's
    /// "one reader, one writer"). Bytes already read but not yet decoded move to the reader; bytes
    /// queued but not yet written move to the writer; nothing is lost.
    #[must_use]
    pub fn into_split(self) -> (FrameReader, FrameWriter) {
        let parts = self.framed.into_parts();
        let (read_half, write_half) = tokio::io::split(parts.io);
        // `Framed::from_parts` (unlike `FramedRead::new`) decodes bytes already buffered before it
        // reads again.
        let mut read_parts = FramedParts::new::<Bytes>(read_half, parts.codec.clone());
        read_parts.read_buf = parts.read_buf;
        let reader = Framed::from_parts(read_parts);
        let mut writer = FramedWrite::new(write_half, parts.codec);
        writer
            .write_buffer_mut()
            .extend_from_slice(&parts.write_buf);
        (
            FrameReader {
                inner: reader,
                peer: self.peer.clone(),
            },
            FrameWriter {
                inner: writer,
                peer: self.peer,
            },
        )
    }

    /// The underlying tokio-util [`Framed`].
    #[must_use]
    pub fn into_framed(self) -> Framed<ByteStream, FrameCodec> {
        self.framed
    }
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("peer", &self.peer)
            .field("codec", self.framed.codec())
            .finish_non_exhaustive()
    }
}

impl Stream for Connection {
    type Item = Result<Frame, FrameError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.framed).poll_next(cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.framed.size_hint()
    }
}

impl Sink<Bytes> for Connection {
    type Error = FrameError;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), FrameError>> {
        Sink::<Bytes>::poll_ready(Pin::new(&mut self.framed), cx)
    }

    fn start_send(mut self: Pin<&mut Self>, body: Bytes) -> Result<(), FrameError> {
        Pin::new(&mut self.framed).start_send(body)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), FrameError>> {
        Sink::<Bytes>::poll_flush(Pin::new(&mut self.framed), cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), FrameError>> {
        Sink::<Bytes>::poll_close(Pin::new(&mut self.framed), cx)
    }
}

/// The reading half of a [`Connection`], from [`Connection::into_split`]: a [`Stream`] of
/// `Result<Frame, FrameError>`, exactly as the connection was.
pub struct FrameReader {
    inner: Framed<ReadHalf<ByteStream>, FrameCodec>,
    peer: String,
}

impl FrameReader {
    /// Who is at the other end (see [`Connection::peer`]).
    #[must_use]
    pub fn peer(&self) -> &str {
        &self.peer
    }

    /// The codec, with its limits.
    #[must_use]
    pub fn codec(&self) -> &FrameCodec {
        self.inner.codec()
    }
}

impl fmt::Debug for FrameReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameReader")
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

impl Stream for FrameReader {
    type Item = Result<Frame, FrameError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.inner).poll_next(cx)
    }
}

/// The writing half of a [`Connection`], from [`Connection::into_split`]: a [`Sink`] of frame
/// bodies ([`Bytes`]).
pub struct FrameWriter {
    inner: FramedWrite<WriteHalf<ByteStream>, FrameCodec>,
    peer: String,
}

impl FrameWriter {
    /// Who is at the other end (see [`Connection::peer`]).
    #[must_use]
    pub fn peer(&self) -> &str {
        &self.peer
    }

    /// The codec, with its limits.
    #[must_use]
    pub fn codec(&self) -> &FrameCodec {
        self.inner.encoder()
    }
}

impl fmt::Debug for FrameWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameWriter")
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

impl Sink<Bytes> for FrameWriter {
    type Error = FrameError;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), FrameError>> {
        Sink::<Bytes>::poll_ready(Pin::new(&mut self.inner), cx)
    }

    fn start_send(mut self: Pin<&mut Self>, body: Bytes) -> Result<(), FrameError> {
        Pin::new(&mut self.inner).start_send(body)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), FrameError>> {
        Sink::<Bytes>::poll_flush(Pin::new(&mut self.inner), cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), FrameError>> {
        Sink::<Bytes>::poll_close(Pin::new(&mut self.inner), cx)
    }
}
