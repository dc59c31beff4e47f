//! A scripted reader: returns exactly the chunks it is given, with `Pending` where the script says.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::StreamExt;
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::codec::{Decoder, FramedRead};

use gabp_codec::{CodecError, Frame, FrameCodec};

/// One step of a [`ScriptedReader`].
#[derive(Debug, Clone)]
pub enum Step {
    /// The next read returns (the start of) these bytes.
    Data(Vec<u8>),
    /// The next read returns `Pending` (after waking the task).
    Pending,
}

/// Shorthand for a data step.
pub fn data(bytes: impl AsRef<[u8]>) -> Step {
    Step::Data(bytes.as_ref().to_vec())
}

/// An `AsyncRead` that plays a script of chunks and `Pending`s, then reports EOF.
#[derive(Debug, Default)]
pub struct ScriptedReader {
    steps: VecDeque<Step>,
    current: Vec<u8>,
    offset: usize,
    /// Largest number of bytes returned by one read.
    pub largest_read: usize,
}

impl ScriptedReader {
    pub fn new(steps: impl IntoIterator<Item = Step>) -> Self {
        Self {
            steps: steps.into_iter().collect(),
            ..Self::default()
        }
    }

    /// Each chunk in its own read, with a `Pending` between reads.
    pub fn chunks<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Self {
        Self::new(chunks.into_iter().flat_map(|c| [data(c), Step::Pending]))
    }
}

impl AsyncRead for ScriptedReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            if self.offset < self.current.len() {
                let n = buf.remaining().min(self.current.len() - self.offset);
                let start = self.offset;
                buf.put_slice(&self.current[start..start + n]);
                self.offset += n;
                self.largest_read = self.largest_read.max(n);
                return Poll::Ready(Ok(()));
            }
            match self.steps.pop_front() {
                Some(Step::Data(bytes)) => {
                    self.current = bytes;
                    self.offset = 0;
                }
                Some(Step::Pending) => {
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                None => return Poll::Ready(Ok(())),
            }
        }
    }
}

/// Runs `codec` over the script until the stream ends; the fatal error, if any, is the last item.
pub async fn read_all<D: Decoder>(
    codec: D,
    reader: ScriptedReader,
) -> Vec<Result<D::Item, D::Error>> {
    FramedRead::new(reader, codec).collect().await
}

/// A frame as this crate writes it (SPEC/1.0 transport.md §1.1), written out by hand: the encoder's expected
/// output. Not `gabp_testkit::wire::frame`, which sits above this crate and calls the encoder this checks.
pub fn frame(body: impl AsRef<[u8]>) -> Vec<u8> {
    let body = body.as_ref();
    let mut out = format!(
        "Content-Length: {}\r\nContent-Type: application/json\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

pub fn body(frame: &Result<Frame, CodecError>) -> &[u8] {
    match frame {
        Ok(Frame::Body(body)) => body,
        other => panic!("expected a body, got {other:?}"),
    }
}

/// Decodes a script with the default codec and returns the items.
pub async fn decode(reader: ScriptedReader) -> Vec<Result<Frame, CodecError>> {
    read_all(FrameCodec::new(), reader).await
}

/// Decodes one whole input (in one read) with the default codec.
pub async fn decode_bytes(input: &[u8]) -> Vec<Result<Frame, CodecError>> {
    decode(ScriptedReader::new([data(input)])).await
}

/// Asserts that decoding `input` yields exactly one error, checked by `check`.
pub async fn assert_fatal(input: &[u8], check: impl FnOnce(&CodecError) -> bool) {
    // Followed by a valid frame that must never be reached: the error ends the stream.
    let mut input = input.to_vec();
    input.extend_from_slice(&frame("{}"));
    let items = decode_bytes(&input).await;
    assert_eq!(items.len(), 1, "{items:?}");
    match &items[0] {
        Err(err) => assert!(check(err), "unexpected error {err:?}"),
        Ok(frame) => panic!("expected an error, got {frame:?}"),
    }
}
