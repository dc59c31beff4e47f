//! The queue of progress events a connection writes before any answer (SPEC/1.0 extensions.md §progress),
//! which a plain call does not pay for: the engine looks at the channel only when something was queued.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::sync::mpsc;

/// The sending end, held by the connection's progress reporters.
pub(crate) struct ProgressSender {
    tx: mpsc::Sender<Bytes>,
    queued: Arc<AtomicUsize>,
}

/// The receiving end, held by the engine.
pub(crate) struct ProgressQueue {
    rx: mpsc::Receiver<Bytes>,
    queued: Arc<AtomicUsize>,
    /// Whether the channel holds the engine's waker (it does from the first `Pending` until a send wakes it).
    listening: bool,
}

/// A bounded progress queue of `capacity` events.
pub(crate) fn progress_queue(capacity: usize) -> (ProgressSender, ProgressQueue) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    let queued = Arc::new(AtomicUsize::new(0));
    (
        ProgressSender {
            tx,
            queued: queued.clone(),
        },
        ProgressQueue {
            rx,
            queued,
            listening: false,
        },
    )
}

impl ProgressSender {
    /// Queues `body`; `false` when the queue is full or the connection is gone.
    pub(crate) fn try_send(&self, body: Bytes) -> bool {
        // Counted before the send wakes the engine, so the engine that wakes sees it.
        self.queued.fetch_add(1, Ordering::AcqRel);
        if self.tx.try_send(body).is_ok() {
            return true;
        }
        self.queued.fetch_sub(1, Ordering::AcqRel);
        false
    }
}

impl ProgressQueue {
    /// The next queued event. Without one queued, the channel is left alone once it holds the waker.
    #[inline]
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if self.listening && self.queued.load(Ordering::Acquire) == 0 {
            return Poll::Pending;
        }
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(body)) => {
                self.queued.fetch_sub(1, Ordering::AcqRel);
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
}

#[cfg(test)]
impl ProgressQueue {
    /// The next queued event, without waiting.
    pub(crate) fn try_next(&mut self) -> Option<Bytes> {
        let body = self.rx.try_recv().ok()?;
        self.queued.fetch_sub(1, Ordering::AcqRel);
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
        let (tx, mut queue) = progress_queue(4);
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

    #[test]
    fn a_full_queue_refuses_and_counts_nothing() {
        let (tx, mut queue) = progress_queue(1);
        assert!(tx.try_send(Bytes::from_static(b"a")));
        assert!(!tx.try_send(Bytes::from_static(b"b")));
        assert_eq!(queue.queued.load(Ordering::SeqCst), 1);
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        assert!(queue.poll_next(&mut cx).is_ready());
        assert_eq!(queue.queued.load(Ordering::SeqCst), 0);
        drop(tx);
        assert_eq!(queue.poll_next(&mut cx), Poll::Ready(None));
    }
}
