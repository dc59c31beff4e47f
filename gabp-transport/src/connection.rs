//! [`Connection`]: a framed GABP connection over any byte stream.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use futures::{Sink, Stream};
use gabp_codec::{CodecError, Frame, FrameCodec};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::{Encoder, Framed, FramedParts};

use crate::stream::{ByteStream, ReadPart, WritePart};

/// A framed GABP connection: `Content-Length` frames ([`gabp_codec::FrameCodec`]) over a
/// [`ByteStream`].
///
/// It is a [`Stream`] of `Result<Frame, CodecError>` (a body, or a recoverable
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
    /// Reading goes through `Framed`; its write buffer stays empty, writing goes through `sink`.
    framed: Framed<ByteStream, FrameCodec>,
    sink: FrameSink,
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
            sink: FrameSink::default(),
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

    /// Split into a reading half and a writing half that can live in different tasks (one reader, one
    /// writer). Bytes already read but not yet decoded move to the reader; bytes
    /// queued but not yet written move to the writer; nothing is lost.
    #[must_use]
    pub fn into_split(self) -> (FrameReader, FrameWriter) {
        let parts = self.framed.into_parts();
        let (read_half, write_half) = parts.io.split();
        // `Framed::from_parts` (unlike `FramedRead::new`) decodes bytes already buffered before it
        // reads again.
        let mut read_parts = FramedParts::new::<Bytes>(read_half, parts.codec.clone());
        read_parts.read_buf = parts.read_buf;
        (
            FrameReader {
                inner: Framed::from_parts(read_parts),
                peer: self.peer.clone(),
            },
            FrameWriter {
                io: write_half,
                codec: parts.codec,
                sink: self.sink,
                peer: self.peer,
            },
        )
    }

    /// The underlying tokio-util [`Framed`].
    #[must_use]
    pub fn into_framed(mut self) -> Framed<ByteStream, FrameCodec> {
        // Frames sent but not yet written move to the `Framed`'s write buffer, in order.
        self.sink.drain_into(self.framed.write_buffer_mut());
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
    type Item = Result<Frame, CodecError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.framed).poll_next(cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.framed.size_hint()
    }
}

impl Sink<Bytes> for Connection {
    type Error = CodecError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), CodecError>> {
        let this = self.get_mut();
        this.sink
            .poll_ready(Pin::new(this.framed.get_mut()), cx)
            .map_err(CodecError::from)
    }

    fn start_send(self: Pin<&mut Self>, body: Bytes) -> Result<(), CodecError> {
        let this = self.get_mut();
        this.sink.start_send(this.framed.codec_mut(), body)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), CodecError>> {
        let this = self.get_mut();
        this.sink
            .poll_flush(Pin::new(this.framed.get_mut()), cx)
            .map_err(CodecError::from)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), CodecError>> {
        let this = self.get_mut();
        this.sink
            .poll_close(Pin::new(this.framed.get_mut()), cx)
            .map_err(CodecError::from)
    }
}

/// The reading half of a [`Connection`], from [`Connection::into_split`]: a [`Stream`] of
/// `Result<Frame, CodecError>`, exactly as the connection was.
pub struct FrameReader {
    inner: Framed<ReadPart, FrameCodec>,
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

    /// Bytes already read from the stream and not yet returned as frames (the start of a frame, or frames that
    /// arrived together): while there are some, the next [`poll_next`](Stream::poll_next) may yield a frame
    /// without waiting for the stream.
    #[must_use]
    pub fn buffered_len(&self) -> usize {
        self.inner.read_buffer().len()
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
    type Item = Result<Frame, CodecError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.inner).poll_next(cx)
    }
}

/// The writing half of a [`Connection`], from [`Connection::into_split`]: a [`Sink`] of frame
/// bodies ([`Bytes`]).
pub struct FrameWriter {
    io: WritePart,
    codec: FrameCodec,
    sink: FrameSink,
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
        &self.codec
    }
}

impl FrameWriter {
    /// Whether a frame is taken now without writing first: what [`Sink::poll_ready`] answers at once.
    #[must_use]
    pub fn has_room(&self) -> bool {
        self.sink.has_room()
    }

    /// Queues `body` as one frame behind the frames already queued, as [`Sink::start_send`] does with a
    /// [`Bytes`]: for a body that lies in a scratch buffer, which then needs no [`Bytes`] of its own unless it is
    /// large. Meant for while [`FrameWriter::has_room`]; without room the frame is still queued in order, and
    /// the buffer grows past its mark.
    ///
    /// # Errors
    ///
    /// [`CodecError::BodyTooLarge`] for a body over the codec's limit; nothing is queued then.
    pub fn start_send_slice(&mut self, body: &[u8]) -> Result<(), CodecError> {
        self.sink.start_send_slice(&mut self.codec, body)
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
    type Error = CodecError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), CodecError>> {
        let this = self.get_mut();
        this.sink
            .poll_ready(Pin::new(&mut this.io), cx)
            .map_err(CodecError::from)
    }

    fn start_send(self: Pin<&mut Self>, body: Bytes) -> Result<(), CodecError> {
        let this = self.get_mut();
        this.sink.start_send(&mut this.codec, body)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), CodecError>> {
        let this = self.get_mut();
        this.sink
            .poll_flush(Pin::new(&mut this.io), cx)
            .map_err(CodecError::from)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), CodecError>> {
        let this = self.get_mut();
        this.sink
            .poll_close(Pin::new(&mut this.io), cx)
            .map_err(CodecError::from)
    }
}

/// Bodies up to this size are copied, with their header, into one buffer (one write for several
/// small frames); larger ones are written from their own [`Bytes`] without a copy.
const COPY_LIMIT: usize = 16 * 1024;

/// Buffered bytes beyond which `poll_ready` writes before accepting another frame.
const HIGH_WATER: usize = 64 * 1024;

/// The writing state of a connection: coalesced small frames and headers in `buf`, then at most
/// one large body written straight from its `Bytes` (vectored with `buf` when the stream can).
#[derive(Default)]
struct FrameSink {
    buf: BytesMut,
    body: Option<Bytes>,
}

impl FrameSink {
    fn pending(&self) -> bool {
        !self.buf.is_empty() || self.body.is_some()
    }

    fn has_room(&self) -> bool {
        self.body.is_none() && self.buf.len() < HIGH_WATER
    }

    fn poll_ready<W: AsyncWrite + ?Sized>(
        &mut self,
        io: Pin<&mut W>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        if self.has_room() {
            Poll::Ready(Ok(()))
        } else {
            self.poll_write_out(io, cx)
        }
    }

    /// Queue one frame. Call only after `poll_ready` returned `Ready(Ok)`.
    fn start_send(&mut self, codec: &mut FrameCodec, body: Bytes) -> Result<(), CodecError> {
        self.queue_behind_held();
        if body.len() <= COPY_LIMIT {
            // The codec writes the frame exactly (and checks the limit).
            return codec.encode(body, &mut self.buf);
        }
        // The codec writes the header (and checks the limit); the body stays in its own `Bytes`.
        codec.encode_header(body.len(), &mut self.buf)?;
        self.body = Some(body);
        Ok(())
    }

    /// Queue one frame from a slice: copied into `buf` unless it is large.
    fn start_send_slice(&mut self, codec: &mut FrameCodec, body: &[u8]) -> Result<(), CodecError> {
        if body.len() > COPY_LIMIT {
            return self.start_send(codec, Bytes::copy_from_slice(body));
        }
        self.queue_behind_held();
        codec.encode_body(body, &mut self.buf)
    }

    /// A large body still held on its own moves into `buf`, so that a frame queued now follows it (SPEC/1.0
    /// transport.md §1.1: frames never interleave). Only without room, which `poll_ready` rules out.
    fn queue_behind_held(&mut self) {
        if let Some(held) = self.body.take() {
            self.buf.extend_from_slice(&held);
        }
    }

    /// Write everything queued, in order.
    fn poll_write_out<W: AsyncWrite + ?Sized>(
        &mut self,
        mut io: Pin<&mut W>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        while self.pending() {
            let written = match &mut self.body {
                Some(body) if !self.buf.is_empty() && io.is_write_vectored() => {
                    let slices = [io::IoSlice::new(&self.buf), io::IoSlice::new(body)];
                    ready!(io.as_mut().poll_write_vectored(cx, &slices))?
                }
                _ if !self.buf.is_empty() => ready!(io.as_mut().poll_write(cx, &self.buf))?,
                Some(body) => ready!(io.as_mut().poll_write(cx, body))?,
                None => break,
            };
            if written == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            let from_buf = written.min(self.buf.len());
            self.buf.advance(from_buf);
            if let Some(body) = &mut self.body {
                body.advance(written - from_buf);
                if body.is_empty() {
                    self.body = None;
                }
            }
        }
        Poll::Ready(Ok(()))
    }

    fn poll_flush<W: AsyncWrite + ?Sized>(
        &mut self,
        mut io: Pin<&mut W>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        ready!(self.poll_write_out(io.as_mut(), cx))?;
        io.poll_flush(cx)
    }

    fn poll_close<W: AsyncWrite + ?Sized>(
        &mut self,
        mut io: Pin<&mut W>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        ready!(self.poll_flush(io.as_mut(), cx))?;
        io.poll_shutdown(cx)
    }

    /// Move everything queued into `dst`, in order.
    fn drain_into(&mut self, dst: &mut BytesMut) {
        dst.extend_from_slice(&self.buf);
        self.buf.clear();
        if let Some(body) = self.body.take() {
            dst.extend_from_slice(&body);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn buffered_counts_what_was_read_and_not_yet_returned() {
        use futures::{SinkExt, StreamExt};
        let (a, b) = tokio::io::duplex(4096);
        let (mut sender, (mut reader, _writer)) =
            (Connection::new(a), Connection::new(b).into_split());
        assert_eq!(reader.buffered_len(), 0);
        sender.feed(Bytes::from_static(b"{}")).await.expect("feed");
        sender.feed(Bytes::from_static(b"[1]")).await.expect("feed");
        sender.flush().await.expect("flush");
        // Both frames arrive in one read; the second stays buffered until it is asked for.
        let first = reader.next().await.expect("a frame").expect("valid");
        assert_eq!(first.into_body().as_deref(), Some(&b"{}"[..]));
        let mut second_frame = BytesMut::new();
        FrameCodec::new()
            .encode(Bytes::from_static(b"[1]"), &mut second_frame)
            .expect("within the limit");
        assert_eq!(reader.buffered_len(), second_frame.len());
        let second = reader.next().await.expect("a frame").expect("valid");
        assert_eq!(second.into_body().as_deref(), Some(&b"[1]"[..]));
        assert_eq!(reader.buffered_len(), 0);
    }

    #[test]
    fn queued_frames_match_the_codec() {
        // Both paths: copied with its header (up to COPY_LIMIT), and header plus separate body.
        for len in [0usize, 1, 9, 10, 99, 100, 16_384, 16_385, 65_536, 1_048_576] {
            let body = Bytes::from(vec![b'x'; len]);
            let mut sink = FrameSink::default();
            sink.start_send(&mut FrameCodec::new(), body.clone())
                .expect("within the limit");
            assert_eq!(sink.body.is_some(), len > COPY_LIMIT, "len {len}");
            let mut queued = BytesMut::new();
            sink.drain_into(&mut queued);
            let mut encoded = BytesMut::new();
            FrameCodec::new()
                .encode(body, &mut encoded)
                .expect("within the limit");
            assert!(queued == encoded, "len {len}");
        }
    }

    /// A writer that accepts at most `step` bytes per call and records what it got.
    struct Trickle {
        step: usize,
        vectored: bool,
        out: Vec<u8>,
    }

    impl AsyncWrite for Trickle {
        fn poll_write(
            self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let this = self.get_mut();
            let n = buf.len().min(this.step);
            this.out.extend_from_slice(&buf[..n]);
            Poll::Ready(Ok(n))
        }

        fn poll_write_vectored(
            self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            bufs: &[io::IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            let this = self.get_mut();
            let mut left = this.step;
            let mut n = 0;
            for b in bufs {
                let take = b.len().min(left);
                this.out.extend_from_slice(&b[..take]);
                left -= take;
                n += take;
            }
            Poll::Ready(Ok(n))
        }

        fn is_write_vectored(&self) -> bool {
            self.vectored
        }

        fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[test]
    fn partial_writes_keep_every_byte_in_order() {
        let bodies: Vec<Bytes> = [3usize, 70_000, 5, 20_000, 16_384, 16_385]
            .iter()
            .enumerate()
            .map(|(i, &n)| Bytes::from(vec![b'a' + i as u8; n]))
            .collect();
        let mut expected = BytesMut::new();
        for b in &bodies {
            FrameCodec::new()
                .encode(b.clone(), &mut expected)
                .expect("encode");
        }
        for vectored in [false, true] {
            for step in [1usize, 7, 4096, 1 << 20] {
                let mut w = Trickle {
                    step,
                    vectored,
                    out: Vec::new(),
                };
                let mut sink = FrameSink::default();
                let mut codec = FrameCodec::new();
                let waker = futures::task::noop_waker();
                let mut cx = Context::from_waker(&waker);
                for b in &bodies {
                    assert!(sink.poll_ready(Pin::new(&mut w), &mut cx).is_ready());
                    sink.start_send(&mut codec, b.clone()).expect("send");
                }
                assert!(matches!(
                    sink.poll_flush(Pin::new(&mut w), &mut cx),
                    Poll::Ready(Ok(()))
                ));
                assert!(!sink.pending());
                assert!(w.out == expected[..], "vectored {vectored}, step {step}");
            }
        }
    }

    #[test]
    fn oversized_bodies_are_refused_and_nothing_is_queued() {
        let mut sink = FrameSink::default();
        let mut codec = FrameCodec::new().with_max_body_size(20_000);
        for len in [20_001usize, 100] {
            let mut small = FrameCodec::new().with_max_body_size(50);
            let codec = if len == 100 { &mut small } else { &mut codec };
            let err = sink
                .start_send(codec, Bytes::from(vec![b'x'; len]))
                .expect_err("too large");
            assert!(matches!(err, CodecError::BodyTooLarge { .. }), "{err:?}");
            assert!(!sink.pending());
        }
    }
}
