//! `Content-Length` framing: [`FrameCodec`] and [`Frame`].

use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::fault::{FrameFault, Seen};
use crate::header::{canonical_head, parse_head_lines, put_header_block, HeadProgress, HeadScan};
use crate::CodecError;

/// Default largest body a [`FrameCodec`] accepts or writes: 1 MiB (SPEC/1.0 transport.md §8).
pub const DEFAULT_MAX_BODY_SIZE: usize = 1024 * 1024;

/// Default largest header block a [`FrameCodec`] accepts, including the blank line that ends it: 8 KiB.
pub const DEFAULT_MAX_HEADER_SIZE: usize = 8 * 1024;

/// One unit the [`FrameCodec`] decoder yields.
///
/// A body over the configured limit is not an error of the stream: the decoder yields
/// [`Frame::Oversized`] once, then silently discards exactly `declared` bytes as they arrive (never
/// buffering them) and goes on with the next frame. The receiver answers it (GABP: `-32600` with
/// `data.maxMessageSize`) and keeps the connection open. This has to be an item rather than an `Err`
/// because tokio-util's `FramedRead` ends the stream after the first decoder error.
///
/// # Example
///
/// ```
/// use bytes::BytesMut;
/// use gabp_codec::{Frame, FrameCodec};
/// use tokio_util::codec::Decoder;
///
/// let mut codec = FrameCodec::new().with_max_body_size(4);
/// let mut buf = BytesMut::from(&b"Content-Length: 6\r\n\r\n123456Content-Length: 2\r\n\r\n{}"[..]);
/// assert_eq!(
///     codec.decode(&mut buf)?,
///     Some(Frame::Oversized { declared: 6, limit: 4 })
/// );
/// assert_eq!(codec.decode(&mut buf)?, Some(Frame::Body("{}".into())));
/// # Ok::<(), gabp_codec::CodecError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A complete body, split out of the read buffer without copying.
    Body(Bytes),
    /// The header announced a body larger than the limit. The body is being skipped.
    Oversized {
        /// The length the `Content-Length` header announced.
        declared: u64,
        /// The body limit of the codec that refused it.
        limit: usize,
    },
}

impl Frame {
    /// The body, if this is [`Frame::Body`].
    ///
    /// ```
    /// use gabp_codec::Frame;
    ///
    /// assert_eq!(Frame::Body("{}".into()).into_body().as_deref(), Some(&b"{}"[..]));
    /// assert_eq!(Frame::Oversized { declared: 9, limit: 8 }.into_body(), None);
    /// ```
    #[must_use]
    pub fn into_body(self) -> Option<Bytes> {
        match self {
            Frame::Body(body) => Some(body),
            Frame::Oversized { .. } => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DecodeState {
    /// Reading a header block.
    Head(HeadScan),
    /// Header done (still at the front of the buffer, `head` bytes); waiting for `len` body bytes.
    Body { head: usize, len: usize },
    /// Skipping an oversized body.
    Discard { declared: u64, remaining: u64 },
}

const HEAD_START: DecodeState = DecodeState::Head(HeadScan {
    parsed: 0,
    searched: 0,
    length: None,
});

/// The GABP `Content-Length` framing as a tokio-util [`Decoder`] and [`Encoder`].
///
/// Wire format: `Content-Length: N\r\n[other headers\r\n]\r\n` followed by exactly `N` body bytes.
///
/// Reading is liberal: header names are case-insensitive, `Content-Type` is optional and, like any
/// other header, ignored; an identical repeated `Content-Length` is accepted. Writing is strict: every
/// frame is `Content-Length: N\r\nContent-Type: application/json\r\n\r\n<body>`.
///
/// Guarantees of the decoder:
///
/// - the announced length is checked against the body limit before any memory is reserved;
/// - a header block is never buffered beyond the header limit, an oversized body never at all, so the
///   read buffer stays below body limit + header limit + one read;
/// - an oversized body yields [`Frame::Oversized`] and decoding goes on after it;
/// - all progress lives in the codec, so a `FramedRead` over it is cancel-safe (a `next()` dropped
///   inside `tokio::select!` loses nothing), and a header arriving in pieces is never scanned twice;
/// - bodies are split out of the read buffer ([`Bytes`]), not copied;
/// - header errors are fatal ([`CodecError`]); the stream ending inside a frame is
///   [`CodecError::TruncatedHeader`] or [`CodecError::TruncatedBody`].
///
/// # Example
///
/// ```
/// use bytes::{Bytes, BytesMut};
/// use gabp_codec::{Frame, FrameCodec};
/// use tokio_util::codec::{Decoder, Encoder};
///
/// let mut codec = FrameCodec::new();
/// let mut wire = BytesMut::new();
/// codec.encode(Bytes::from_static(br#"{"v":"gabp/1"}"#), &mut wire)?;
/// assert_eq!(
///     &wire[..],
///     b"Content-Length: 14\r\nContent-Type: application/json\r\n\r\n{\"v\":\"gabp/1\"}"
/// );
///
/// // Reading accepts any header case and no Content-Type.
/// wire.extend_from_slice(b"content-length: 2\r\n\r\n{}");
/// assert_eq!(codec.decode(&mut wire)?, Some(Frame::Body(r#"{"v":"gabp/1"}"#.into())));
/// assert_eq!(codec.decode(&mut wire)?, Some(Frame::Body("{}".into())));
/// assert_eq!(codec.decode(&mut wire)?, None);
/// # Ok::<(), gabp_codec::CodecError>(())
/// ```
///
/// With a transport, wrap it in `FramedRead`/`FramedWrite` (or `Framed`):
///
/// ```
/// use futures::{SinkExt, StreamExt};
/// use gabp_codec::{Frame, FrameCodec};
/// use tokio_util::codec::{FramedRead, FramedWrite};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), gabp_codec::CodecError> {
/// let (client, server) = tokio::io::duplex(64);
/// let mut writer = FramedWrite::new(client, FrameCodec::new());
/// let mut reader = FramedRead::new(server, FrameCodec::new());
/// writer.send(bytes::Bytes::from_static(b"{}")).await?;
/// assert_eq!(reader.next().await.transpose()?, Some(Frame::Body("{}".into())));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct FrameCodec {
    max_body_size: usize,
    max_header_size: usize,
    state: DecodeState,
    /// Bytes of the stream consumed: the offset of the frame being read, or of the body being skipped.
    position: u64,
    /// An oversized frame being skipped: its offset and the start of its header (the header block is gone).
    skipped: Option<Seen>,
    /// Where decoding failed, and the start of the header there.
    seen: Option<Seen>,
}

impl Default for FrameCodec {
    fn default() -> Self {
        Self::new()
    }
}

impl FrameCodec {
    /// A codec with the default limits: [`DEFAULT_MAX_BODY_SIZE`] and [`DEFAULT_MAX_HEADER_SIZE`].
    #[must_use]
    pub const fn new() -> Self {
        Self {
            max_body_size: DEFAULT_MAX_BODY_SIZE,
            max_header_size: DEFAULT_MAX_HEADER_SIZE,
            state: HEAD_START,
            position: 0,
            skipped: None,
            seen: None,
        }
    }

    /// Where and how the stream broke the framing, for the `error` decoding just returned (an i/o error
    /// excepted): the offset of the broken frame and the start of its header as seen (SPEC/1.0
    /// transport.md §7). Before any decoding error, the fault is placed at [`FrameCodec::position`].
    #[must_use]
    pub fn fault(&self, error: &CodecError) -> FrameFault {
        match &self.seen {
            Some(seen) => FrameFault::new(seen.offset, error, seen.bytes()),
            None => FrameFault::new(self.position, error, b""),
        }
    }

    /// How many bytes of the stream the decoder has consumed.
    #[must_use]
    pub const fn position(&self) -> u64 {
        self.position
    }

    /// Records where decoding failed; `src` starts with the broken frame's header unless its body was
    /// being skipped.
    #[cold]
    fn note_fault(&mut self, src: &[u8]) {
        self.seen = match (self.state, self.skipped) {
            (DecodeState::Discard { .. }, Some(skipped)) => Some(skipped),
            (DecodeState::Body { head, .. }, _) => {
                Some(Seen::new(self.position, &src[..head.min(src.len())]))
            }
            _ => Some(Seen::new(self.position, src)),
        };
    }

    /// Sets the largest body, in bytes, the codec reads or writes.
    ///
    /// ```
    /// let codec = gabp_codec::FrameCodec::new().with_max_body_size(64 * 1024);
    /// assert_eq!(codec.max_body_size(), 64 * 1024);
    /// ```
    #[must_use]
    pub const fn with_max_body_size(mut self, max: usize) -> Self {
        self.max_body_size = max;
        self
    }

    /// Sets the largest header block, in bytes, including the blank line that ends it. A header block
    /// of `Content-Length` and `Content-Type` takes about 60 bytes.
    ///
    /// ```
    /// let codec = gabp_codec::FrameCodec::new().with_max_header_size(1024);
    /// assert_eq!(codec.max_header_size(), 1024);
    /// ```
    #[must_use]
    pub const fn with_max_header_size(mut self, max: usize) -> Self {
        self.max_header_size = max;
        self
    }

    /// The largest body, in bytes, the codec reads or writes.
    #[must_use]
    pub const fn max_body_size(&self) -> usize {
        self.max_body_size
    }

    /// The largest header block, in bytes, the codec reads.
    #[must_use]
    pub const fn max_header_size(&self) -> usize {
        self.max_header_size
    }

    /// Appends the header block of a frame with a body of `body_len` bytes to `dst`, for a writer
    /// that sends the body from its own buffer (a vectored write, say). The body must follow the
    /// header with nothing in between (SPEC/1.0/transport.md section 1.1). `encode` is this header,
    /// then the body.
    ///
    /// # Errors
    ///
    /// [`CodecError::BodyTooLarge`] for a body over the limit; nothing is written.
    ///
    /// # Example
    ///
    /// ```
    /// use bytes::{Bytes, BytesMut};
    /// use gabp_codec::FrameCodec;
    /// use tokio_util::codec::Encoder;
    ///
    /// let mut codec = FrameCodec::new();
    /// let body = Bytes::from_static(b"{}");
    /// let mut head = BytesMut::new();
    /// codec.encode_header(body.len(), &mut head)?;
    /// assert_eq!(&head[..], b"Content-Length: 2\r\nContent-Type: application/json\r\n\r\n");
    ///
    /// let mut frame = BytesMut::new();
    /// codec.encode(body.clone(), &mut frame)?;
    /// assert_eq!(frame, [&head[..], &body[..]].concat());
    /// # Ok::<(), gabp_codec::CodecError>(())
    /// ```
    pub fn encode_header(&self, body_len: usize, dst: &mut BytesMut) -> Result<(), CodecError> {
        self.check_body_len(body_len)?;
        put_header_block(body_len, 0, dst);
        Ok(())
    }

    /// Writes `body` as one frame into `dst`, as [`Encoder::encode`] does with a [`Bytes`]: for a body that
    /// lies in a scratch buffer, which it copies without a [`Bytes`] of its own. Refuses a body over the limit
    /// without writing anything.
    ///
    /// ```
    /// use bytes::BytesMut;
    /// use gabp_codec::FrameCodec;
    ///
    /// let mut frame = BytesMut::new();
    /// FrameCodec::new().encode_body(b"{}", &mut frame)?;
    /// assert_eq!(&frame[..], b"Content-Length: 2\r\nContent-Type: application/json\r\n\r\n{}");
    /// # Ok::<(), gabp_codec::CodecError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`CodecError::BodyTooLarge`] for a body over the limit.
    pub fn encode_body(&self, body: &[u8], dst: &mut BytesMut) -> Result<(), CodecError> {
        self.check_body_len(body.len())?;
        put_header_block(body.len(), body.len(), dst);
        dst.extend_from_slice(body);
        Ok(())
    }

    /// Refuses a body over the limit.
    fn check_body_len(&self, len: usize) -> Result<(), CodecError> {
        if len > self.max_body_size {
            return Err(CodecError::BodyTooLarge {
                len,
                limit: self.max_body_size,
            });
        }
        Ok(())
    }

    /// Parses (more of) a header block. Returns the header block length and the body length once the
    /// block is complete, and otherwise remembers how far it got in `self.state`.
    #[inline]
    fn decode_head(
        &mut self,
        src: &[u8],
        scan: HeadScan,
    ) -> Result<Option<(usize, u64)>, CodecError> {
        if scan.searched == 0 {
            if src.is_empty() {
                return Ok(None);
            }
            if let Some((head_len, len)) = canonical_head(src) {
                if head_len <= self.max_header_size {
                    return Ok(Some((head_len, len)));
                }
            }
        }
        match parse_head_lines(src, self.max_header_size, scan)? {
            HeadProgress::Complete { head_len, len } => Ok(Some((head_len, len))),
            HeadProgress::Partial(scan) => {
                self.state = DecodeState::Head(scan);
                Ok(None)
            }
        }
    }
}

impl Decoder for FrameCodec {
    type Item = Frame;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, CodecError> {
        let decoded = self.decode_frames(src);
        if decoded.is_err() {
            self.note_fault(src);
        }
        decoded
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, CodecError> {
        if let Some(frame) = self.decode(src)? {
            return Ok(Some(frame));
        }
        let error = match self.state {
            DecodeState::Head { .. } if src.is_empty() => return Ok(None),
            DecodeState::Head { .. } => CodecError::TruncatedHeader {
                buffered: src.len(),
            },
            DecodeState::Body { head, len } => CodecError::TruncatedBody {
                expected: len as u64,
                received: src.len().saturating_sub(head) as u64,
            },
            DecodeState::Discard {
                declared,
                remaining,
            } => CodecError::TruncatedBody {
                expected: declared,
                received: declared - remaining,
            },
        };
        self.note_fault(src);
        Err(error)
    }
}

impl FrameCodec {
    /// The decoder proper: frames out of `src` until it needs more bytes or fails.
    #[inline]
    fn decode_frames(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, CodecError> {
        loop {
            match self.state {
                DecodeState::Head(scan) => {
                    let Some((head_len, len)) = self.decode_head(src, scan)? else {
                        return Ok(None);
                    };
                    match usize::try_from(len) {
                        Ok(len) if len <= self.max_body_size => {
                            // The header stays in front of its body until the body is whole, so that a
                            // body cut short can still show it.
                            let whole = head_len + len;
                            if src.len() < whole {
                                src.reserve(whole - src.len());
                            }
                            self.state = DecodeState::Body {
                                head: head_len,
                                len,
                            };
                        }
                        _ => {
                            self.skipped = Some(Seen::new(self.position, &src[..head_len]));
                            src.advance(head_len);
                            self.position += head_len as u64;
                            self.state = DecodeState::Discard {
                                declared: len,
                                remaining: len,
                            };
                            return Ok(Some(Frame::Oversized {
                                declared: len,
                                limit: self.max_body_size,
                            }));
                        }
                    }
                }
                DecodeState::Body { head, len } => {
                    if src.len() < head + len {
                        return Ok(None);
                    }
                    src.advance(head);
                    self.state = HEAD_START;
                    self.position += (head + len) as u64;
                    return Ok(Some(Frame::Body(src.split_to(len).freeze())));
                }
                DecodeState::Discard {
                    declared,
                    remaining,
                } => {
                    let skip = usize::try_from(remaining).map_or(src.len(), |r| r.min(src.len()));
                    src.advance(skip);
                    self.position += skip as u64;
                    let remaining = remaining - skip as u64;
                    if remaining > 0 {
                        self.state = DecodeState::Discard {
                            declared,
                            remaining,
                        };
                        return Ok(None);
                    }
                    self.state = HEAD_START;
                    self.skipped = None;
                }
            }
        }
    }
}

/// `body` as one frame, exactly as [`FrameCodec`] writes it (SPEC/1.0 transport.md §1.1):
/// `Content-Length: N\r\nContent-Type: application/json\r\n\r\n`, then the body. No body limit applies,
/// so it cannot fail: for a writer that frames a body it already has, such as a recorded message.
///
/// ```
/// assert_eq!(
///     &gabp_codec::encode_frame(b"{}")[..],
///     b"Content-Length: 2\r\nContent-Type: application/json\r\n\r\n{}"
/// );
/// ```
#[must_use]
pub fn encode_frame(body: &[u8]) -> Bytes {
    let mut out = BytesMut::new();
    put_header_block(body.len(), body.len(), &mut out);
    out.extend_from_slice(body);
    out.freeze()
}

/// Writes `Content-Length: N\r\nContent-Type: application/json\r\n\r\n` and the body into `dst` with
/// one reservation. Refuses bodies over the limit without writing anything.
///
/// This is the only `Encoder` impl, so `SinkExt::flush` and `close` on a `FramedWrite` need no type
/// annotations.
impl Encoder<Bytes> for FrameCodec {
    type Error = CodecError;

    fn encode(&mut self, body: Bytes, dst: &mut BytesMut) -> Result<(), CodecError> {
        self.encode_body(&body, dst)
    }
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
