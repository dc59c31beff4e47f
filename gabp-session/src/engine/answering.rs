//! Answering the peer's requests: each handler is polled once in place, in a slot the engine reuses from
//! request to request, and only one that has to wait moves to a task of its own, slot and all. An answer given
//! at once goes straight into the sink when nothing owed waits before it (SPEC/1.0 extensions.md §progress:
//! a call's progress comes before its answer).

use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use gabp_types::methods::{Method, ToolsCall};
use gabp_types::{MessageId, Request, Response};

use super::body::{self, encode, panicked};
use super::{Engine, Role};

impl<P: Role> Engine<P> {
    /// Owes `response`: written into the sink at once when nothing is written before answers (see
    /// `next_frame`) and the sink takes it, else queued behind what is.
    pub(super) fn push_answer(&mut self, response: Response) {
        let max = self.limits.max_message_size;
        let response =
            if !self.writer_closed && self.nothing_before_answers() && self.writer.has_room() {
                match body::write(&mut self.writer, response, max) {
                    Ok(()) => {
                        self.unflushed = true;
                        return;
                    }
                    Err(response) => response,
                }
            } else {
                response
            };
        self.backlog.push(encode(response, max));
    }

    /// Handles a request of `size` bytes on the wire: polled once in place, on a task of its own if it waits.
    pub(super) fn dispatch(&mut self, request: Request, size: usize) {
        let id = request.id;
        let cancellable = self.handling.cancellable() && request.method.as_str() == ToolsCall::NAME;
        let Some(future) = self.peer.call(request) else {
            return;
        };
        // Most handlers answer without ever waiting. A task's first poll registers the task's waker, so
        // nothing is lost by polling here with a no-op one.
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let slot = &mut self.answering;
        slot.fill(future);
        match std::panic::catch_unwind(AssertUnwindSafe(|| slot.first_poll(&mut cx))) {
            Ok(Poll::Ready(Ok(response))) => self.push_answer(response),
            Ok(Poll::Ready(Err(never))) => match never {},
            Ok(Poll::Pending) => {
                let charge = self.backlog.charge(size);
                let parked = self.answering.park(id);
                self.handling.spawn(id, parked, charge, cancellable);
            }
            Err(_) => {
                // Dropping what panicked may panic again: that costs this request only.
                let slot = &mut self.answering;
                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| slot.clear()));
                self.push_answer(panicked(id));
            }
        }
    }
}

/// Where a handler's future is first polled: a box kept from request to request, so that a handler that answers
/// at once costs no allocation; one that has to wait leaves with the box, and the slot takes a new one.
pub(super) struct Slot<F>(Pin<Box<Option<F>>>);

impl<F: Future<Output = Answered>> Slot<F> {
    pub(super) fn new() -> Self {
        Slot(Box::pin(None))
    }

    /// Puts `future` in the slot.
    fn fill(&mut self, future: F) {
        self.0.set(Some(future));
    }

    /// Polls the future in the slot for the first time; one that is done leaves the slot empty.
    fn first_poll(&mut self, cx: &mut Context<'_>) -> Poll<F::Output> {
        let polled = poll_in(self.0.as_mut(), cx);
        if polled.is_ready() {
            self.clear();
        }
        polled
    }

    /// Empties the slot.
    fn clear(&mut self) {
        self.0.set(None);
    }

    /// The future of request `id` left waiting in the slot, in its box; the slot gets a new, empty one.
    fn park(&mut self, id: MessageId) -> Parked<F> {
        Parked {
            id,
            slot: std::mem::replace(&mut self.0, Box::pin(None)),
        }
    }
}

/// What a handler's future gives.
type Answered = Result<Response, Infallible>;

/// The future of request `id` that waits, still in the box it was first polled in.
pub(super) struct Parked<F> {
    id: MessageId,
    slot: Pin<Box<Option<F>>>,
}

impl<F: Future<Output = Answered>> Future for Parked<F> {
    type Output = Answered;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Answered> {
        let id = self.id;
        match self.slot.as_mut().as_pin_mut() {
            Some(future) => future.poll(cx),
            // Never parked empty; were it, the request is still answered.
            None => Poll::Ready(Ok(panicked(id))),
        }
    }
}

/// Polls the future in `slot`; an empty slot (never the case where this is called) stays pending.
fn poll_in<F: Future>(slot: Pin<&mut Option<F>>, cx: &mut Context<'_>) -> Poll<F::Output> {
    slot.as_pin_mut()
        .map_or(Poll::Pending, |future| future.poll(cx))
}
