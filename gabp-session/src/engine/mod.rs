//! The connection engine: one loop per connection that owns the reader, the writer, the table of requests
//! this side sent, the requests it is handling and the queues of what it writes. The mod and the bridge run the
//! same loop; what differs between the roles (SPEC/1.0 gabp.md §2) is a [`Role`].
//!
//! Each turn of the loop (SPEC/1.0 transport.md §6, gabp.md §6):
//!
//! 1. *Signals* from the role: stop reading (goodbye, wrong token, shutdown, hello deadline), close our side,
//!    or end at once.
//! 2. *Calls this side sends* enter the table of calls as soon as they are queued, so that their time limits run
//!    whether or not the sink is ready; calls past their limit fail (SPEC/1.0 gabp.md §7).
//! 3. *Finished requests* move from the set being handled to the backlog of answers (already serialized).
//! 4. *Writing*: progress and answers first, then requests this side sends, then events, while the sink accepts
//!    frames; flushed once the bytes already read are handled (reading goes idle, or the turn's budget of frames
//!    is spent), so that answers to requests that arrived together leave together. Frames are whole bodies, so
//!    they never interleave.
//! 5. *Reading*, only while the backlog is below its bound: one frame at a time. Responses go to the table of
//!    calls, events and requests to the role. A request is dispatched in the turn that reads it, or waits for
//!    the role to be ready (its concurrency limit); its handler is polled once in place and, if that has to wait,
//!    runs on its own task, so a slow handler never delays a fast one. An answer given at once is written into
//!    the sink then, when nothing is to be written before it.
//! 6. When reading has stopped, calls still waiting fail at once (nothing can answer them now); the answers this
//!    side owes are written, then the sink is closed. While handlers still run, the stream is still polled and
//!    what arrives dropped, so that a peer gone meanwhile is noticed. Reading or writing failing means the peer
//!    is gone: the handlers still running are cancelled at once and the loop ends. Ending at once (a signal, a
//!    failed read) flushes only what the sink takes without waiting.
//!
//! Every queue is bounded: requests handled by the role's limit, answers and the requests being handled by the
//! backlog's bounds in answers and in bytes, requests sent by their frame queue and the table's bound on frames
//! not yet written, events by the role's event queue.
//!
//! Every source the loop waits on (signals, queues, timers) is polled on every turn that reaches it: a poll that
//! tokio's cooperative budget refuses wakes the task instead of registering, and the next turn polls it again.

mod answering;
mod backlog;
mod body;
mod calls;
mod framing;
mod inflight;
mod queue;
mod result;
mod role;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::{Sink, Stream};
use gabp_transport::{CodecError, Connection, Frame, FrameReader, FrameWriter};
use gabp_types::decode::{decode, success_result, written_success, DecodeError, DecodeMode};
use gabp_types::{Message, MessageId, MessageKind, Request};
use tokio::time::Sleep;

pub(crate) use body::to_body;
pub(crate) use calls::{Delivery, Outgoing};
pub(crate) use inflight::InFlight;
pub(crate) use queue::{frame_queue, FrameQueue, FrameSender, TrySendError};
pub(crate) use result::{CallResult, Failure};
pub(crate) use role::{Ended, Role, Signal};

use backlog::Backlog;
use calls::Calls;
use inflight::Handling;
use result::answer;

/// How many frames one poll of the engine reads (and requests among them it dispatches) before it flushes and
/// yields to the runtime: the answers to pipelined requests leave in batches of this many.
const FRAMES_PER_POLL: usize = 32;

/// The engine's bounds and timings.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// The largest answer this side writes; a larger one is replaced by a `-32603` error.
    pub(crate) max_message_size: usize,
    /// Answers waiting for the sink beyond which reading pauses.
    pub(crate) backlog: usize,
    /// Bytes of answers waiting and of requests being handled beyond which reading pauses.
    pub(crate) backlog_bytes: usize,
    /// Calls this side expects to have in flight (the table is swept of abandoned calls past twice that).
    pub(crate) calls: usize,
    /// How long the answers owed may take once reading has stopped.
    pub(crate) drain_timeout: Duration,
}

/// Handles for what the local side sends through the engine.
pub(crate) struct Queues {
    /// Requests this side sends (a bridge's calls).
    pub(crate) outgoing: Option<FrameQueue<Outgoing>>,
    /// Events this side sends (a mod's subscriptions).
    pub(crate) events: Option<FrameQueue>,
    /// Progress events of the calls this side handles: written before any answer, so that a call's progress
    /// always precedes its response (SPEC/1.0 extensions.md §progress).
    pub(crate) progress: Option<FrameQueue>,
    /// The `tools/call` requests the peer may cancel (SPEC/1.0 extensions.md §cancel).
    pub(crate) in_flight: Option<std::sync::Arc<InFlight>>,
}

/// One connection's loop. Build it with [`Engine::new`], run it with [`Engine::run`].
pub(crate) struct Engine<P: Role> {
    reader: FrameReader,
    writer: FrameWriter,
    peer: P,
    calls: Calls,
    outgoing: Option<FrameQueue<Outgoing>>,
    events: Option<FrameQueue>,
    progress: Option<FrameQueue>,
    handling: Handling,
    /// Where each handler is first polled.
    answering: answering::Slot<P::Answer>,
    /// Answers waiting for the sink, in order.
    backlog: Backlog,
    /// A request read (and its size) but waiting for the role to be ready.
    waiting: Option<(Request, usize)>,
    reading: bool,
    /// The stream has ended or failed: nothing more to read, not even to discard.
    read_done: bool,
    /// Our side is closing: nothing new is written.
    closing_writes: bool,
    writer_closed: bool,
    unflushed: bool,
    drain_deadline: Option<Pin<Box<Sleep>>>,
    ended: Option<Ended<P::Reason>>,
    limits: Limits,
}

impl<P: Role> Engine<P> {
    pub(crate) fn new(connection: Connection, peer: P, queues: Queues, limits: Limits) -> Self {
        let (reader, writer) = connection.into_split();
        Engine {
            reader,
            writer,
            peer,
            calls: Calls::new(limits.calls),
            outgoing: queues.outgoing,
            events: queues.events,
            progress: queues.progress,
            handling: Handling::new(queues.in_flight, limits.max_message_size),
            answering: answering::Slot::new(),
            backlog: Backlog::new(limits.backlog, limits.backlog_bytes),
            waiting: None,
            reading: true,
            read_done: false,
            closing_writes: false,
            writer_closed: false,
            unflushed: false,
            drain_deadline: None,
            ended: None,
            limits,
        }
    }

    /// Drives the connection until it closes; says why.
    pub(crate) async fn run(mut self) -> Ended<P::Reason> {
        let ended = futures::future::poll_fn(|cx| self.poll_drive(cx)).await;
        if self.reading {
            self.peer.on_read_end();
        }
        self.handling.abort_all();
        // The calls still queued fail now: their callers see the connection lost.
        if let Some(outgoing) = self.outgoing.take() {
            outgoing.drain().await;
        }
        ended
    }

    fn poll_drive(&mut self, cx: &mut Context<'_>) -> Poll<Ended<P::Reason>> {
        let mut budget = FRAMES_PER_POLL;
        loop {
            if let Some(ended) = self.poll_signals(cx) {
                return Poll::Ready(self.end(ended, cx));
            }
            self.calls.poll_outgoing(&mut self.outgoing, cx);
            self.calls.poll_expired(cx);
            // Skipped while no task runs: a turn that spawns one always takes another turn after it.
            while let Poll::Ready(answer) = self.handling.poll_answer(cx) {
                self.backlog.push(answer);
            }
            if let Err(e) = self.poll_write(cx) {
                return Poll::Ready(write_failed(&e));
            }
            if self.calls.has_room_again() {
                cx.waker().wake_by_ref();
            }
            match self.poll_read(cx) {
                Read::Progress => {
                    budget -= 1;
                    if budget > 0 {
                        continue;
                    }
                    // Yielding to the runtime: what this turn wrote leaves now.
                    if let Err(e) = self.poll_flush(cx) {
                        return Poll::Ready(write_failed(&e));
                    }
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Read::Failed(ended) => return Poll::Ready(self.end(ended, cx)),
                Read::Idle => {
                    if let Err(e) = self.poll_flush(cx) {
                        return Poll::Ready(write_failed(&e));
                    }
                }
            }
            if let Some(ended) = self.poll_finish(cx) {
                return Poll::Ready(ended);
            }
            return Poll::Pending;
        }
    }

    /// Ends the loop at once: what was already written is flushed if the sink takes it now, nothing else is
    /// waited for.
    fn end(&mut self, ended: Ended<P::Reason>, cx: &mut Context<'_>) -> Ended<P::Reason> {
        if let Err(e) = self.poll_flush(cx) {
            tracing::debug!(error = %e, "flushing before the end failed");
        }
        ended
    }

    fn poll_signals(&mut self, cx: &mut Context<'_>) -> Option<Ended<P::Reason>> {
        match self.peer.poll_signal(cx) {
            Poll::Pending => None,
            Poll::Ready(Signal::End(reason)) => Some(Ended::Signal(reason)),
            Poll::Ready(Signal::StopReading(reason)) => {
                self.stop_reading(Ended::Signal(reason));
                None
            }
            Poll::Ready(Signal::CloseWrites) => {
                if !self.closing_writes {
                    self.closing_writes = true;
                    self.events = None;
                    if let Some(outgoing) = &mut self.outgoing {
                        outgoing.close();
                    }
                }
                None
            }
        }
    }

    /// Ends once reading has stopped and everything owed is written, or the drain deadline passed.
    fn poll_finish(&mut self, cx: &mut Context<'_>) -> Option<Ended<P::Reason>> {
        let owed = self.waiting.is_some() || !self.handling.is_empty() || !self.backlog.is_empty();
        let queued =
            self.calls.has_unsent() || self.outgoing.as_ref().is_some_and(|q| !q.is_empty());
        let quiet = !owed && !self.unflushed && !queued;
        if quiet && (!self.reading || self.closing_writes) && !self.writer_closed {
            match Pin::new(&mut self.writer).poll_close(cx) {
                Poll::Ready(Ok(())) => self.writer_closed = true,
                Poll::Ready(Err(e)) => {
                    tracing::debug!(error = %e, "closing the stream failed");
                    self.writer_closed = true;
                }
                Poll::Pending => {}
            }
        }
        if !self.reading && quiet && self.writer_closed {
            return Some(self.ended.take().unwrap_or(Ended::Eof));
        }
        if let Some(deadline) = &mut self.drain_deadline {
            if deadline.as_mut().poll(cx).is_ready() {
                tracing::warn!(
                    in_flight = self.handling.len(),
                    unwritten = self.backlog.len(),
                    "answers not delivered in time after reading stopped; closing anyway"
                );
                return Some(self.ended.take().unwrap_or(Ended::Eof));
            }
        }
        None
    }

    fn stop_reading(&mut self, why: Ended<P::Reason>) {
        if !self.reading {
            return;
        }
        self.reading = false;
        self.events = None;
        // Nothing can answer the calls still waiting now, nor the ones still queued.
        self.calls.fail_all();
        if let Some(outgoing) = &mut self.outgoing {
            outgoing.close();
        }
        self.drain_deadline = Some(Box::pin(tokio::time::sleep(self.limits.drain_timeout)));
        self.peer.on_read_end();
        self.ended.get_or_insert(why);
    }

    /// Moves answers, then requests, then events into the sink while it accepts them; flushes unless bytes read
    /// from the stream wait to be handled (their answers join this burst; every way out of the loop flushes).
    fn poll_write(&mut self, cx: &mut Context<'_>) -> Result<(), CodecError> {
        if self.writer_closed {
            self.backlog.clear();
            return Ok(());
        }
        loop {
            if self.backlog.is_empty()
                && !self.calls.has_unsent()
                && self.events.is_none()
                && self.progress.is_none()
            {
                break;
            }
            match Pin::new(&mut self.writer).poll_ready(cx) {
                Poll::Pending => break,
                Poll::Ready(result) => result?,
            }
            let Some(body) = self.next_frame(cx) else {
                break;
            };
            Pin::new(&mut self.writer).start_send(body)?;
            self.unflushed = true;
        }
        if self.reading && self.reader.buffered_len() > 0 {
            return Ok(());
        }
        self.poll_flush(cx)
    }

    /// Flushes what was written since the last flush.
    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Result<(), CodecError> {
        if self.unflushed {
            if let Poll::Ready(result) = Pin::new(&mut self.writer).poll_flush(cx) {
                result?;
                self.unflushed = false;
            }
        }
        Ok(())
    }

    /// Whether nothing is written before answers: no progress (SPEC/1.0 extensions.md §progress: a call's
    /// progress comes before its answer) and no answer waiting. `next_frame`'s order.
    fn nothing_before_answers(&self) -> bool {
        self.backlog.is_empty() && self.progress.as_ref().is_none_or(FrameQueue::is_empty)
    }

    /// The next frame to write: progress, an answer, a request this side sends, or an event (what
    /// `nothing_before_answers` checks comes first).
    fn next_frame(&mut self, cx: &mut Context<'_>) -> Option<Bytes> {
        if let Some(progress) = &mut self.progress {
            match progress.poll_next(cx) {
                Poll::Ready(Some(body)) => return Some(body),
                Poll::Ready(None) => self.progress = None,
                Poll::Pending => {}
            }
        }
        if let Some(body) = self.backlog.pop() {
            return Some(body);
        }
        if let Some(body) = self.calls.next_unsent() {
            return Some(body);
        }
        if let Some(events) = &mut self.events {
            match events.poll_next(cx) {
                Poll::Ready(Some(body)) => return Some(body),
                Poll::Ready(None) => self.events = None,
                Poll::Pending => {}
            }
        }
        None
    }

    /// Reads and handles at most one frame (or dispatches the waiting request).
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Read<P::Reason> {
        if self.waiting.is_some() {
            return self.poll_dispatch(cx);
        }
        if !self.reading {
            return self.poll_discard(cx);
        }
        if self.backlog.is_full() {
            tracing::trace!(
                answers = self.backlog.len(),
                bytes = self.backlog.bytes(),
                "the peer is not reading its answers; reading paused"
            );
            return match self.peer.on_backlog_full() {
                Some(reason) => Read::Failed(Ended::Signal(reason)),
                None => Read::Idle,
            };
        }
        match Pin::new(&mut self.reader).poll_next(cx) {
            Poll::Pending => Read::Idle,
            Poll::Ready(None) => {
                tracing::debug!("the peer closed the stream");
                self.read_done = true;
                self.stop_reading(Ended::Eof);
                Read::Progress
            }
            Poll::Ready(Some(Err(CodecError::Io(e)))) => {
                tracing::debug!(error = %e, "reading from the peer failed");
                Read::Failed(Ended::Io(e.to_string()))
            }
            Poll::Ready(Some(Err(e))) => self.on_frame_error(&e),
            Poll::Ready(Some(Ok(frame))) => {
                self.peer.on_frame();
                self.on_frame(frame);
                // A request read is dispatched in the same turn when the role has room for it.
                self.poll_dispatch(cx);
                Read::Progress
            }
        }
    }

    /// Dispatches the request waiting, if any, once the role is ready for it.
    fn poll_dispatch(&mut self, cx: &mut Context<'_>) -> Read<P::Reason> {
        let Some((request, size)) = self.waiting.take() else {
            return Read::Idle;
        };
        if self.peer.poll_ready(cx).is_pending() {
            self.waiting = Some((request, size));
            return Read::Idle;
        }
        self.dispatch(request, size);
        Read::Progress
    }

    /// Once reading has stopped, while handlers still run, what the peer sends is dropped unread but the stream
    /// is still polled: a peer that is gone (a read error, a transport's liveness check failing) ends the drain at
    /// once and cancels those handlers (SPEC/1.0 gabp.md §7). With none running, nothing is read (a read left
    /// pending on stdio would hold up the process's exit).
    fn poll_discard(&mut self, cx: &mut Context<'_>) -> Read<P::Reason> {
        if self.read_done || self.handling.is_empty() {
            return Read::Idle;
        }
        match Pin::new(&mut self.reader).poll_next(cx) {
            Poll::Pending => Read::Idle,
            Poll::Ready(Some(Ok(_))) => Read::Progress,
            Poll::Ready(Some(Err(CodecError::Io(e)))) => {
                tracing::debug!(error = %e, "reading from the peer failed while draining");
                Read::Failed(Ended::Io(e.to_string()))
            }
            Poll::Ready(None | Some(Err(_))) => {
                self.read_done = true;
                Read::Idle
            }
        }
    }

    fn on_frame(&mut self, frame: Frame) {
        let body = match frame {
            Frame::Body(body) => body,
            Frame::Oversized { declared, limit } => {
                tracing::debug!(declared, limit, "oversized frame skipped");
                if self.peer.answers_bad_frames() {
                    self.push_answer(CodecError::Oversized { declared, limit }.to_response());
                }
                return;
            }
        };
        // A success answering a call waiting here: its result stays text until its caller reads it, and one as
        // gabp-rs writes it is not even checked here: its caller checks what it reads of it.
        if !self.calls.is_empty() {
            if let Some((id, range)) = written_success(&body) {
                self.answer(id, Ok(CallResult::Unread { body, range }));
                return;
            }
            if let Some((id, range)) = success_result(&body) {
                self.answer(id, Ok(CallResult::Text { body, range }));
                return;
            }
        }
        match decode(&body, DecodeMode::Lenient) {
            Ok(Message::Request(request)) => self.waiting = Some((request, body.len())),
            Ok(Message::Response(response)) => self.answer(response.id, answer(response.outcome)),
            Ok(Message::Event(event)) => self.peer.on_event(event, body.len()),
            Err(error) => self.on_invalid(body, error),
        }
    }

    /// A frame that is not a usable message (SPEC/1.0 transport.md §7). One that carries the id of a call
    /// waiting here was meant as its answer: the call fails with a protocol error rather than waiting for its
    /// time limit. Responses and events are never answered; anything else goes to the role.
    fn on_invalid(&mut self, body: Bytes, error: DecodeError) {
        if let Some(id) = error.id().filter(|id| self.calls.contains(id)) {
            self.answer(id, result::invalid(&error));
            return;
        }
        if let Some(kind @ (MessageKind::Response | MessageKind::Event)) = error.kind() {
            tracing::debug!(
                code = error.code().0,
                pointer = error.pointer(),
                "ignoring an invalid {}",
                kind.as_str()
            );
            return;
        }
        tracing::debug!(
            code = error.code().0,
            pointer = error.pointer(),
            "invalid message"
        );
        if !self.peer.answers_bad_frames() {
            return;
        }
        if let Some(answer) = self.peer.on_invalid(body, error) {
            self.push_answer(answer);
        }
    }

    /// Hands what a response says to the call it answers.
    fn answer(&mut self, id: MessageId, answered: Result<CallResult, Failure>) {
        if !self.calls.deliver(&id, Delivery::Answered(answered)) {
            tracing::debug!(%id, "discarding a late or unknown response");
        }
    }
}

/// Writing failed: the peer is gone.
fn write_failed<R>(error: &CodecError) -> Ended<R> {
    tracing::debug!(%error, "writing to the peer failed");
    Ended::Io(error.to_string())
}

enum Read<R> {
    /// A frame was handled (or a request dispatched).
    Progress,
    /// Nothing to read now.
    Idle,
    /// The peer is gone.
    Failed(Ended<R>),
}

#[cfg(test)]
mod tests;
