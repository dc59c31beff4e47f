//! Where the engine leaves the outcome of a call for its caller (SPEC/1.0 gabp.md §6): a cell the caller waits
//! on. A connection keeps the cells of finished calls ([`Replies`]) and reuses them, so that a call costs no
//! channel of its own.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use parking_lot::Mutex;

use super::calls::Delivery;

/// What a cell holds.
enum State {
    /// No outcome yet; the caller's waker once it has waited.
    Waiting(Option<Waker>),
    Delivered(Delivery),
    /// The engine let the call go without an outcome: the connection is gone.
    Dropped,
    /// The caller gave up.
    Abandoned,
}

type Cell = Arc<Mutex<State>>;

fn fresh() -> Cell {
    Arc::new(Mutex::new(State::Waiting(None)))
}

/// The engine let the call go without an outcome.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Dropped;

/// Why [`Reply::try_recv`] has no outcome.
#[cfg(test)]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TryRecv {
    Empty,
    Closed,
}

/// The engine's end of a cell: delivers once. Dropped without delivering, its caller sees [`Dropped`].
pub(crate) struct Replier(Option<Cell>);

/// The caller's end of a cell: a future of the outcome.
pub(crate) struct Reply {
    cell: Option<Cell>,
    /// The outcome was taken (the cell may be reused).
    done: bool,
}

/// A cell of its own, for one call.
#[cfg(test)]
pub(crate) fn channel() -> (Replier, Reply) {
    pair(fresh())
}

fn pair(cell: Cell) -> (Replier, Reply) {
    (
        Replier(Some(cell.clone())),
        Reply {
            cell: Some(cell),
            done: false,
        },
    )
}

impl std::fmt::Debug for Replier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replier").finish_non_exhaustive()
    }
}

impl Replier {
    /// Hands `delivery` to the caller; discarded when the caller has given up.
    pub(crate) fn send(mut self, delivery: Delivery) {
        self.finish(State::Delivered(delivery));
    }

    /// Whether the caller has given up.
    pub(crate) fn is_closed(&self) -> bool {
        self.0
            .as_ref()
            .is_none_or(|cell| matches!(*cell.lock(), State::Abandoned))
    }

    fn finish(&mut self, outcome: State) {
        let Some(cell) = self.0.take() else {
            return;
        };
        let waker = {
            let mut state = cell.lock();
            match std::mem::replace(&mut *state, outcome) {
                State::Waiting(waker) => waker,
                earlier => {
                    *state = earlier;
                    None
                }
            }
        };
        // Let go of the cell before waking the caller, so that it finds itself the cell's only holder.
        drop(cell);
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl Drop for Replier {
    fn drop(&mut self) {
        self.finish(State::Dropped);
    }
}

impl Reply {
    /// The outcome if there is one, without waiting.
    #[cfg(test)]
    pub(crate) fn try_recv(&mut self) -> Result<Delivery, TryRecv> {
        match self.poll_with(None) {
            Poll::Ready(Ok(delivery)) => Ok(delivery),
            Poll::Ready(Err(Dropped)) => Err(TryRecv::Closed),
            Poll::Pending => Err(TryRecv::Empty),
        }
    }

    fn poll_with(&mut self, waker: Option<&Waker>) -> Poll<Result<Delivery, Dropped>> {
        let Some(cell) = self.cell.as_ref().filter(|_| !self.done) else {
            return Poll::Ready(Err(Dropped));
        };
        let mut state = cell.lock();
        if let State::Waiting(kept) = &mut *state {
            if let Some(waker) = waker {
                if !kept.as_ref().is_some_and(|k| k.will_wake(waker)) {
                    *kept = Some(waker.clone());
                }
            }
            return Poll::Pending;
        }
        // Taken, the cell is left empty for a later call.
        self.done = true;
        match std::mem::replace(&mut *state, State::Waiting(None)) {
            State::Delivered(delivery) => Poll::Ready(Ok(delivery)),
            _ => Poll::Ready(Err(Dropped)),
        }
    }
}

impl Future for Reply {
    type Output = Result<Delivery, Dropped>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.poll_with(Some(cx.waker()))
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if let Some(cell) = self.cell.as_ref().filter(|_| !self.done) {
            let mut state = cell.lock();
            if let State::Waiting(_) = *state {
                *state = State::Abandoned;
            }
        }
    }
}

/// The cells of a connection's finished calls, kept for its next calls: at most as many as calls can be in
/// flight at once.
pub(crate) struct Replies {
    free: Mutex<Vec<Cell>>,
    keep: usize,
}

impl Replies {
    pub(crate) fn new(keep: usize) -> Self {
        Replies {
            free: Mutex::new(Vec::new()),
            keep,
        }
    }

    /// A cell for one call, reused if one is free.
    pub(crate) fn open(&self) -> (Replier, Reply) {
        let cell = self.free.lock().pop();
        pair(cell.unwrap_or_else(fresh))
    }

    /// Keeps the cell of `reply`, whose outcome was taken, for a later call; only once nothing else holds it.
    pub(crate) fn recycle(&self, mut reply: Reply) {
        // A call without its outcome is left to the drop of its `Reply`, which tells the engine it was given up.
        if !reply.done {
            return;
        }
        let Some(cell) = reply.cell.take() else {
            return;
        };
        if Arc::strong_count(&cell) != 1 {
            return;
        }
        let mut free = self.free.lock();
        if free.len() < self.keep {
            free.push(cell);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    use super::*;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counted() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        (count.clone(), Waker::from(count))
    }

    fn timed_out() -> Delivery {
        Delivery::TimedOut { written: true }
    }

    fn poll(reply: &mut Reply, waker: &Waker) -> Poll<Result<Delivery, Dropped>> {
        Pin::new(reply).poll(&mut Context::from_waker(waker))
    }

    #[test]
    fn an_outcome_wakes_the_last_waker_and_its_cell_serves_the_next_call() {
        let replies = Replies::new(4);
        let (replier, mut reply) = replies.open();
        let ((first, a), (second, b)) = (counted(), counted());
        assert!(poll(&mut reply, &a).is_pending());
        assert!(poll(&mut reply, &b).is_pending());
        assert!(!replier.is_closed());
        replier.send(timed_out());
        assert_eq!(first.0.load(Ordering::SeqCst), 0);
        assert_eq!(second.0.load(Ordering::SeqCst), 1);
        assert!(matches!(
            poll(&mut reply, &b),
            Poll::Ready(Ok(Delivery::TimedOut { written: true }))
        ));
        let kept = Arc::as_ptr(reply.cell.as_ref().unwrap());
        replies.recycle(reply);
        assert_eq!(replies.free.lock().len(), 1);
        let (_replier, mut next) = replies.open();
        assert_eq!(Arc::as_ptr(next.cell.as_ref().unwrap()), kept, "reused");
        assert!(replies.free.lock().is_empty());
        assert_eq!(next.try_recv().unwrap_err(), TryRecv::Empty, "and empty");
    }

    /// Woken, the caller finds itself the cell's only holder, so that it can keep the cell for its next call.
    #[test]
    fn the_engine_lets_go_of_the_cell_before_it_wakes_the_caller() {
        struct Holders(std::sync::Weak<Mutex<State>>, AtomicUsize);
        impl Wake for Holders {
            fn wake(self: Arc<Self>) {
                self.1.store(self.0.strong_count(), Ordering::SeqCst);
            }
        }
        let (replier, mut reply) = channel();
        let cell = Arc::downgrade(reply.cell.as_ref().unwrap());
        let holders = Arc::new(Holders(cell, AtomicUsize::new(0)));
        assert!(poll(&mut reply, &Waker::from(holders.clone())).is_pending());
        replier.send(timed_out());
        assert_eq!(holders.1.load(Ordering::SeqCst), 1, "the caller's alone");
    }

    #[test]
    fn an_engine_gone_without_an_outcome_wakes_its_caller_with_dropped() {
        let (replier, mut reply) = channel();
        let (woken, waker) = counted();
        assert!(poll(&mut reply, &waker).is_pending());
        drop(replier);
        assert_eq!(woken.0.load(Ordering::SeqCst), 1);
        assert!(matches!(
            poll(&mut reply, &waker),
            Poll::Ready(Err(Dropped))
        ));
        // Dropped before the caller ever waited: seen at its first look.
        let (replier, mut reply) = channel();
        drop(replier);
        assert_eq!(reply.try_recv().unwrap_err(), TryRecv::Closed);
    }

    #[test]
    fn a_caller_that_gave_up_closes_the_cell_and_it_is_not_reused() {
        let replies = Replies::new(4);
        let (replier, reply) = replies.open();
        let cell = reply.cell.clone().unwrap();
        replies.recycle(reply);
        assert!(
            replier.is_closed(),
            "recycled without its outcome: given up"
        );
        assert!(replies.free.lock().is_empty());
        replier.send(timed_out());
        assert!(
            matches!(*cell.lock(), State::Abandoned),
            "the outcome is dropped"
        );
        assert_eq!(Arc::strong_count(&cell), 1, "the engine let go of it");
        let (replier, reply) = replies.open();
        drop(reply);
        assert!(replier.is_closed());
    }

    #[test]
    fn a_cell_still_held_elsewhere_or_past_the_bound_is_not_kept() {
        let replies = Replies::new(1);
        let answered = |replies: &Replies| {
            let (replier, mut reply) = replies.open();
            replier.send(timed_out());
            assert!(reply.try_recv().is_ok());
            reply
        };
        let (one, two, three) = (answered(&replies), answered(&replies), answered(&replies));
        let held = one.cell.clone();
        replies.recycle(one);
        assert!(replies.free.lock().is_empty(), "held elsewhere");
        drop(held);
        replies.recycle(two);
        replies.recycle(three);
        assert_eq!(replies.free.lock().len(), 1, "at most `keep`");
    }
}
