//! A wait for a [`CancellationToken`] that is cheap to poll again and again.
//!
//! The connection loops poll their cancellation on every wake, that is several times per round trip.
//! `CancellationToken::cancelled()` takes two locks on each of those polls (the token's state and its waiter
//! list). [`Cancelled`] registers with the token once, through a waker of its own that raises a flag, and
//! afterwards a poll is an atomic swap plus registering the task's waker, until the flag says the token may
//! have fired.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use futures::task::AtomicWaker;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// Raised by the token's notification; wakes whichever task polled [`Cancelled`] last.
#[derive(Default)]
struct Flag {
    fired: AtomicBool,
    task: AtomicWaker,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.fired.store(true, Ordering::Release);
        self.task.wake();
    }
}

/// Completes once its token is cancelled (and on every poll after that).
pub(crate) struct Cancelled {
    inner: Pin<Box<WaitForCancellationFutureOwned>>,
    flag: Arc<Flag>,
    waker: Waker,
    /// The inner future is registered with `waker` and has not been woken since.
    armed: bool,
    done: bool,
}

impl Cancelled {
    pub(crate) fn new(token: CancellationToken) -> Self {
        let flag = Arc::new(Flag::default());
        Cancelled {
            inner: Box::pin(token.cancelled_owned()),
            waker: Waker::from(flag.clone()),
            flag,
            armed: false,
            done: false,
        }
    }
}

impl Future for Cancelled {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(());
        }
        // Register first: a notification from here on wakes this task, and the flag is read after.
        this.flag.task.register(cx.waker());
        if this.armed && !this.flag.fired.swap(false, Ordering::Acquire) {
            return Poll::Pending;
        }
        match this
            .inner
            .as_mut()
            .poll(&mut Context::from_waker(&this.waker))
        {
            Poll::Ready(()) => {
                this.done = true;
                Poll::Ready(())
            }
            Poll::Pending => {
                this.armed = true;
                Poll::Pending
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn ready_at_once_when_already_cancelled() {
        let token = CancellationToken::new();
        token.cancel();
        Cancelled::new(token).await;
    }

    #[tokio::test]
    async fn stays_pending_until_cancelled_then_wakes_the_task() {
        let token = CancellationToken::new();
        let mut cancelled = Cancelled::new(token.clone());
        for _ in 0..3 {
            assert!(futures::poll!(&mut cancelled).is_pending());
        }
        let waiter = tokio::spawn(async move {
            // Polled by a new task (another waker) before the cancel arrives.
            cancelled.await;
        });
        tokio::task::yield_now().await;
        token.cancel();
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("woken by the cancel")
            .expect("the task ends");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cancel_racing_the_polls_is_never_missed() {
        for _ in 0..200 {
            let token = CancellationToken::new();
            let canceller = {
                let token = token.clone();
                tokio::spawn(async move {
                    tokio::task::yield_now().await;
                    token.cancel();
                })
            };
            let mut cancelled = Cancelled::new(token);
            let mut polls = 0u32;
            let waited = tokio::time::timeout(
                Duration::from_secs(5),
                futures::future::poll_fn(|cx| {
                    polls += 1;
                    // Another waker now and then, as when a select! polls it from changing contexts.
                    if polls % 3 == 0 {
                        cx.waker().wake_by_ref();
                    }
                    Pin::new(&mut cancelled).poll(cx)
                }),
            )
            .await;
            assert!(waited.is_ok(), "a cancel was missed");
            canceller.await.expect("the canceller ends");
        }
    }
}
