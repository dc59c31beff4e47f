//! The typed codec: [`MessageCodec`].

use std::io;

use bytes::{Buf, BufMut, BytesMut};
use gabp_types::decode::{decode, DecodeMode};
use gabp_types::Message;
use tokio_util::codec::{Decoder, Encoder};

use crate::header::{with_header_block, MAX_HEAD_LEN};
use crate::{CodecError, Frame, FrameCodec};

/// GABP messages over [`FrameCodec`]: decodes frames into [`Message`]s and encodes messages into
/// frames.
///
/// Decoding yields one item per frame: `Ok(message)`, or `Err(`[`CodecError`]`)` for a frame that
/// is not a usable message ([`CodecError::Oversized`], [`CodecError::Invalid`]: not JSON, invalid
/// envelope...). Such an item carries the answer the receiver owes and does not end the stream. Only the
/// decoder's own errors (framing, i/o) are fatal.
/// Like [`FrameCodec`], a `FramedRead` over it is cancel-safe inside `tokio::select!`.
///
/// Encoding writes the compact JSON of a message straight into the output buffer, with the header in
/// front of it, and never produces a frame over the limit: a longer message is
/// [`CodecError::BodyTooLarge`], and nothing is written.
///
/// The decode mode defaults to [`DecodeMode::Lenient`], the liberal reading of peers (SPEC/1.0 gabp.md §3.5);
/// validators use [`MessageCodec::with_mode`]`(`[`DecodeMode::Strict`]`)`.
///
/// # Example
///
/// ```
/// use futures::{SinkExt, StreamExt};
/// use gabp_codec::MessageCodec;
/// use gabp_types::{Message, MethodName, Request};
/// use tokio_util::codec::{FramedRead, FramedWrite};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (bridge, game) = tokio::io::duplex(1024);
/// let mut to_game = FramedWrite::new(bridge, MessageCodec::new());
/// let mut from_bridge = FramedRead::new(game, MessageCodec::new());
///
/// let ping = Message::from(Request::new(MethodName::new("session/ping")?, None));
/// to_game.send(ping.clone()).await?;
///
/// match from_bridge.next().await {
///     Some(Ok(Ok(message))) => assert_eq!(message, ping),
///     // A bad frame: answer it and keep reading.
///     Some(Ok(Err(bad_frame))) => to_game.send(bad_frame.to_response().into()).await?,
///     // A broken stream: close the connection.
///     Some(Err(fatal)) => return Err(fatal.into()),
///     None => {}
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct MessageCodec {
    frames: FrameCodec,
    mode: DecodeMode,
}

impl Default for MessageCodec {
    fn default() -> Self {
        Self::new()
    }
}

impl MessageCodec {
    /// A lenient codec with the default limits (1 MiB body, 8 KiB header block).
    #[must_use]
    pub const fn new() -> Self {
        Self {
            frames: FrameCodec::new(),
            mode: DecodeMode::Lenient,
        }
    }

    /// Sets how strictly bodies are decoded.
    ///
    /// ```
    /// use gabp_codec::MessageCodec;
    /// use gabp_types::decode::DecodeMode;
    ///
    /// let codec = MessageCodec::new().with_mode(DecodeMode::Strict);
    /// assert_eq!(codec.mode(), DecodeMode::Strict);
    /// ```
    #[must_use]
    pub const fn with_mode(mut self, mode: DecodeMode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets the largest message body, in bytes, read or written (`maxMessageSize`).
    #[must_use]
    pub const fn with_max_body_size(mut self, max: usize) -> Self {
        self.frames = self.frames.with_max_body_size(max);
        self
    }

    /// Sets the largest header block, in bytes, read.
    #[must_use]
    pub const fn with_max_header_size(mut self, max: usize) -> Self {
        self.frames = self.frames.with_max_header_size(max);
        self
    }

    /// How strictly bodies are decoded.
    #[must_use]
    pub const fn mode(&self) -> DecodeMode {
        self.mode
    }

    /// The largest message body, in bytes, read or written.
    #[must_use]
    pub const fn max_body_size(&self) -> usize {
        self.frames.max_body_size()
    }

    /// The largest header block, in bytes, read.
    #[must_use]
    pub const fn max_header_size(&self) -> usize {
        self.frames.max_header_size()
    }

    fn decode_frame(&self, frame: Frame) -> Result<Message, CodecError> {
        match frame {
            Frame::Body(body) => {
                decode(&body, self.mode).map_err(|error| CodecError::Invalid { error, body })
            }
            Frame::Oversized { declared, limit } => Err(CodecError::Oversized { declared, limit }),
        }
    }
}

impl Decoder for MessageCodec {
    type Item = Result<Message, CodecError>;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, CodecError> {
        Ok(self
            .frames
            .decode(src)?
            .map(|frame| self.decode_frame(frame)))
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, CodecError> {
        Ok(self
            .frames
            .decode_eof(src)?
            .map(|frame| self.decode_frame(frame)))
    }
}

/// Serializes into the output buffer up to a limit; past it, only counts.
struct BoundedWriter<'a> {
    dst: &'a mut BytesMut,
    room: usize,
    overflow: usize,
}

impl io::Write for BoundedWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.overflow == 0 && buf.len() <= self.room {
            self.dst.put_slice(buf);
            self.room -= buf.len();
        } else {
            self.overflow += buf.len();
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Serializes the message (compact JSON) straight into `dst`, behind its header. This is the only
/// `Encoder` impl, so `SinkExt::flush` and `close` on a `FramedWrite` need no type annotations.
impl Encoder<Message> for MessageCodec {
    type Error = CodecError;

    fn encode(&mut self, message: Message, dst: &mut BytesMut) -> Result<(), CodecError> {
        let limit = self.frames.max_body_size();
        let start = dst.len();
        // Room for the longest possible header, then the body right behind it.
        dst.put_bytes(0, MAX_HEAD_LEN);
        let body_start = dst.len();
        let mut writer = BoundedWriter {
            dst,
            room: limit,
            overflow: 0,
        };
        let serialized = serde_json::to_writer(&mut writer, &message);
        let overflow = writer.overflow;
        let body_len = dst.len() - body_start;
        if let Err(e) = serialized {
            dst.truncate(start);
            return Err(CodecError::Serialize(e));
        }
        if overflow > 0 {
            dst.truncate(start);
            return Err(CodecError::BodyTooLarge {
                len: body_len + overflow,
                limit,
            });
        }
        // The header goes right before the body, at the end of the room left for it.
        let head_start = with_header_block(body_len, |block| {
            let head_start = body_start - block.len();
            dst[head_start..body_start].copy_from_slice(block);
            head_start
        });
        if start == 0 {
            // Alone in the buffer: drop the unused room in front.
            dst.advance(head_start);
        } else {
            let frame_len = dst.len() - head_start;
            dst.copy_within(head_start.., start);
            dst.truncate(start + frame_len);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gabp_types::{MethodName, Request};
    use serde_json::Value;

    fn request(pad: usize) -> Message {
        let mut params = serde_json::Map::new();
        params.insert("pad".into(), Value::String("x".repeat(pad)));
        Message::from(Request::new(
            MethodName::new("test/echo").expect("valid name"),
            Some(params),
        ))
    }

    #[test]
    fn encoding_into_empty_and_non_empty_buffers_gives_the_same_frames() {
        let message = request(10);
        let mut alone = BytesMut::new();
        MessageCodec::new()
            .encode(message.clone(), &mut alone)
            .expect("encodes");
        let mut behind = BytesMut::from(&b"prefix"[..]);
        MessageCodec::new()
            .encode(message.clone(), &mut behind)
            .expect("encodes");
        assert_eq!(&behind[..6], b"prefix");
        assert_eq!(&behind[6..], &alone[..]);
        let body = serde_json::to_vec(&message).expect("serializes");
        let head = format!(
            "Content-Length: {}\r\nContent-Type: application/json\r\n\r\n",
            body.len()
        );
        assert_eq!(&alone[..head.len()], head.as_bytes());
        assert_eq!(&alone[head.len()..], &body[..]);
    }

    #[test]
    fn encoding_over_the_limit_writes_nothing() {
        let message = request(100);
        let exact = serde_json::to_vec(&message).expect("serializes").len();
        let mut codec = MessageCodec::new().with_max_body_size(exact);
        let mut dst = BytesMut::from(&b"keep"[..]);
        codec
            .encode(message.clone(), &mut dst)
            .expect("exactly at the limit");
        let written = dst.clone();
        let mut codec = codec.with_max_body_size(exact - 1);
        let err = codec.encode(message, &mut dst).expect_err("one over");
        assert!(
            matches!(err, CodecError::BodyTooLarge { len, limit } if len == exact && limit == exact - 1),
            "{err}"
        );
        assert_eq!(dst, written);
    }
}
