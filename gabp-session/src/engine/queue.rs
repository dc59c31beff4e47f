//! The queues of frames a connection writes besides its answers: the events of its subscriptions and the
//! progress of the calls it handles (SPEC/1.0 gabp.md §6, extensions.md §progress). Each is bounded by frames
//! and by bytes (SPEC/1.0 security.md §7); a frame that does not fit is refused, never waited for. A connection
//! with nothing queued does not pay for the queue: the engine looks at the channel only when something was.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::sync::mpsc;

/// What is queued, shared by both ends.
#[derive(Default)]
struct Queued {
    frames: AtomicUsize,
    bytes: AtomicUsize,
}

/// The sending end (cloneable).
#[derive(Clone)]
pub(crate) struct FrameSender {
    tx: mpsc::Sender<Bytes>,
    queued: Arc<Queued>,
    max_bytes: usize,
}

/// The receiving end, held by the engine.
pub(crate) struct FrameQueue {
    rx: mpsc::Receiver<Bytes>,
    queued: Arc<Queued>,
    /// Whether the channel holds the engine's waker (it does from the first `Pending` until a send wakes it).
    listening: bool,
}

/// A queue of at most `frames` frames and `max_bytes` bytes; one frame is always let into an empty queue,
/// whatever its size.
pub(crate) fn frame_queue(frames: usize, max_bytes: usize) -> (FrameSender, FrameQueue) {
    let (tx, rx) = mpsc::channel(frames.max(1));
    let queued = Arc::new(Queued::default());
    (
        FrameSender {
            tx,
            queued: queued.clone(),
            max_bytes,
        },
        FrameQueue {
            rx,
            queued,
            listening: false,
        },
    )
}

impl FrameSender {
    /// Queues `body`; `false` when the queue is full (in frames or bytes) or the connection is gone.
    pub(crate) fn try_send(&self, body: Bytes) -> bool {
        let len = body.len();
        let before = self.queued.bytes.fetch_add(len, Ordering::AcqRel);
        if before > 0 && before.saturating_add(len) > self.max_bytes {
            self.queued.bytes.fetch_sub(len, Ordering::AcqRel);
            return false;
        }
        // Counted before the send wakes the engine, so the engine that wakes sees it.
        self.queued.frames.fetch_add(1, Ordering::AcqRel);
        if self.tx.try_send(body).is_ok() {
            return true;
        }
        self.queued.frames.fetch_sub(1, Ordering::AcqRel);
        self.queued.bytes.fetch_sub(len, Ordering::AcqRel);
        false
    }

    /// The most frames the queue holds.
    pub(crate) fn capacity(&self) -> usize {
        self.tx.max_capacity()
    }
}

impl FrameQueue {
    /// The next queued frame. Without one queued, the channel is left alone once it holds the waker.
    #[inline]
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if self.listening && self.queued.frames.load(Ordering::Acquire) == 0 {
            return Poll::Pending;
        }
        // The quiet check above relies on the waker being left with the channel.
        let rx = &mut self.rx;
        match super::poll_registered(std::future::poll_fn(|cx| rx.poll_recv(cx)), cx) {
            Poll::Ready(Some(body)) => {
                self.taken(&body);
                // The send that woke us took the waker: the next poll registers it again.
                self.listening = false;
                Poll::Ready(Some(body))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                self.listening = true;
                Poll::Pending
            }
        }
    }

    fn taken(&self, body: &Bytes) {
        self.queued.frames.fetch_sub(1, Ordering::AcqRel);
        self.queued.bytes.fetch_sub(body.len(), Ordering::AcqRel);
    }
}

#[cfg(test)]
impl FrameQueue {
    /// The next queued event, without waiting.
    pub(crate) fn try_next(&mut self) -> Option<Bytes> {
        let body = self.rx.try_recv().ok()?;
        self.taken(&body);
        Some(body)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::task::{Wake, Waker};

    use super::*;

    struct Flag(AtomicBool);

    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_send_after_the_queue_went_quiet_wakes_the_engine_and_is_read() {
        let (tx, mut queue) = frame_queue(4, 1024);
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(flag.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(queue.poll_next(&mut cx).is_pending());
        // Quiet: polled again without touching the channel.
        assert!(queue.poll_next(&mut cx).is_pending());
        assert!(tx.try_send(Bytes::from_static(b"one")));
        assert!(flag.0.load(Ordering::SeqCst), "the send woke the engine");
        assert_eq!(
            queue.poll_next(&mut cx),
            Poll::Ready(Some(Bytes::from_static(b"one")))
        );
        assert!(queue.poll_next(&mut cx).is_pending());
        flag.0.store(false, Ordering::SeqCst);
        assert!(tx.try_send(Bytes::from_static(b"two")));
        assert!(flag.0.load(Ordering::SeqCst), "woken again");
        assert_eq!(
            queue.poll_next(&mut cx),
            Poll::Ready(Some(Bytes::from_static(b"two")))
        );
    }

    #[tokio::test]
    async fn a_send_wakes_the_engine_even_after_a_poll_in_a_turn_that_spent_its_budget() {
        let (tx, mut queue) = frame_queue(4, 1024);
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(flag.clone());
        std::future::poll_fn(|cx| {
            // A busy turn spends the task's cooperative budget before it looks at the queue.
            super::super::spend_budget(cx);
            assert!(queue
                .poll_next(&mut Context::from_waker(&waker))
                .is_pending());
            Poll::Ready(())
        })
        .await;
        // The next turn finds the queue quiet; a send must still wake the engine.
        assert!(queue
            .poll_next(&mut Context::from_waker(&waker))
            .is_pending());
        flag.0.store(false, Ordering::SeqCst);
        assert!(tx.try_send(Bytes::from_static(b"late")));
        assert!(flag.0.load(Ordering::SeqCst), "the send woke the engine");
    }

    #[test]
    fn a_full_queue_refuses_and_counts_nothing() {
        let (tx, mut queue) = frame_queue(1, 1024);
        assert!(tx.try_send(Bytes::from_static(b"a")));
        assert!(!tx.try_send(Bytes::from_static(b"b")));
        assert_eq!(queue.queued.frames.load(Ordering::SeqCst), 1);
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        assert!(queue.poll_next(&mut cx).is_ready());
        assert_eq!(queue.queued.frames.load(Ordering::SeqCst), 0);
        assert_eq!(queue.queued.bytes.load(Ordering::SeqCst), 0);
        drop(tx);
        assert_eq!(queue.poll_next(&mut cx), Poll::Ready(None));
    }

    #[test]
    fn bytes_bound_the_queue_but_one_frame_always_fits() {
        let (tx, mut queue) = frame_queue(8, 10);
        assert!(
            tx.try_send(Bytes::from(vec![b'x'; 64])),
            "an empty queue takes any frame"
        );
        assert!(!tx.try_send(Bytes::from_static(b"y")), "over the bytes");
        assert_eq!(queue.try_next().map(|b| b.len()), Some(64));
        assert!(tx.try_send(Bytes::from_static(b"0123456789")));
        assert!(!tx.try_send(Bytes::from_static(b"a")), "11 bytes > 10");
        assert_eq!(queue.queued.bytes.load(Ordering::SeqCst), 10);
    }
}
