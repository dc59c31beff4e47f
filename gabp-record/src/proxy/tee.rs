//! The forwarding path and the tee: [`pump`] copies bytes from one side to the other as they come and offers
//! each chunk to the writer's bounded queue without waiting; the writer cuts each direction's chunks into
//! frames (SPEC/1.0 recording.md §5).

use std::time::Instant;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::writer::Entry;
use crate::format::Direction;

/// Bytes read from one side at a time, at most.
const READ_CHUNK: usize = 16 * 1024;

/// Room below which the read buffer is renewed. Each chunk read is split off and kept by the writer's queue, so
/// the buffer cannot be reused; renewing it only when little room is left makes one allocation serve many small
/// chunks.
const READ_ROOM: usize = 2 * 1024;

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
