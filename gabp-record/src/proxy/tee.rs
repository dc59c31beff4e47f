//! The forwarding path and the tee: [`pump`] copies bytes from one side to the other as they come and offers
//! each chunk to the writer's bounded queue without waiting; [`Framer`], in the writer, cuts each direction's
//! chunks into frames (SPEC/1.0 recording.md §5).

use std::time::Instant;

use bytes::{Buf, Bytes, BytesMut};
use gabp_codec::{Frame, FrameCodec};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::Decoder;
use tokio_util::sync::CancellationToken;

use super::writer::Entry;
use crate::format::Direction;

/// Bytes read from one side at a time, at most.
const READ_CHUNK: usize = 16 * 1024;

/// Room below which the read buffer is renewed. Each chunk read is split off and kept by the writer's queue, so
/// the buffer cannot be reused; renewing it only when little room is left makes one allocation serve many small
/// chunks.
const READ_ROOM: usize = 2 * 1024;

/// What a framer keeps of a stream it has lost its place in while it looks for the next header.
const RESYNC_KEEP: usize = 15;

/// How a pump ended.
#[derive(Debug)]
pub(crate) enum PumpEnd {
    /// The reading side reached end of stream (the writing side was shut down after it).
    Eof,
    /// Reading or writing failed.
    Error(std::io::Error),
    /// The proxy is shutting down.
    Cancelled,
}

/// Copies `from` to `to` until end of stream; every chunk goes on to the writer only if there is room in its
/// queue (forwarding never waits for the recorder); what did not fit is counted on the next chunk that does.
pub(crate) async fn pump<R, W>(
    mut from: R,
    mut to: W,
    tee: mpsc::Sender<Entry>,
    (connection, direction): (u64, Direction),
    cancel: CancellationToken,
) -> PumpEnd
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = BytesMut::new();
    let mut lost = 0u64;
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);
    let end = loop {
        if buf.capacity() < READ_ROOM {
            buf.reserve(READ_CHUNK);
        }
        let read = tokio::select! {
            biased;
            () = &mut cancelled => break PumpEnd::Cancelled,
            read = from.read_buf(&mut buf) => read,
        };
        match read {
            Ok(0) => {
                let _ = to.shutdown().await;
                break PumpEnd::Eof;
            }
            Ok(_) => {}
            Err(e) => break PumpEnd::Error(e),
        }
        let at = Instant::now();
        let bytes = buf.split().freeze();
        if let Err(e) = to.write_all(&bytes).await {
            break PumpEnd::Error(e);
        }
        let len = bytes.len() as u64;
        let chunk = Entry::Chunk {
            at,
            connection,
            direction,
            bytes,
            lost_before: lost,
        };
        match tee.try_send(chunk) {
            Ok(()) => lost = 0,
            Err(mpsc::error::TrySendError::Full(_)) => lost += len,
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    };
    if lost > 0 {
        // This direction is over, so nothing waits on the wire: the count of what was lost waits for room.
        let chunk = Entry::Chunk {
            at: Instant::now(),
            connection,
            direction,
            bytes: Bytes::new(),
            lost_before: lost,
        };
        let _ = tee.send(chunk).await;
    }
    end
}

/// What a [`Framer`] makes of the chunks of one direction.
#[derive(Debug)]
pub(crate) enum Piece {
    /// A whole frame's body.
    Frame(Bytes),
    /// A frame that is not one: why, and its length when known.
    Undecodable(String, Option<u64>),
    /// Bytes forwarded but not recorded: left out of the queue, or skipped to find the next header.
    Dropped(u64),
}

/// Cuts the chunks of one direction into frames.
#[derive(Debug)]
pub(crate) struct Framer {
    codec: FrameCodec,
    buf: BytesMut,
    resync: bool,
    lost: u64,
}

impl Framer {
    /// A framer that records bodies of up to `max_frame` bytes whole.
    pub(crate) fn new(max_frame: usize) -> Self {
        Framer {
            codec: FrameCodec::new().with_max_body_size(max_frame),
            buf: BytesMut::new(),
            resync: false,
            lost: 0,
        }
    }

    /// Takes the next chunk, `lost_before` bytes after the previous one.
    pub(crate) fn feed(&mut self, bytes: &[u8], lost_before: u64, out: &mut Vec<Piece>) {
        if lost_before > 0 {
            // The place in the stream is lost: what was buffered belongs to frames that cannot be completed.
            self.lost += lost_before + self.buf.len() as u64;
            self.buf.clear();
            self.resync = true;
        }
        self.buf.extend_from_slice(bytes);
        loop {
            if self.resync && !self.find_header() {
                return;
            }
            let piece = match self.codec.decode(&mut self.buf) {
                Ok(Some(Frame::Body(body))) => Piece::Frame(body),
                Ok(Some(Frame::Oversized { declared, limit })) => Piece::Undecodable(
                    format!("a body of {declared} bytes, over the recorder's limit of {limit}"),
                    Some(declared),
                ),
                Ok(None) => return,
                Err(e) => {
                    self.resync = true;
                    Piece::Undecodable(format!("a broken frame: {e}"), None)
                }
            };
            self.push(piece, out);
        }
    }

    /// The end of the stream: a frame left unfinished, and what was lost.
    pub(crate) fn finish(mut self, out: &mut Vec<Piece>) {
        if !self.buf.is_empty() && !self.resync {
            let length = Some(self.buf.len() as u64);
            self.push(
                Piece::Undecodable("the stream ended inside a frame".to_owned(), length),
                out,
            );
        }
        if self.resync {
            self.lost += self.buf.len() as u64;
        }
        if self.lost > 0 {
            out.push(Piece::Dropped(self.lost));
        }
    }

    fn push(&mut self, piece: Piece, out: &mut Vec<Piece>) {
        if self.lost > 0 {
            out.push(Piece::Dropped(self.lost));
            self.lost = 0;
        }
        out.push(piece);
    }

    /// Skips to the next `Content-Length` header (which cannot occur inside a JSON body: JSON strings have no
    /// raw CR LF, SPEC/1.0 transport.md §1); false when there is none yet.
    fn find_header(&mut self) -> bool {
        let found = self
            .buf
            .windows(15)
            .position(|w| w.eq_ignore_ascii_case(b"content-length:"));
        let skip = found.unwrap_or(self.buf.len().saturating_sub(RESYNC_KEEP));
        self.lost += skip as u64;
        self.buf.advance(skip);
        if found.is_some() {
            self.resync = false;
            self.codec = FrameCodec::new().with_max_body_size(self.codec.max_body_size());
        }
        found.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(body: &str) -> Vec<u8> {
        gabp_codec::encode_frame(body.as_bytes()).to_vec()
    }

    #[test]
    fn frames_in_pieces_and_after_a_loss() {
        let mut framer = Framer::new(1024);
        let mut out = Vec::new();
        let (first, second) = (frame("{\"a\":1}"), frame("{\"b\":2}"));
        let two = [&first[..], &second[..]].concat();
        framer.feed(&two[..5], 0, &mut out);
        framer.feed(&two[5..first.len() + 2], 0, &mut out);
        assert_eq!(out.len(), 1);
        // 3 bytes of the second frame never came: its rest is skipped, up to the third frame's header.
        let rest = [&two[first.len() + 5..], &frame("{\"c\":3}")[..]].concat();
        framer.feed(&rest, 3, &mut out);
        let kinds: Vec<String> = out.iter().map(|p| format!("{p:?}")).collect();
        let lost = second.len() as u64;
        assert!(
            matches!(out[1], Piece::Dropped(n) if n == lost),
            "{kinds:?}"
        );
        assert!(
            matches!(&out[2], Piece::Frame(b) if &b[..] == b"{\"c\":3}"),
            "{kinds:?}"
        );
    }

    #[test]
    fn the_end_inside_a_frame() {
        let mut framer = Framer::new(1024);
        let mut out = Vec::new();
        framer.feed(b"Content-Length: 10\r\n\r\n{}", 0, &mut out);
        framer.finish(&mut out);
        // The bytes of the unfinished frame that were forwarded, header included.
        assert!(
            matches!(out[..], [Piece::Undecodable(_, Some(24))]),
            "{out:?}"
        );
    }
}
