//! Frames and raw peers for tests that speak the wire themselves: [`frame`] writes a frame, [`read_frame`]
//! and [`FrameReader`] read one (sync and async), and [`RawClient`] is a bridge written by hand that sends
//! bytes, frames and JSON over any async stream and decodes everything the peer writes strictly.
//! [`BlockingClient`] is the same client for blocking tests. [`RawMod`] is its mirror, a mod written by hand
//! for bridge tests.
//!
//! The reader is strict about what the peer writes: only `Content-Length` and `Content-Type:
//! application/json` headers, each line ending in CR LF (SPEC/1.0 transport.md §1.1). A header that a
//! conformant sender would not write is an [`io::ErrorKind::InvalidData`] error, not a tolerated variant.
//!
//! ```
//! use gabp_testkit::wire::{self, RawClient};
//! use gabp_testkit::MockMod;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mock = MockMod::demo()?;
//! let (stream, _served) = mock.serve_in_memory();
//! let mut client = RawClient::new(stream);
//!
//! let welcome = client.hello(mock.token().expose_secret()).await;
//! assert!(welcome["capabilities"]["methods"].is_array());
//! let echoed = client.call_tool("demo/echo", serde_json::json!({"value": 1})).await;
//! assert!(echoed.result().is_some());
//!
//! // Bytes the mod cannot parse are answered -32700, and the session goes on.
//! client.send_frame(b"not json").await;
//! assert_eq!(client.recv_response().await.error_object().map(|e| e.code.0), Some(-32700));
//! client.ok("session/ping", None).await;
//!
//! // The frame helpers on their own.
//! let bytes = wire::frame(b"{}");
//! assert_eq!(bytes, b"Content-Length: 2\r\nContent-Type: application/json\r\n\r\n{}");
//! assert_eq!(wire::read_frame(&mut &bytes[..])?, Some(b"{}".to_vec()));
//! # Ok(())
//! # }
//! ```

mod blocking;
mod client;
mod raw_mod;

use std::io::{self, BufRead, Read};

use bytes::{Buf, BytesMut};
use futures::StreamExt;
use gabp_types::MessageId;
use serde_json::{json, Value};
use tokio::io::AsyncRead;
use tokio_util::codec::{Decoder, FramedRead};

pub use blocking::BlockingClient;
pub use client::{RawClient, RawWriter};
pub use raw_mod::RawMod;

/// The `launchId` of [`hello_params`].
pub const LAUNCH_ID: &str = "6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11";

/// Largest header block the readers accept, counting the empty line that ends it (SPEC/1.0 transport.md §8).
const MAX_HEAD: usize = 8 * 1024;

/// `body` as one frame, written by the codec the engine writes with (SPEC/1.0 transport.md §1).
#[must_use]
pub fn frame(body: &[u8]) -> Vec<u8> {
    gabp_codec::encode_frame(body).to_vec()
}

/// Reads one frame's body from `reader`: `Ok(None)` at a clean end of stream (between frames). Reads nothing
/// past the body.
///
/// # Errors
///
/// [`io::ErrorKind::InvalidData`] for a header a conformant sender does not write,
/// [`io::ErrorKind::UnexpectedEof`] for a stream that ends inside a frame, and any read error.
pub fn read_frame<R: BufRead>(reader: &mut R) -> io::Result<Option<Vec<u8>>> {
    let mut head = Vec::new();
    let len = loop {
        let room = (MAX_HEAD + 1 - head.len()) as u64;
        if (&mut *reader).take(room).read_until(b'\n', &mut head)? == 0 {
            if head.is_empty() {
                return Ok(None);
            }
            return Err(truncated("end of stream inside a header"));
        }
        if let Some((_, len)) = parse_head(&head)? {
            break len;
        }
    };
    let mut body = Vec::new();
    reader.take(len as u64).read_to_end(&mut body)?;
    if body.len() < len {
        return Err(truncated("end of stream inside a body"));
    }
    Ok(Some(body))
}

/// Reads frames from an async reader, with the rules of [`read_frame`]. Cancel-safe: a frame read in part
/// when a `select!` or timeout drops [`FrameReader::next_frame`] is finished by the next call.
#[derive(Debug)]
pub struct FrameReader<R> {
    frames: FramedRead<R, HeadThenBody>,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// A reader of the frames on `reader`.
    pub fn new(reader: R) -> Self {
        FrameReader {
            frames: FramedRead::new(reader, HeadThenBody { body: None }),
        }
    }

    /// The next frame's body: `Ok(None)` at a clean end of stream.
    ///
    /// # Errors
    ///
    /// As [`read_frame`]. After an error the stream is over.
    pub async fn next_frame(&mut self) -> io::Result<Option<Vec<u8>>> {
        self.frames.next().await.transpose()
    }
}

/// The decoder of [`FrameReader`]: `body` is the length of the body still to come once a header is read.
#[derive(Debug)]
struct HeadThenBody {
    body: Option<usize>,
}

impl Decoder for HeadThenBody {
    type Item = Vec<u8>;
    type Error = io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> io::Result<Option<Vec<u8>>> {
        let len = match self.body {
            Some(len) => len,
            None => {
                let Some((head_len, len)) = parse_head(src)? else {
                    return Ok(None);
                };
                src.advance(head_len);
                self.body = Some(len);
                len
            }
        };
        if src.len() < len {
            src.reserve((len - src.len()).min(1 << 20));
            return Ok(None);
        }
        self.body = None;
        Ok(Some(src.split_to(len).to_vec()))
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> io::Result<Option<Vec<u8>>> {
        match self.decode(src)? {
            Some(body) => Ok(Some(body)),
            None if src.is_empty() && self.body.is_none() => Ok(None),
            None => Err(truncated("end of stream inside a frame")),
        }
    }
}

/// The header block at the start of `buf` once it is complete: its length and the body length.
fn parse_head(buf: &[u8]) -> io::Result<Option<(usize, usize)>> {
    let mut length = None;
    let mut start = 0;
    while let Some(end) = buf[start..].iter().position(|&b| b == b'\n') {
        let line = &buf[start..start + end];
        start += end + 1;
        if start > MAX_HEAD {
            break;
        }
        let Some(line) = line.strip_suffix(b"\r") else {
            return Err(invalid(format!(
                "a header line without CR LF: {}",
                lossy(line)
            )));
        };
        if line.is_empty() {
            let length = length.ok_or_else(|| invalid("a header block without Content-Length"))?;
            return Ok(Some((start, length)));
        }
        let (name, value) = std::str::from_utf8(line)
            .ok()
            .and_then(|line| line.split_once(':'))
            .ok_or_else(|| invalid(format!("not a header line: {}", lossy(line))))?;
        let value = value.trim_matches([' ', '\t']);
        if name.eq_ignore_ascii_case("content-length") {
            let n = value
                .bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| value.parse::<usize>().ok())
                .flatten()
                .ok_or_else(|| invalid(format!("a bad Content-Length: {value:?}")))?;
            if length.is_some_and(|first| first != n) {
                return Err(invalid("two different Content-Length headers"));
            }
            length = Some(n);
        } else if !(name.eq_ignore_ascii_case("content-type") && value == "application/json") {
            return Err(invalid(format!(
                "a header the sender must not write: {}",
                lossy(line)
            )));
        }
    }
    if buf.len() > MAX_HEAD {
        return Err(invalid(format!("a header block over {MAX_HEAD} bytes")));
    }
    Ok(None)
}

fn lossy(bytes: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(bytes))
}

fn invalid(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

fn truncated(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, what)
}

/// A request for `method` as JSON, with a fresh id (no `params` member for `None`), and its id.
#[must_use]
pub fn request(method: &str, params: Option<Value>) -> (MessageId, Value) {
    let id = MessageId::new_v4();
    let mut message =
        json!({"v": "gabp/1", "id": id.as_str(), "type": "request", "method": method});
    if let Some(params) = params {
        message["params"] = params;
    }
    (id, message)
}

/// The params of a `session/hello` presenting `token`.
#[must_use]
pub fn hello_params(token: &str) -> Value {
    json!({
        "token": token,
        "bridgeVersion": "1.0.0",
        "platform": "linux",
        "launchId": LAUNCH_ID,
        "clientInfo": {"name": "gabp-testkit-raw-client", "version": "0"}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &[u8]) -> io::Result<Option<Vec<u8>>> {
        read_frame(&mut &bytes[..])
    }

    #[test]
    fn reads_what_it_writes_and_the_canonical_header() {
        assert_eq!(read(&frame(b"{}")).unwrap(), Some(b"{}".to_vec()));
        let canonical = b"Content-Length: 2\r\nContent-Type: application/json\r\n\r\n{}";
        assert_eq!(read(canonical).unwrap(), Some(b"{}".to_vec()));
        assert_eq!(read(b"").unwrap(), None);
    }

    #[test]
    fn refuses_what_a_sender_must_not_write() {
        for bad in [
            &b"Content-Length: 2\n\n{}"[..],
            b"Content-Type: application/json\r\n\r\n{}",
            b"Content-Length: -2\r\n\r\n{}",
            b"Content-Length: +2\r\n\r\n{}",
            b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
            b"Content-Length: 2\r\nX-Other: 1\r\n\r\n{}",
            b"Content-Length: 2\r\nContent-Type: text/plain\r\n\r\n{}",
        ] {
            let err = read(bad).expect_err(&String::from_utf8_lossy(bad));
            assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
        }
        let mut long = b"Content-Length: 2\r\n".to_vec();
        long.resize(MAX_HEAD + 10, b'a');
        assert_eq!(read(&long).unwrap_err().kind(), io::ErrorKind::InvalidData);
        for cut in [&b"Content-Len"[..], b"Content-Length: 5\r\n\r\n{}"] {
            assert_eq!(read(cut).unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        }
    }

    #[test]
    fn reads_nothing_past_the_body() {
        let mut two = frame(b"[1]");
        two.extend(frame(b"[2]"));
        let mut reader = &two[..];
        assert_eq!(read_frame(&mut reader).unwrap(), Some(b"[1]".to_vec()));
        assert_eq!(read_frame(&mut reader).unwrap(), Some(b"[2]".to_vec()));
        assert_eq!(read_frame(&mut reader).unwrap(), None);
    }

    #[tokio::test]
    async fn the_async_reader_takes_frames_in_pieces() {
        let (mut peer, ours) = tokio::io::duplex(64);
        let mut reader = FrameReader::new(ours);
        let bytes = [frame(b"{\"a\":1}"), frame(b"")].concat();
        let writer = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            for byte in bytes {
                peer.write_all(&[byte]).await.unwrap();
            }
        });
        assert_eq!(
            reader.next_frame().await.unwrap(),
            Some(b"{\"a\":1}".to_vec())
        );
        assert_eq!(reader.next_frame().await.unwrap(), Some(Vec::new()));
        writer.await.unwrap();
        assert_eq!(reader.next_frame().await.unwrap(), None);
    }

    #[tokio::test]
    async fn the_async_reader_reports_a_cut_frame() {
        let mut reader = FrameReader::new(&b"Content-Length: 5\r\n\r\n{}"[..]);
        let err = reader.next_frame().await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }
}
