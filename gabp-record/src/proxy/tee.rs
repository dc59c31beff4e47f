//! The forwarding path and the tee: [`pump`] copies bytes from one side to the other as they come and offers
//! each chunk to a bounded queue without waiting; [`framer`] cuts the queued chunks into frames for the
//! writer (SPEC/1.0 recording.md §5).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use bytes::{Buf, Bytes, BytesMut};
use gabp_codec::{Frame, FrameCodec};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::Decoder;
use tokio_util::sync::CancellationToken;

use super::writer::Entry;
use super::Stats;
use crate::format::Direction;

/// Bytes read from one side at a time.
const READ_CHUNK: usize = 16 * 1024;

/// What a framer keeps of a stream it has lost its place in while it looks for the next header.
const RESYNC_KEEP: usize = 15;

/// Bytes read from one side, with the time they arrived and how many bytes before them the queue refused.
#[derive(Debug)]
pub(crate) struct Chunk {
    pub(crate) at: Instant,
    pub(crate) bytes: Bytes,
    pub(crate) lost_before: u64,
}

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

/// Copies `from` to `to` until end of stream; every chunk goes on to `tee` only if there is room
/// (forwarding never waits for the recorder).
pub(crate) async fn pump<R, W>(
    mut from: R,
    mut to: W,
    tee: mpsc::Sender<Chunk>,
    cancel: CancellationToken,
) -> PumpEnd
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = BytesMut::new();
    let mut lost = 0u64;
    loop {
        buf.reserve(READ_CHUNK);
        let read = tokio::select! {
            () = cancel.cancelled() => return PumpEnd::Cancelled,
            read = from.read_buf(&mut buf) => read,
        };
        match read {
            Ok(0) => {
                let _ = to.shutdown().await;
                return PumpEnd::Eof;
            }
            Ok(_) => {}
            Err(e) => return PumpEnd::Error(e),
        }
        let at = Instant::now();
        let chunk = buf.split().freeze();
        if let Err(e) = to.write_all(&chunk).await {
            return PumpEnd::Error(e);
        }
        let len = chunk.len() as u64;
        match tee.try_send(Chunk {
            at,
            bytes: chunk,
            lost_before: lost,
        }) {
            Ok(()) => lost = 0,
            Err(mpsc::error::TrySendError::Full(_)) => lost += len,
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }
}

/// Cuts the chunks of one direction into frames and offers each to the writer; what does not fit in the
/// writer's queue is counted and recorded as dropped once there is room again.
pub(crate) async fn framer(
    mut chunks: mpsc::Receiver<Chunk>,
    writer: mpsc::Sender<Entry>,
    connection: u64,
    direction: Direction,
    max_frame: usize,
    stats: Arc<Stats>,
) {
    let mut state = Framer {
        codec: FrameCodec::new().with_max_body_size(max_frame),
        buf: BytesMut::new(),
        resync: false,
        dropped_frames: 0,
        dropped_bytes: 0,
        connection,
        direction,
        writer,
        stats,
        at: Instant::now(),
    };
    while let Some(chunk) = chunks.recv().await {
        state.at = chunk.at;
        if chunk.lost_before > 0 {
            // The place in the stream is lost: what was buffered belongs to frames that cannot be completed.
            state.dropped_bytes += chunk.lost_before + state.buf.len() as u64;
            state.buf.clear();
            state.resync = true;
        }
        state.buf.extend_from_slice(&chunk.bytes);
        state.frames();
    }
    if !state.buf.is_empty() && !state.resync {
        let length = Some(state.buf.len() as u64);
        state.offer(Entry::Undecodable {
            at: state.at,
            connection,
            direction,
            reason: "the stream ended inside a frame".to_owned(),
            length,
        });
    }
    state.flush_dropped();
    if state.dropped_frames + state.dropped_bytes > 0 {
        // The last word on what was lost waits for room: the connection is over, nothing else is waiting.
        let entry = state.dropped_entry();
        if state.writer.send(entry).await.is_ok() {
            state
                .stats
                .dropped_bytes
                .fetch_add(state.dropped_bytes, Ordering::Relaxed);
        }
    }
}

struct Framer {
    codec: FrameCodec,
    buf: BytesMut,
    resync: bool,
    dropped_frames: u64,
    dropped_bytes: u64,
    connection: u64,
    direction: Direction,
    writer: mpsc::Sender<Entry>,
    stats: Arc<Stats>,
    at: Instant,
}

impl Framer {
    fn frames(&mut self) {
        loop {
            if self.resync && !self.find_header() {
                return;
            }
            match self.codec.decode(&mut self.buf) {
                Ok(Some(Frame::Body(body))) => self.offer(Entry::Frame {
                    at: self.at,
                    connection: self.connection,
                    direction: self.direction,
                    body,
                }),
                Ok(Some(Frame::Oversized { declared, limit })) => self.offer(Entry::Undecodable {
                    at: self.at,
                    connection: self.connection,
                    direction: self.direction,
                    reason: format!(
                        "a body of {declared} bytes, over the recorder's limit of {limit}"
                    ),
                    length: Some(declared),
                }),
                Ok(None) => return,
                Err(e) => {
                    self.offer(Entry::Undecodable {
                        at: self.at,
                        connection: self.connection,
                        direction: self.direction,
                        reason: format!("a broken frame: {e}"),
                        length: None,
                    });
                    self.codec = FrameCodec::new().with_max_body_size(self.codec.max_body_size());
                    self.resync = true;
                }
            }
        }
    }

    /// Skips to the next `Content-Length` header (which cannot occur inside a JSON body: JSON strings have no
    /// raw CR LF, SPEC/1.0 transport.md §1); false when there is none yet.
    fn find_header(&mut self) -> bool {
        let found = self
            .buf
            .windows(15)
            .position(|w| w.eq_ignore_ascii_case(b"content-length:"));
        let skip = found.unwrap_or(self.buf.len().saturating_sub(RESYNC_KEEP));
        self.dropped_bytes += skip as u64;
        self.buf.advance(skip);
        if found.is_some() {
            self.resync = false;
            self.codec = FrameCodec::new().with_max_body_size(self.codec.max_body_size());
        }
        found.is_some()
    }

    fn offer(&mut self, entry: Entry) {
        self.flush_dropped();
        if self.dropped_frames + self.dropped_bytes > 0 {
            self.dropped_frames += 1;
            self.stats.dropped_frames.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if self.writer.try_send(entry).is_err() {
            self.dropped_frames += 1;
            self.stats.dropped_frames.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Offers the count of what was dropped, if any, and forgets it once the writer has it.
    fn flush_dropped(&mut self) {
        if self.dropped_frames + self.dropped_bytes == 0 {
            return;
        }
        if self.writer.try_send(self.dropped_entry()).is_ok() {
            self.stats
                .dropped_bytes
                .fetch_add(self.dropped_bytes, Ordering::Relaxed);
            self.dropped_frames = 0;
            self.dropped_bytes = 0;
        }
    }

    fn dropped_entry(&self) -> Entry {
        Entry::Dropped {
            at: self.at,
            connection: self.connection,
            direction: self.direction,
            frames: self.dropped_frames,
            bytes: self.dropped_bytes,
        }
    }
}
