//! [`Framer`]: cuts the recorded chunks of one direction into frames, and finds the next header again after
//! bytes were lost (SPEC/1.0 recording.md §5).

use bytes::{Buf, Bytes, BytesMut};
use gabp_codec::{Frame, FrameCodec};
use tokio_util::codec::Decoder;

/// What a framer keeps of a stream it has lost its place in while it looks for the next header.
const RESYNC_KEEP: usize = 15;

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
