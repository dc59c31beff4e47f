//! The queues of frames a connection writes besides its answers: the calls a bridge sends, the events of a mod's
//! subscriptions and the progress of the calls it handles (SPEC/1.0 gabp.md §6, extensions.md §progress). Each is
//! bounded by frames, and by bytes where its items are not bounded already (SPEC/1.0 security.md §7); a frame over
//! the bytes is refused, never waited for.
//! A connection with nothing queued pays a few loads per turn: the engine arms the queue once, and again only
//! after a send woke it or its waker changed.

use std::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use tokio::sync::mpsc::{self, error::TrySendError};

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
#[derive(Default)]
struct Shared {
    frames: AtomicUsize,
    bytes: AtomicUsize,
    /// The engine's waker, kept when woken. The channel's own wake is not used: a send can wake after the engine
    /// has already taken its frame, and that late wake would take a registration the engine could not tell was
    /// gone.
    waker: parking_lot::Mutex<Option<Waker>>,
    /// Whether the engine waits for a send's wake: set by the engine, cleared by the send that wakes it.
    armed: AtomicBool,
}

/// The sending end (cloneable).
pub(crate) struct FrameSender<T = Bytes> {
    tx: mpsc::Sender<T>,
    queued: Arc<Shared>,
    max_bytes: usize,
}

impl<T> Clone for FrameSender<T> {
    fn clone(&self) -> Self {
        FrameSender {
            tx: self.tx.clone(),
            queued: self.queued.clone(),
            max_bytes: self.max_bytes,
        }
    }
}

/// The receiving end, held by the engine.
pub(crate) struct FrameQueue<T = Bytes> {
    rx: mpsc::Receiver<T>,
    queued: Arc<Shared>,
    /// The waker last registered, to tell whether the engine's waker changed since.
    registered: Option<Waker>,
    /// Closed by the engine: a send that had room before still puts its frame in.
    closed: bool,
}

/// A queue of at most `frames` frames and `max_bytes` bytes; one frame is always let into an empty queue,
/// whatever its size.
pub(crate) fn frame_queue<T: Queued>(
    frames: usize,
    max_bytes: usize,
) -> (FrameSender<T>, FrameQueue<T>) {
    let (tx, rx) = mpsc::channel(frames.max(1));
    let queued = Arc::new(Shared::default());
    (
        FrameSender {
            tx,
            queued: queued.clone(),
            max_bytes,
        },
        FrameQueue {
            rx,
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
        match self.tx.try_reserve() {
            Ok(permit) => self.admit(permit, item),
            Err(TrySendError::Full(())) => Err(TrySendError::Full(item)),
            Err(TrySendError::Closed(())) => Err(TrySendError::Closed(item)),
        }
    }

    /// Queues `item` once the queue has room for a frame; refused when it is over the bytes
    /// ([`TrySendError::Full`]), or closed or gone ([`TrySendError::Closed`]).
    pub(crate) async fn send(&self, item: T) -> Result<(), TrySendError<T>> {
        match self.tx.reserve().await {
            Ok(permit) => self.admit(permit, item),
            Err(_) => Err(TrySendError::Closed(item)),
        }
    }

    fn admit(&self, permit: mpsc::Permit<'_, T>, item: T) -> Result<(), TrySendError<T>> {
        self.enqueue(permit, item)?;
        self.wake();
        Ok(())
    }

    /// Counts `item`, then puts it in the channel: counted first, so that an engine that sees no count has
    /// nothing to take.
    fn enqueue(&self, permit: mpsc::Permit<'_, T>, item: T) -> Result<(), TrySendError<T>> {
        let len = item.bytes();
        let before = self.queued.bytes.fetch_add(len, Ordering::AcqRel);
        if before > 0 && before.saturating_add(len) > self.max_bytes {
            self.queued.bytes.fetch_sub(len, Ordering::AcqRel);
            return Err(TrySendError::Full(item));
        }
        self.queued.frames.fetch_add(1, Ordering::SeqCst);
        permit.send(item);
        Ok(())
    }

    /// Wakes the engine if it waits, once the frame is in the channel.
    fn wake(&self) {
        // Pairs with the fence in `FrameQueue::wait`: either the engine sees this frame, or this send or an
        // earlier one sees the queue armed and wakes it.
        fence(Ordering::SeqCst);
        if self.queued.armed.swap(false, Ordering::SeqCst) {
            // Woken by reference: a late wake leaves the waker in place for the next one.
            if let Some(waker) = &*self.queued.waker.lock() {
                waker.wake_by_ref();
            }
        }
    }

    /// The most frames the queue holds.
    pub(crate) fn capacity(&self) -> usize {
        self.tx.max_capacity()
    }
}

impl<T: Queued> FrameQueue<T> {
    /// The next queued frame; without one, the queue is armed to wake the engine (again only when a send has
    /// woken it since, or the engine's waker changed), or `None` once the queue is closed and empty.
    #[inline]
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        if self.queued.frames.load(Ordering::SeqCst) == 0 {
            if self.rx.is_closed() {
                return self.poll_closed(cx);
            }
            if self.still_armed(cx) || !self.wait(cx) {
                return Poll::Pending;
            }
        }
        if let Poll::Ready(next) = self.take(cx) {
            return Poll::Ready(next);
        }
        // Counted but not in the channel yet: the send still putting it in wakes the engine once it has.
        self.wait(cx);
        self.take(cx)
    }

    /// The next frame of a closed queue with none counted.
    #[cold]
    fn poll_closed(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        if !self.closed {
            // Every sender is gone, so every frame is in the channel already: none there is the end, even before
            // the channel's own end marker is written.
            return match self.take(cx) {
                Poll::Pending => Poll::Ready(None),
                next => next,
            };
        }
        // Closed here: the channel ends once no send holds room in it, and wakes the engine itself when a send
        // puts its frame in or gives its room back (refused, failed or dropped while waiting for room).
        let rx = &mut self.rx;
        let next = super::poll_registered(std::future::poll_fn(|cx| rx.poll_recv(cx)), cx);
        if let Poll::Ready(Some(item)) = &next {
            self.taken(item);
        }
        next
    }

    /// Whether nothing is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.queued.frames.load(Ordering::SeqCst) == 0
    }

    /// Refuses new frames; those already queued are still taken.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        self.rx.close();
    }

    /// Whether the queue is still armed for `cx`'s waker, by an earlier turn's fenced arming: the next send wakes
    /// it. Asked of every queue on every turn, so kept inline.
    #[inline]
    fn still_armed(&self, cx: &Context<'_>) -> bool {
        self.registered
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
            && self.queued.armed.load(Ordering::SeqCst)
    }

    /// Arms the queue to wake `cx`'s waker; `true` if it then found a frame counted.
    fn wait(&mut self, cx: &mut Context<'_>) -> bool {
        let same = self
            .registered
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()));
        if !same {
            *self.queued.waker.lock() = Some(cx.waker().clone());
            self.registered = Some(cx.waker().clone());
        }
        self.queued.armed.store(true, Ordering::SeqCst);
        // Pairs with the fence in `FrameSender::wake`.
        fence(Ordering::SeqCst);
        self.queued.frames.load(Ordering::SeqCst) > 0
    }

    /// Takes a frame already in the channel, without waiting.
    fn take(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let rx = &mut self.rx;
        // Polled with a no-op waker (the queue wakes the engine itself), outside the cooperative budget: a poll
        // refused for budget would leave a frame in the channel that no send wakes the engine for.
        let next = super::poll_registered(
            std::future::poll_fn(|_| rx.poll_recv(&mut Context::from_waker(Waker::noop()))),
            cx,
        );
        if let Poll::Ready(Some(item)) = &next {
            self.taken(item);
        }
        next
    }

    fn taken(&self, item: &T) {
        self.queued.frames.fetch_sub(1, Ordering::AcqRel);
        self.queued.bytes.fetch_sub(item.bytes(), Ordering::AcqRel);
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
        let body = self.rx.try_recv().ok()?;
        self.taken(&body);
        Some(body)
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::sync::atomic::AtomicBool;
    use std::task::{Wake, Waker};

    use super::*;

    struct Flag(AtomicBool);

    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    /// A waker that raises a flag.
    fn flagged() -> (Arc<Flag>, Waker) {
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        (flag.clone(), Waker::from(flag))
    }

    /// Puts `body` in the queue the way a send does, but without waking the engine.
    fn put(tx: &FrameSender, body: Bytes) -> bool {
        tx.tx
            .try_reserve()
            .is_ok_and(|permit| tx.enqueue(permit, body).is_ok())
    }

    /// Sends `body`: the send must wake the engine, and the engine's next poll must read it.
    fn send_wakes_and_is_read(
        tx: &FrameSender,
        queue: &mut FrameQueue,
        flag: &Flag,
        cx: &mut Context<'_>,
        body: &'static [u8],
    ) {
        flag.0.store(false, Ordering::SeqCst);
        assert!(tx.try_send(Bytes::from_static(body)).is_ok());
        assert!(flag.0.load(Ordering::SeqCst), "the send woke the engine");
        assert_eq!(
            queue.poll_next(cx),
            Poll::Ready(Some(Bytes::from_static(body)))
        );
    }

    #[test]
    fn a_send_after_the_queue_went_quiet_wakes_the_engine_and_is_read() {
        let (tx, mut queue) = frame_queue(4, 1024);
        let (flag, waker) = flagged();
        let mut cx = Context::from_waker(&waker);
        assert!(queue.poll_next(&mut cx).is_pending());
        // Quiet: polled again without touching the channel.
        assert!(queue.poll_next(&mut cx).is_pending());
        send_wakes_and_is_read(&tx, &mut queue, &flag, &mut cx, b"one");
        assert!(queue.poll_next(&mut cx).is_pending());
        send_wakes_and_is_read(&tx, &mut queue, &flag, &mut cx, b"two");
    }

    #[tokio::test]
    async fn a_send_wakes_the_engine_even_after_a_poll_in_a_turn_that_spent_its_budget() {
        let (tx, mut queue) = frame_queue(4, 1024);
        let (flag, waker) = flagged();
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
        assert!(tx.try_send(Bytes::from_static(b"late")).is_ok());
        assert!(flag.0.load(Ordering::SeqCst), "the send woke the engine");
    }

    #[test]
    fn a_wake_that_comes_after_its_frame_was_taken_does_not_silence_the_next_send() {
        let (tx, mut queue) = frame_queue(4, 1024);
        let (flag, waker) = flagged();
        let mut cx = Context::from_waker(&waker);
        assert!(queue.poll_next(&mut cx).is_pending());
        // A send puts its frame in, and the engine (running for another reason) takes it before that send's wake.
        assert!(put(&tx, Bytes::from_static(b"early")));
        assert_eq!(
            queue.poll_next(&mut cx),
            Poll::Ready(Some(Bytes::from_static(b"early")))
        );
        assert!(queue.poll_next(&mut cx).is_pending());
        // The late wake disarms the queue; the turn it causes finds nothing queued.
        tx.wake();
        assert!(flag.0.swap(false, Ordering::SeqCst));
        assert!(queue.poll_next(&mut cx).is_pending());
        // The next send must still wake the engine.
        send_wakes_and_is_read(&tx, &mut queue, &flag, &mut cx, b"next");
    }

    #[test]
    fn a_frame_counted_but_not_yet_in_the_channel_wakes_the_engine_once_it_is() {
        // Whether the queue was armed before (a quiet queue) or not (its first poll).
        for armed_before in [true, false] {
            let (tx, mut queue) = frame_queue(4, 1024);
            let (flag, waker) = flagged();
            let mut cx = Context::from_waker(&waker);
            if armed_before {
                assert!(queue.poll_next(&mut cx).is_pending());
            }
            // Counted, as a send does first, but not in the channel yet.
            queue.queued.frames.fetch_add(1, Ordering::SeqCst);
            assert!(queue.poll_next(&mut cx).is_pending());
            queue.queued.frames.fetch_sub(1, Ordering::SeqCst);
            send_wakes_and_is_read(&tx, &mut queue, &flag, &mut cx, b"in");
        }
    }

    #[test]
    fn a_new_waker_is_registered_even_while_the_old_one_is() {
        let (tx, mut queue) = frame_queue(4, 1024);
        let (_, old_waker) = flagged();
        let (new, new_waker) = flagged();
        assert!(queue
            .poll_next(&mut Context::from_waker(&old_waker))
            .is_pending());
        assert!(queue
            .poll_next(&mut Context::from_waker(&new_waker))
            .is_pending());
        assert!(tx.try_send(Bytes::from_static(b"x")).is_ok());
        assert!(new.0.load(Ordering::SeqCst), "the current waker is woken");
    }

    #[test]
    fn a_wake_that_comes_after_the_engine_armed_again_leaves_it_armed() {
        let (tx, mut queue) = frame_queue(4, 1024);
        let (flag, waker) = flagged();
        let mut cx = Context::from_waker(&waker);
        assert!(queue.poll_next(&mut cx).is_pending());
        // A send disarms the queue, then stops before it wakes the engine.
        assert!(put(&tx, Bytes::from_static(b"a")));
        fence(Ordering::SeqCst);
        assert!(tx.queued.armed.swap(false, Ordering::SeqCst));
        // The engine, running for another reason, takes its frame and arms the queue again.
        assert_eq!(
            queue.poll_next(&mut cx),
            Poll::Ready(Some(Bytes::from_static(b"a")))
        );
        assert!(queue.poll_next(&mut cx).is_pending());
        // The send wakes the engine now; the turn it causes finds nothing queued.
        if let Some(w) = &*tx.queued.waker.lock() {
            w.wake_by_ref();
        }
        assert!(flag.0.swap(false, Ordering::SeqCst));
        assert!(queue.poll_next(&mut cx).is_pending());
        // The next send must still wake the engine.
        assert!(tx.try_send(Bytes::from_static(b"b")).is_ok());
        assert!(
            flag.0.load(Ordering::SeqCst),
            "the next send woke the engine"
        );
    }

    #[test]
    fn a_frame_still_in_a_closed_queue_is_taken_before_the_end() {
        let (tx, mut queue) = frame_queue(4, 1024);
        assert!(put(&tx, Bytes::from_static(b"last")));
        drop(tx);
        // The engine read the count just before this frame was counted.
        queue.queued.frames.fetch_sub(1, Ordering::SeqCst);
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(
            queue.poll_next(&mut cx),
            Poll::Ready(Some(Bytes::from_static(b"last")))
        );
        queue.queued.frames.fetch_add(1, Ordering::SeqCst);
        assert_eq!(queue.poll_next(&mut cx), Poll::Ready(None));
    }

    #[test]
    fn a_full_queue_refuses_and_counts_nothing() {
        let (tx, mut queue) = frame_queue(1, 1024);
        assert!(tx.try_send(Bytes::from_static(b"a")).is_ok());
        assert!(tx.try_send(Bytes::from_static(b"b")).is_err());
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
    fn a_send_waits_for_room_then_wakes_the_engine() {
        let (tx, mut queue) = frame_queue(1, usize::MAX);
        let (flag, waker) = flagged();
        let mut cx = Context::from_waker(&waker);
        assert!(tx.try_send(Bytes::from_static(b"a")).is_ok());
        assert!(matches!(
            tx.try_send(Bytes::from_static(b"b")),
            Err(TrySendError::Full(_))
        ));
        let mut send = std::pin::pin!(tx.send(Bytes::from_static(b"b")));
        let (sender, sender_waker) = flagged();
        let mut sender_cx = Context::from_waker(&sender_waker);
        assert!(send.as_mut().poll(&mut sender_cx).is_pending(), "full");
        assert_eq!(queue.len(), 1, "a waiting send counts nothing");
        assert_eq!(
            queue.poll_next(&mut cx),
            Poll::Ready(Some(Bytes::from_static(b"a")))
        );
        assert!(queue.poll_next(&mut cx).is_pending());
        flag.0.store(false, Ordering::SeqCst);
        assert!(sender.0.load(Ordering::SeqCst), "room woke the send");
        assert!(matches!(send.poll(&mut sender_cx), Poll::Ready(Ok(()))));
        assert!(flag.0.load(Ordering::SeqCst), "the send woke the engine");
        assert_eq!(
            queue.poll_next(&mut cx),
            Poll::Ready(Some(Bytes::from_static(b"b")))
        );
    }

    #[test]
    fn a_closed_queue_refuses_sends_and_ends_after_what_it_holds() {
        let (tx, mut queue) = frame_queue(4, usize::MAX);
        assert!(tx.try_send(Bytes::from_static(b"held")).is_ok());
        queue.close();
        assert!(matches!(
            tx.try_send(Bytes::from_static(b"late")),
            Err(TrySendError::Closed(_))
        ));
        assert!(!queue.is_empty());
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(
            queue.poll_next(&mut cx),
            Poll::Ready(Some(Bytes::from_static(b"held")))
        );
        assert!(queue.is_empty());
        assert_eq!(queue.poll_next(&mut cx), Poll::Ready(None));
        let send = std::pin::pin!(tx.send(Bytes::from_static(b"later")));
        assert!(matches!(
            send.poll(&mut cx),
            Poll::Ready(Err(TrySendError::Closed(_)))
        ));
    }

    #[test]
    fn a_closed_queue_takes_the_frame_of_a_send_that_had_room() {
        let (tx, mut queue) = frame_queue(4, 1024);
        let (flag, waker) = flagged();
        let mut cx = Context::from_waker(&waker);
        // A send has room, then the engine closes the queue.
        let permit = tx.tx.try_reserve().unwrap();
        queue.close();
        assert!(queue.poll_next(&mut cx).is_pending(), "room is held");
        assert!(tx.admit(permit, Bytes::from_static(b"late")).is_ok());
        assert!(flag.0.load(Ordering::SeqCst), "the send woke the engine");
        assert_eq!(
            queue.poll_next(&mut cx),
            Poll::Ready(Some(Bytes::from_static(b"late")))
        );
        assert_eq!(queue.poll_next(&mut cx), Poll::Ready(None));
    }

    #[test]
    fn a_closed_queue_ends_when_a_refused_send_gives_its_room_back() {
        let (tx, mut queue) = frame_queue(4, 8);
        let (flag, waker) = flagged();
        let mut cx = Context::from_waker(&waker);
        let permit = tx.tx.try_reserve().unwrap();
        queue.close();
        assert!(queue.poll_next(&mut cx).is_pending(), "room is held");
        // Bytes counted by a send still under way make this one too many.
        tx.queued.bytes.store(8, Ordering::SeqCst);
        assert!(tx.admit(permit, Bytes::from_static(b"x")).is_err());
        tx.queued.bytes.store(0, Ordering::SeqCst);
        assert!(flag.0.load(Ordering::SeqCst), "the refusal woke the engine");
        assert_eq!(queue.poll_next(&mut cx), Poll::Ready(None));
    }

    #[test]
    fn a_closed_queue_ends_when_a_send_handed_room_is_dropped() {
        let (tx, mut queue) = frame_queue(1, usize::MAX);
        let (flag, waker) = flagged();
        let mut cx = Context::from_waker(&waker);
        assert!(tx.try_send(Bytes::from_static(b"a")).is_ok());
        let mut send = Box::pin(tx.send(Bytes::from_static(b"b")));
        let mut sender_cx = Context::from_waker(Waker::noop());
        assert!(send.as_mut().poll(&mut sender_cx).is_pending(), "full");
        // Taking the frame hands its room to the waiting send, which has not run yet when the queue closes.
        assert!(queue.poll_next(&mut cx).is_ready());
        queue.close();
        assert!(queue.poll_next(&mut cx).is_pending(), "room is held");
        flag.0.store(false, Ordering::SeqCst);
        drop(send);
        assert!(
            flag.0.load(Ordering::SeqCst),
            "the dropped send woke the engine"
        );
        assert_eq!(queue.poll_next(&mut cx), Poll::Ready(None));
    }

    #[test]
    fn bytes_bound_the_queue_but_one_frame_always_fits() {
        let (tx, mut queue) = frame_queue(8, 10);
        assert!(
            tx.try_send(Bytes::from(vec![b'x'; 64])).is_ok(),
            "an empty queue takes any frame"
        );
        assert!(
            tx.try_send(Bytes::from_static(b"y")).is_err(),
            "over the bytes"
        );
        assert_eq!(queue.try_next().map(|b| b.len()), Some(64));
        assert!(tx.try_send(Bytes::from_static(b"0123456789")).is_ok());
        assert!(
            tx.try_send(Bytes::from_static(b"a")).is_err(),
            "11 bytes > 10"
        );
        assert_eq!(queue.queued.bytes.load(Ordering::SeqCst), 10);
    }
}
