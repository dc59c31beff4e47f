//! [`FrameFault`]: where and how a byte stream broke the framing, for a message a person can act on.

use std::fmt;

use crate::CodecError;

/// Where and how a byte stream broke the framing (SPEC/1.0 transport.md §1.2, §7), from
/// [`FrameCodec::fault`](crate::FrameCodec::fault) for a decoding error.
///
/// `offset` and `header` are what tells a peer's bug apart: a `Content-Length` counted in UTF-16 code
/// units or characters leaves the last bytes of a body in front of the next header (`}Content-Length:`),
/// and two interleaved frames put a header where a body was expected. The header is shown escaped to
/// printable ASCII and cut to [`FrameFault::HEADER_SHOWN`] bytes, so a fault never echoes more than a
/// short prefix of what the peer sent. It describes a [`CodecError`] and is not an error itself.
///
/// ```
/// use bytes::BytesMut;
/// use gabp_codec::FrameCodec;
/// use tokio_util::codec::Decoder;
///
/// let mut codec = FrameCodec::new();
/// // A 3-byte body announced as 2 (the peer counted something other than bytes).
/// let mut wire = BytesMut::from(&b"Content-Length: 2\r\n\r\n{}}Content-Length: 2\r\n\r\n{}"[..]);
/// assert!(codec.decode(&mut wire).unwrap().is_some());
/// let error = codec.decode(&mut wire).unwrap_err();
/// let fault = codec.fault(&error);
/// assert_eq!(fault.offset, 23);
/// assert_eq!(fault.header, r"}Content-Length: 2\r\n\r\n{}");
/// assert_eq!(
///     fault.to_string(),
///     r#"frame error at byte 23: header block has no Content-Length header; header seen: "}Content-Length: 2\r\n\r\n{}""#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FrameFault {
    /// Where the broken frame starts: how many bytes of the stream came before its header block.
    pub offset: u64,
    /// What was wrong (the [`CodecError`]'s text).
    pub reason: String,
    /// The start of that frame's header block as it arrived, escaped to printable ASCII (`\r\n`,
    /// `\xc3`), at most [`FrameFault::HEADER_SHOWN`] bytes of it.
    pub header: String,
}

impl FrameFault {
    /// How many bytes of a header block a fault shows at most.
    pub const HEADER_SHOWN: usize = 48;

    /// A fault at `offset` for `error`, showing the start of `header` (cut and escaped here).
    #[must_use]
    pub fn new(offset: u64, error: &CodecError, header: &[u8]) -> Self {
        FrameFault {
            offset,
            reason: error.to_string(),
            header: shown(header),
        }
    }
}

impl fmt::Display for FrameFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "frame error at byte {}: {}; header seen: \"{}\"",
            self.offset, self.reason, self.header
        )
    }
}

/// Where a header was seen and its first bytes (one more than shown, to tell that there were more); `Copy`, so
/// that a codec can keep one without a destructor and its builders stay `const`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) offset: u64,
    len: u8,
    start: [u8; FrameFault::HEADER_SHOWN + 1],
}

impl Seen {
    pub(crate) fn new(offset: u64, header: &[u8]) -> Self {
        let mut start = [0; FrameFault::HEADER_SHOWN + 1];
        let len = header.len().min(start.len());
        start[..len].copy_from_slice(&header[..len]);
        Seen {
            offset,
            len: u8::try_from(len).unwrap_or(u8::MAX),
            start,
        }
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.start[..usize::from(self.len)]
    }
}

/// At most [`FrameFault::HEADER_SHOWN`] bytes of `header`, escaped to printable ASCII.
pub(crate) fn shown(header: &[u8]) -> String {
    let cut = &header[..header.len().min(FrameFault::HEADER_SHOWN)];
    let mut text = cut.escape_ascii().to_string();
    if cut.len() < header.len() {
        text.push_str("...");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_shown_is_short_and_printable() {
        let header = [b"\x1b[31m\xc3\xa9\0".as_slice(), &[b'a'; 100]].concat();
        let text = shown(&header);
        let a = "a".repeat(FrameFault::HEADER_SHOWN - 8);
        assert_eq!(text, format!(r"\x1b[31m\xc3\xa9\x00{a}..."));
        assert!(text.chars().all(|c| c.is_ascii_graphic() || c == ' '));
    }
}
