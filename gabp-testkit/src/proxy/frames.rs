//! Frames on a link: reading them whole, forwarding or corrupting them, and writing them out
//! (SPEC/1.0/transport.md §1).

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use gabp_codec::{CodecError, Frame, FrameCodec};
use gabp_transport::ByteStream;
use tokio::io::{AsyncReadExt, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;

use super::link::{Link, Out};
use super::messages::{bridge_frame, mod_frame};
use super::MALFORMED_HEADER;
use crate::fault::Kind;
use crate::record::Direction;
use gabp_codec::encode_frame as frame;

pub(super) async fn write_side(
    link: Arc<Link>,
    mut io: WriteHalf<ByteStream>,
    mut queue: mpsc::Receiver<Out>,
    direction: Direction,
) {
    loop {
        let item = tokio::select! {
            () = link.cancel.cancelled() => break,
            item = queue.recv() => item,
        };
        let Some(Out::Bytes(bytes)) = item else { break };
        let delay = link.faults.take(|k| match k {
            Kind::Delay(d, delay) if *d == direction => Some(*delay),
            _ => None,
        });
        if let Some(delay) = delay {
            tokio::select! {
                () = link.cancel.cancelled() => break,
                () = tokio::time::sleep(delay) => {}
            }
        }
        let written = tokio::select! {
            () = link.cancel.cancelled() => break,
            written = async { io.write_all(&bytes).await?; io.flush().await } => written,
        };
        if written.is_err() {
            break;
        }
    }
    // Nothing more goes this way: the peer sees the end of the stream.
    queue.close();
    let _ = io.shutdown().await;
}

pub(super) async fn read_side(
    link: Arc<Link>,
    io: ReadHalf<ByteStream>,
    direction: Direction,
    max_frame: usize,
) {
    let mut frames = FramedRead::new(io, FrameCodec::new().with_max_body_size(max_frame));
    let mut changes = link.faults.subscribe();
    loop {
        if link.faults.reading_stopped(direction) {
            tokio::select! {
                () = link.cancel.cancelled() => return,
                changed = changes.changed() => if changed.is_err() { return },
            }
            continue;
        }
        let next = tokio::select! {
            // Biased: a fault armed before a frame arrived applies to that frame.
            biased;
            () = link.cancel.cancelled() => return,
            // Re-check the faults when they change (a stop_reading must take effect at once).
            _ = changes.changed() => continue,
            next = frames.next() => next,
        };
        match next {
            Some(Ok(Frame::Body(body))) => {
                if !on_body(&link, direction, body).await {
                    return;
                }
            }
            Some(Ok(Frame::Oversized { declared, .. })) => {
                link.recorder
                    .record(direction, link.connection, Bytes::new(), declared, false);
                if !forward_filler(&link, direction, declared).await {
                    return;
                }
            }
            Some(Err(
                CodecError::TruncatedHeader { .. }
                | CodecError::TruncatedBody { .. }
                | CodecError::Io(_),
            ))
            | None => {
                // After a refused token the upstream-minimum mod's bridge side stays open until the bridge
                // closes it.
                let refused_open = link.state.lock().refused_open;
                if !(refused_open && direction == Direction::ModToBridge) {
                    link.close(direction).await;
                }
                if refused_open && direction == Direction::BridgeToMod {
                    link.close(Direction::ModToBridge).await;
                }
                return;
            }
            Some(Err(error)) => {
                tracing::debug!(%error, %direction, "malformed header through the proxy");
                let missing = matches!(error, CodecError::MissingContentLength);
                let stall = direction == Direction::BridgeToMod
                    && link
                        .faults
                        .take(|k| match k {
                            Kind::StallOnMalformedHeader if !missing => Some(()),
                            Kind::StallOnMissingLength if missing => Some(()),
                            _ => None,
                        })
                        .is_some();
                if !stall {
                    link.forward(direction, Bytes::from_static(MALFORMED_HEADER))
                        .await;
                }
                // The next frame cannot be found: discard the rest until the sender closes.
                let mut io = frames.into_inner();
                let mut sink = vec![0u8; 8192];
                loop {
                    let read = tokio::select! {
                        () = link.cancel.cancelled() => return,
                        read = io.read(&mut sink) => read,
                    };
                    if !matches!(read, Ok(n) if n > 0) {
                        break;
                    }
                }
                if stall {
                    link.cancel.cancel();
                } else {
                    link.close(direction).await;
                }
                return;
            }
        }
    }
}

/// Forwards a frame the proxy itself could not buffer: the header, then `declared` bytes of spaces.
async fn forward_filler(link: &Link, direction: Direction, declared: u64) -> bool {
    let mut header = bytes::BytesMut::new();
    let written = usize::try_from(declared).ok().and_then(|len| {
        let codec = FrameCodec::new().with_max_body_size(usize::MAX);
        codec.encode_header(len, &mut header).ok()
    });
    if written.is_none() {
        // A length this platform cannot address: nothing can follow on this side.
        link.close(direction).await;
        return false;
    }
    if !link.forward(direction, header.freeze()).await {
        return false;
    }
    let chunk = Bytes::from(vec![b' '; 64 * 1024]);
    let mut left = declared;
    while left > 0 {
        let n = usize::try_from(left.min(chunk.len() as u64)).unwrap_or(chunk.len());
        if !link.forward(direction, chunk.slice(..n)).await {
            return false;
        }
        left -= n as u64;
    }
    true
}

/// Handles one body from the peer `direction` starts at; false when the link must stop reading.
async fn on_body(link: &Arc<Link>, direction: Direction, body: Bytes) -> bool {
    link.recorder.record(
        direction,
        link.connection,
        body.clone(),
        body.len() as u64,
        false,
    );
    if link.faults.drop_now() {
        link.drop_connection().await;
        return false;
    }
    let body = match direction {
        Direction::BridgeToMod => match bridge_frame(link, body).await {
            Some(body) => body,
            None => return !link.cancel.is_cancelled(),
        },
        Direction::ModToBridge => match mod_frame(link, body) {
            Some(body) => body,
            None => return true,
        },
    };
    let body = if link
        .faults
        .take(|k| matches!(k, Kind::Corrupt(d) if *d == direction).then_some(()))
        .is_some()
    {
        corrupt(&body)
    } else {
        body
    };
    let interleave = link
        .faults
        .peek(|k| matches!(k, Kind::InterleaveAnswers).then_some(()))
        .is_some()
        && concurrent(link, direction, &body);
    let sent = if interleave {
        interleave_with_next(link, body).await
    } else {
        link.forward(direction, frame(&body)).await
    };
    if !sent {
        return false;
    }
    if link.faults.count_message() {
        link.drop_connection().await;
        return false;
    }
    true
}

/// Bytes of the same length that are not JSON.
pub(super) fn corrupt(body: &[u8]) -> Bytes {
    let mut out = vec![b'!'; body.len().max(1)];
    out[0] = b'{';
    Bytes::from(out)
}

/// For the interleave fault: counts the requests in flight; whether `body`, from the mod, is an answer with
/// others still to come (or one held back is waiting for it).
fn concurrent(link: &Link, direction: Direction, body: &[u8]) -> bool {
    let kind = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned));
    let mut state = link.state.lock();
    match (direction, kind.as_deref()) {
        (Direction::BridgeToMod, Some("request")) => {
            state.in_flight += 1;
            false
        }
        (Direction::ModToBridge, Some("response")) => {
            state.in_flight = state.in_flight.saturating_sub(1);
            state.in_flight > 0 || state.held.is_some()
        }
        (Direction::ModToBridge, _) => state.held.is_some(),
        _ => false,
    }
}

/// How long an answer is held back at most for the next one to interleave with (the interleave fault): a
/// request still in flight is normally answered well before.
const INTERLEAVE_WINDOW: std::time::Duration = std::time::Duration::from_millis(500);

/// The interleave fault: an answer while other requests are in flight is held back until the next answer,
/// and the two go out as header, header, body, body; should no answer follow within the window, it goes out
/// whole.
async fn interleave_with_next(link: &Arc<Link>, body: Bytes) -> bool {
    let held = {
        let mut state = link.state.lock();
        match state.held.take() {
            Some((_, first)) => Some(first),
            None => {
                state.held_count += 1;
                state.held = Some((state.held_count, body.clone()));
                let number = state.held_count;
                let link = link.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(INTERLEAVE_WINDOW).await;
                    let alone = {
                        let mut state = link.state.lock();
                        match &state.held {
                            Some((n, _)) if *n == number => state.held.take().map(|(_, b)| b),
                            _ => None,
                        }
                    };
                    if let Some(alone) = alone {
                        link.forward(Direction::ModToBridge, frame(&alone)).await;
                    }
                });
                None
            }
        }
    };
    let Some(first) = held else {
        return true;
    };
    let (one, two) = (frame(&first), frame(&body));
    let split = |f: &Bytes, body: &Bytes| f.len() - body.len();
    let (h1, h2) = (split(&one, &first), split(&two, &body));
    let mut out = Vec::with_capacity(one.len() + two.len());
    out.extend_from_slice(&one[..h1]);
    out.extend_from_slice(&two[..h2]);
    out.extend_from_slice(&first);
    out.extend_from_slice(&body);
    link.forward(Direction::ModToBridge, Bytes::from(out)).await
}
