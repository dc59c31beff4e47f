//! What differs between the roles (SPEC/1.0 gabp.md §2): the [`Role`] a connection's engine runs with, its
//! signals, and why an engine stopped.

use std::task::{Context, Poll};

use std::convert::Infallible;
use std::future::Future;

use bytes::Bytes;
use gabp_types::decode::DecodeError;
use gabp_types::{Event, Request, Response};

/// What the role asks of the engine.
pub(crate) enum Signal<R> {
    /// Stop reading; write the answers owed, then close (a goodbye, a wrong token, shutdown).
    StopReading(R),
    /// Write what is queued, close our side, and read on until the peer closes too.
    CloseWrites,
    /// End now: cancel the handlers, close without writing more.
    End(R),
}

/// Why the engine stopped.
#[derive(Debug)]
pub(crate) enum Ended<R> {
    /// The peer closed its side of the stream.
    Eof,
    /// Reading or writing failed: the peer is gone.
    Io(String),
    /// The peer broke the framing rules (SPEC/1.0 transport.md §7: a header block that cannot be parsed, or
    /// end of input inside a frame): where, and the header seen.
    Framing(gabp_codec::FrameFault),
    /// The role's signal.
    Signal(R),
}

/// What a role contributes to the engine: its handlers, what it does with events and bad frames, its signals.
pub(crate) trait Role: Send {
    /// Why a role stops a connection.
    type Reason: Send;

    /// The future of a request being handled (a tower service's future; it never fails).
    type Answer: Future<Output = Result<Response, Infallible>> + Send + 'static;

    /// Room for one more request (the role's concurrency limit).
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<()>;

    /// Starts handling a request; `None` leaves it unanswered (a bridge answers nothing, SPEC/1.0 gabp.md §8).
    fn call(&mut self, request: Request) -> Option<Self::Answer>;

    /// An event from the peer, and the bytes of its frame's body (what queues count it as).
    fn on_event(&mut self, event: Event, size: usize);

    /// Reading paused because the peer does not read its answers; `Some` ends the connection at once.
    fn on_backlog_full(&mut self) -> Option<Self::Reason> {
        None
    }

    /// A frame that is not a valid request (SPEC/1.0 transport.md §7); `Some` answers it.
    fn on_invalid(&mut self, body: Bytes, error: DecodeError) -> Option<Response>;

    /// Whether bad frames are answered at all (a mod answers them; a bridge never does, so that two peers
    /// cannot keep answering each other's errors).
    fn answers_bad_frames(&self) -> bool;

    /// Stop, close or end requests, and the role's own timers.
    fn poll_signal(&mut self, cx: &mut Context<'_>) -> Poll<Signal<Self::Reason>>;

    /// Called for every frame read (a keepalive's sign of life).
    fn on_frame(&mut self) {}

    /// Called when the peer broke the framing, before the calls waiting here fail.
    fn on_framing(&mut self, _fault: &gabp_codec::FrameFault) {}

    /// Called once when reading stops, for whatever reason.
    fn on_read_end(&mut self) {}
}
