//! The queues of frames a connection writes besides its answers: the calls a bridge sends, the events of a mod's
//! subscriptions and the progress of the calls it handles (SPEC/1.0 gabp.md §6, extensions.md §progress). Each is
//! a tokio channel bounded by frames and, where its items are not bounded already, by bytes (SPEC/1.0
//! security.md §7): a semaphore whose permits are bytes, held by each frame until the engine takes it. A frame
//! over the bytes is refused, never waited for.

use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::sync::mpsc;
pub(crate) use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

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

/// A frame in the queue, and the bytes of the queue's budget it holds.
struct Held<T> {
    item: T,
    _bytes: Option<OwnedSemaphorePermit>,
}

/// The bytes a queue may hold, as the permits of a semaphore.
#[derive(Clone)]
struct Budget {
    bytes: Arc<Semaphore>,
    max: u32,
}

/// The sending end (cloneable).
pub(crate) struct FrameSender<T = Bytes> {
    tx: mpsc::Sender<Held<T>>,
    budget: Option<Budget>,
}

impl<T> Clone for FrameSender<T> {
    fn clone(&self) -> Self {
        FrameSender {
            tx: self.tx.clone(),
            budget: self.budget.clone(),
        }
    }
}

/// The receiving end, held by the engine. Dropped, it drops what it holds (a call's caller then sees the
/// connection lost) and refuses the sends waiting for room.
pub(crate) struct FrameQueue<T = Bytes> {
    rx: mpsc::Receiver<Held<T>>,
    /// The frames of the last [`FrameQueue::poll_take`], kept for the next.
    taken: Vec<Held<T>>,
}

/// A queue of at most `frames` frames and, given `max_bytes`, at most that many bytes; one frame is always let
/// into a queue that holds no bytes, whatever its size.
pub(crate) fn frame_queue<T: Queued>(
    frames: usize,
    max_bytes: Option<usize>,
) -> (FrameSender<T>, FrameQueue<T>) {
    let (tx, rx) = mpsc::channel(frames.clamp(1, Semaphore::MAX_PERMITS));
    let budget = max_bytes.map(|max| {
        let max = u32::try_from(max.min(Semaphore::MAX_PERMITS)).unwrap_or(u32::MAX);
        Budget {
            bytes: Arc::new(Semaphore::new(max as usize)),
            max,
        }
    });
    let queue = FrameQueue {
        rx,
        taken: Vec::new(),
    };
    (FrameSender { tx, budget }, queue)
}

impl<T: Queued> FrameSender<T> {
    /// Queues `item`; refused when the queue is full in frames or in bytes ([`TrySendError::Full`]), or closed
    /// ([`TrySendError::Closed`]).
    pub(crate) fn try_send(&self, item: T) -> Result<(), TrySendError<T>> {
        match self.tx.try_reserve() {
            Ok(room) => self.put(room, item),
            Err(TrySendError::Full(())) => Err(TrySendError::Full(item)),
            Err(TrySendError::Closed(())) => Err(TrySendError::Closed(item)),
        }
    }

    /// Queues `item` once the queue has room for a frame; refused when it is over the bytes
    /// ([`TrySendError::Full`]), or closed ([`TrySendError::Closed`]).
    pub(crate) async fn send(&self, item: T) -> Result<(), TrySendError<T>> {
        match self.tx.reserve().await {
            Ok(room) => self.put(room, item),
            Err(_) => Err(TrySendError::Closed(item)),
        }
    }

    /// Puts `item` in the room reserved for it, with its bytes if the budget has them now; a frame larger than
    /// the whole budget takes all of it.
    fn put(&self, room: mpsc::Permit<'_, Held<T>>, item: T) -> Result<(), TrySendError<T>> {
        let bytes = match &self.budget {
            None => None,
            Some(budget) => {
                let charge = u32::try_from(item.bytes()).map_or(budget.max, |n| n.min(budget.max));
                match budget.bytes.clone().try_acquire_many_owned(charge) {
                    Ok(bytes) => Some(bytes),
                    // The room reserved goes back, to the next send waiting for it.
                    Err(_) => return Err(TrySendError::Full(item)),
                }
            }
        };
        room.send(Held {
            item,
            _bytes: bytes,
        });
        Ok(())
    }

    /// The most frames the queue holds.
    pub(crate) fn capacity(&self) -> usize {
        self.tx.max_capacity()
    }
}

impl<T> FrameQueue<T> {
    /// The next queued frame (its bytes go back to the budget), or `None` once the queue is closed, or its senders
    /// gone, and it is empty.
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.rx.poll_recv(cx).map(|held| held.map(|held| held.item))
    }

    /// Up to `limit` (at least 1) queued frames at once, for one unit of tokio's cooperative budget (a busy
    /// sender would spend it a frame at a time), or `None` once the queue is closed, or its senders gone, and it
    /// is empty.
    pub(crate) fn poll_take(
        &mut self,
        cx: &mut Context<'_>,
        limit: usize,
    ) -> Poll<Option<impl Iterator<Item = T> + '_>> {
        self.taken.clear();
        match self.rx.poll_recv_many(cx, &mut self.taken, limit.max(1)) {
            Poll::Ready(0) => Poll::Ready(None),
            Poll::Ready(_) => Poll::Ready(Some(self.taken.drain(..).map(|held| held.item))),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Whether nothing is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }

    /// Refuses new frames (sends waiting for room are refused too); those already queued are still taken.
    pub(crate) fn close(&mut self) {
        self.rx.close();
    }

    /// Closes the queue and drops what it holds, the frames of sends that had room a moment before included.
    pub(crate) async fn drain(mut self) {
        self.close();
        while self.rx.recv().await.is_some() {}
    }

    /// How many frames are queued.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.rx.len()
    }

    /// The next queued frame, without waiting.
    #[cfg(test)]
    pub(crate) fn try_next(&mut self) -> Option<T> {
        self.rx.try_recv().ok().map(|held| held.item)
    }
}

#[cfg(test)]
mod tests;
