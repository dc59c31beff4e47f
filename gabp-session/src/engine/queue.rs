//! The queues of frames a connection writes besides its answers: the calls a bridge sends, the events of a mod's
//! subscriptions and the progress of the calls it handles (SPEC/1.0 gabp.md §6, extensions.md §progress). Each is
//! bounded by frames, and by bytes where its items are not bounded already (SPEC/1.0 security.md §7); a frame over
//! the bytes is refused, never waited for.
//! A connection with nothing queued pays a few loads per turn: the engine arms the queue once, and again only
//! after a send woke it or its waker changed.

use std::collections::VecDeque;
use std::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
pub(crate) use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::Notify;

/// What a queue holds: a frame, or what carries one, counted by its bytes.
pub(crate) trait Queued {
    /// The bytes counted against the queue's bound.
    fn bytes(&self) -> usize;
}

impl Queued for Bytes {
    fn bytes(&self) -> usize {
        self.len()
    }
}

/// What is queued, and the engine's waker, shared by both ends.
struct Shared<T> {
    held: parking_lot::Mutex<Held<T>>,
    /// How many frames `held` holds, changed under its lock: the engine reads it without the lock to find the
    /// queue empty.
    frames: AtomicUsize,
    /// The most frames held; a send waits for room past it.
    max_frames: usize,
    /// Live senders: the queue ends once they are all gone.
    senders: AtomicUsize,
    /// The engine's waker, kept when woken.
    waker: parking_lot::Mutex<Option<Waker>>,
    /// Whether the engine waits for a send's wake: set by the engine, cleared by the send (or the last sender
    /// gone) that wakes it.
    armed: AtomicBool,
    /// Sends waiting for room: one is told when a frame is taken from a full queue, and passes on any room left
    /// after its own frame (a send told and then dropped passes its turn on too); all are told when it closes.
    room: Notify,
}

/// The frames and their bytes.
struct Held<T> {
    items: VecDeque<T>,
    bytes: usize,
    /// Closed by the engine: no frame is let in any more.
    closed: bool,
}

/// The sending end (cloneable).
pub(crate) struct FrameSender<T = Bytes> {
    queued: Arc<Shared<T>>,
    max_bytes: usize,
}

impl<T> Clone for FrameSender<T> {
    fn clone(&self) -> Self {
        self.queued.senders.fetch_add(1, Ordering::SeqCst);
        FrameSender {
            queued: self.queued.clone(),
            max_bytes: self.max_bytes,
        }
    }
}

impl<T> Drop for FrameSender<T> {
    fn drop(&mut self) {
        // The last sender gone ends the queue: the engine is told, as by a send.
        if self.queued.senders.fetch_sub(1, Ordering::SeqCst) == 1 {
            wake(&self.queued);
        }
    }
}

/// The receiving end, held by the engine.
pub(crate) struct FrameQueue<T = Bytes> {
    queued: Arc<Shared<T>>,
    /// The waker last registered, to tell whether the engine's waker changed since.
    registered: Option<Waker>,
    /// Closed by the engine.
    closed: bool,
}

/// A queue of at most `frames` frames and `max_bytes` bytes; one frame is always let into an empty queue,
/// whatever its size.
pub(crate) fn frame_queue<T: Queued>(
    frames: usize,
    max_bytes: usize,
) -> (FrameSender<T>, FrameQueue<T>) {
    let queued = Arc::new(Shared {
        held: parking_lot::Mutex::new(Held {
            items: VecDeque::new(),
            bytes: 0,
            closed: false,
        }),
        frames: AtomicUsize::new(0),
        max_frames: frames.max(1),
        senders: AtomicUsize::new(1),
        waker: parking_lot::Mutex::new(None),
        armed: AtomicBool::new(false),
        room: Notify::new(),
    });
    (
        FrameSender {
            queued: queued.clone(),
            max_bytes,
        },
        FrameQueue {
            queued,
            registered: None,
            closed: false,
        },
    )
}

impl<T: Queued> FrameSender<T> {
    /// Queues `item`; refused when the queue is full in frames or in bytes ([`TrySendError::Full`]), or closed
    /// ([`TrySendError::Closed`]).
    pub(crate) fn try_send(&self, item: T) -> Result<(), TrySendError<T>> {
        self.enqueue(item).map_err(Refusal::into_error)?;
        wake(&self.queued);
        Ok(())
    }

    /// Queues `item` once the queue has room for a frame; refused when it is over the bytes
    /// ([`TrySendError::Full`]), or closed ([`TrySendError::Closed`]).
    pub(crate) async fn send(&self, mut item: T) -> Result<(), TrySendError<T>> {
        loop {
            // Waiting before looking, so that room made or a close after the look still wakes this send.
            let room = self.queued.room.notified();
            let mut room = std::pin::pin!(room);
            room.as_mut().enable();
            match self.enqueue(item) {
                Err(Refusal::NoRoom(back)) => item = back,
                queued => {
                    // Room left (after this frame, or with this one refused) goes to the next send waiting: a take
                    // tells only one.
                    if self.queued.frames.load(Ordering::SeqCst) < self.queued.max_frames {
                        self.queued.room.notify_one();
                    }
                    queued.map_err(Refusal::into_error)?;
                    wake(&self.queued);
                    return Ok(());
                }
            }
            room.await;
        }
    }

    /// Puts `item` in, counted, without waking the engine.
    fn enqueue(&self, item: T) -> Result<(), Refusal<T>> {
        let mut held = self.queued.held.lock();
        if held.closed {
            return Err(Refusal::Closed(item));
        }
        if held.items.len() >= self.queued.max_frames {
            return Err(Refusal::NoRoom(item));
        }
        let len = item.bytes();
        if held.bytes > 0 && held.bytes.saturating_add(len) > self.max_bytes {
            return Err(Refusal::OverBytes(item));
        }
        held.bytes += len;
        held.items.push_back(item);
        self.queued.frames.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// The most frames the queue holds.
    pub(crate) fn capacity(&self) -> usize {
        self.queued.max_frames
    }
}

/// Why a frame was not let in.
enum Refusal<T> {
    /// The queue holds its most frames: a send may wait for room.
    NoRoom(T),
    /// The frame would take the queue over its bytes: refused, never waited for.
    OverBytes(T),
    Closed(T),
}

impl<T> Refusal<T> {
    fn into_error(self) -> TrySendError<T> {
        match self {
            Refusal::NoRoom(item) | Refusal::OverBytes(item) => TrySendError::Full(item),
            Refusal::Closed(item) => TrySendError::Closed(item),
        }
    }
}

/// Wakes the engine if it waits, once a frame is in the queue (or the last sender is gone).
fn wake<T>(queued: &Shared<T>) {
    // Pairs with the fence in `FrameQueue::wait`: either the engine sees this frame, or this send or an earlier
    // one sees the queue armed and wakes it.
    fence(Ordering::SeqCst);
    if queued.armed.swap(false, Ordering::SeqCst) {
        // Woken by reference: a late wake leaves the waker in place for the next one.
        if let Some(waker) = &*queued.waker.lock() {
            waker.wake_by_ref();
        }
    }
}

impl<T: Queued> FrameQueue<T> {
    /// The next queued frame; without one, the queue is armed to wake the engine (again only when a send has
    /// woken it since, or the engine's waker changed), or `None` once the queue is closed, or its senders gone,
    /// and it is empty.
    #[inline]
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        if self.queued.frames.load(Ordering::SeqCst) == 0
            && !self.has_ended()
            && (self.still_armed(cx) || !self.wait(cx))
        {
            return Poll::Pending;
        }
        match self.take() {
            Some(item) => Poll::Ready(Some(item)),
            None if self.has_ended() => Poll::Ready(None),
            // Not reached: only the engine takes, and a frame counted is held. Were it, another turn looks again.
            None => {
                debug_assert!(self.is_empty(), "a frame counted is not held");
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }

    /// Whether no frame can come any more: closed here, or every sender gone.
    fn has_ended(&self) -> bool {
        self.closed || self.queued.senders.load(Ordering::SeqCst) == 0
    }

    /// Whether nothing is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.queued.frames.load(Ordering::SeqCst) == 0
    }

    /// Refuses new frames (sends waiting for room are refused too); those already queued are still taken.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        self.queued.held.lock().closed = true;
        self.queued.room.notify_waiters();
    }

    /// Whether the queue is still armed for `cx`'s waker, by an earlier turn's fenced arming: the next send wakes
    /// it. Asked of every queue on every turn, so kept inline.
    #[inline]
    fn still_armed(&self, cx: &Context<'_>) -> bool {
        self.registered_for(cx) && self.queued.armed.load(Ordering::SeqCst)
    }

    /// Whether `cx`'s waker is the one the queue last registered.
    #[inline]
    fn registered_for(&self, cx: &Context<'_>) -> bool {
        self.registered
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
    }

    /// Arms the queue to wake `cx`'s waker; `true` if it then found a frame counted, or every sender gone.
    fn wait(&mut self, cx: &mut Context<'_>) -> bool {
        if !self.registered_for(cx) {
            *self.queued.waker.lock() = Some(cx.waker().clone());
            self.registered = Some(cx.waker().clone());
        }
        self.queued.armed.store(true, Ordering::SeqCst);
        // Pairs with the fence in `wake`.
        fence(Ordering::SeqCst);
        self.queued.frames.load(Ordering::SeqCst) > 0
            || self.queued.senders.load(Ordering::SeqCst) == 0
    }

    /// Takes the first frame, if any; a send waiting for room is told of the room it leaves.
    fn take(&mut self) -> Option<T> {
        let mut held = self.queued.held.lock();
        let was_full = held.items.len() >= self.queued.max_frames;
        let item = held.items.pop_front()?;
        held.bytes = held.bytes.saturating_sub(item.bytes());
        self.queued.frames.fetch_sub(1, Ordering::SeqCst);
        drop(held);
        if was_full {
            self.queued.room.notify_one();
        }
        Some(item)
    }
}

impl<T> Drop for FrameQueue<T> {
    /// The engine gone: the queue closes, what it holds is dropped (a call's caller then sees the connection
    /// lost), and sends waiting for room are refused.
    fn drop(&mut self) {
        let held = {
            let mut held = self.queued.held.lock();
            held.closed = true;
            self.queued.frames.store(0, Ordering::SeqCst);
            held.bytes = 0;
            std::mem::take(&mut held.items)
        };
        self.queued.room.notify_waiters();
        // Dropped outside the lock: what an item's drop does cannot reach back into the queue while it is held.
        drop(held);
    }
}

#[cfg(test)]
impl<T: Queued> FrameQueue<T> {
    /// How many frames are queued.
    pub(crate) fn len(&self) -> usize {
        self.queued.frames.load(Ordering::SeqCst)
    }

    /// The next queued frame, without waiting.
    pub(crate) fn try_next(&mut self) -> Option<T> {
        self.take()
    }
}

#[cfg(test)]
mod tests;
