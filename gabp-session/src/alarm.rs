//! [`Alarm`]: the sources of a connection's signals (cancellation tokens, deadlines, close requests), polled
//! with one waker of their own, and polled again only once one of them has woken it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use futures::task::AtomicWaker;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// Raised by any source's notification; wakes whichever task asked the alarm last.
#[derive(Default)]
struct Flag {
    rang: AtomicBool,
    task: AtomicWaker,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.rang.store(true, Ordering::Release);
        self.task.wake();
    }
}

/// The flag a set of sources wakes: [`Alarm::poll`] polls them when it may have rung.
pub(crate) struct Alarm {
    flag: Arc<Flag>,
    waker: Waker,
    /// Every source was last polled with `waker` and was pending: only a wake can change that.
    set: bool,
}

impl Alarm {
    pub(crate) fn new() -> Self {
        let flag = Arc::new(Flag::default());
        Alarm {
            waker: Waker::from(flag.clone()),
            flag,
            set: false,
        }
    }

    /// Registers the task's waker and, if a source may have fired since they were last all pending (or one was
    /// added since: [`Alarm::reset`]), polls them with `sources`, given the alarm's own waker; pending otherwise.
    pub(crate) fn poll<T>(
        &mut self,
        cx: &Context<'_>,
        sources: impl FnOnce(&mut Context<'_>) -> Poll<T>,
    ) -> Poll<T> {
        // Register first: a notification from here on wakes this task, and the flag is read after.
        self.flag.task.register(cx.waker());
        if self.set && !self.flag.rang.swap(false, Ordering::Acquire) {
            return Poll::Pending;
        }
        let polled = sources(&mut Context::from_waker(&self.waker));
        // Every source pending was registered with the alarm's waker: only a wake can change that now.
        self.set = polled.is_pending();
        polled
    }

    /// A source was added or moved: the sources are polled on the next [`Alarm::poll`].
    pub(crate) fn reset(&mut self) {
        self.set = false;
    }
}

/// A token's cancellation, as one source of an [`Alarm`]: ready once the token is cancelled, and on every poll
/// after that.
pub(crate) struct Cancellation {
    inner: Pin<Box<WaitForCancellationFutureOwned>>,
    done: bool,
}

impl Cancellation {
    pub(crate) fn new(token: CancellationToken) -> Self {
        Cancellation {
            inner: Box::pin(token.cancelled_owned()),
            done: false,
        }
    }
}

impl Future for Cancellation {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if !this.done && this.inner.as_mut().poll(cx).is_ready() {
            this.done = true;
        }
        if this.done {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Polls `token`'s cancellation the way the connection loops do: under the alarm; counts the polls.
    fn poll_watched(
        alarm: &mut Alarm,
        source: &mut Cancellation,
        cx: &Context<'_>,
        polls: &mut u32,
    ) -> Poll<()> {
        alarm.poll(cx, |cx| {
            *polls += 1;
            Pin::new(source).poll(cx)
        })
    }

    #[tokio::test]
    async fn ready_at_once_when_already_cancelled() {
        let token = CancellationToken::new();
        token.cancel();
        let (mut alarm, mut source) = (Alarm::new(), Cancellation::new(token));
        futures::future::poll_fn(|cx| poll_watched(&mut alarm, &mut source, cx, &mut 0)).await;
    }

    #[tokio::test]
    async fn a_set_alarm_polls_nothing_until_a_source_wakes_it_then_wakes_the_task() {
        let token = CancellationToken::new();
        let (mut alarm, mut source) = (Alarm::new(), Cancellation::new(token.clone()));
        let waker = futures::task::noop_waker();
        let cx = Context::from_waker(&waker);
        let mut polls = 0;
        for _ in 0..3 {
            assert!(poll_watched(&mut alarm, &mut source, &cx, &mut polls).is_pending());
        }
        assert_eq!(polls, 1, "polled once, then only when woken");
        alarm.reset();
        assert!(poll_watched(&mut alarm, &mut source, &cx, &mut polls).is_pending());
        assert_eq!(polls, 2, "a source was added");
        let waiter = tokio::spawn(async move {
            // Asked by a new task (another waker) before the cancel arrives.
            futures::future::poll_fn(|cx| poll_watched(&mut alarm, &mut source, cx, &mut 0)).await;
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
            let (mut alarm, mut source) = (Alarm::new(), Cancellation::new(token));
            let mut polls = 0u32;
            let waited = tokio::time::timeout(
                Duration::from_secs(5),
                futures::future::poll_fn(|cx| {
                    polls += 1;
                    // Another waker now and then, as when a select! polls it from changing contexts.
                    if polls % 3 == 0 {
                        cx.waker().wake_by_ref();
                    }
                    poll_watched(&mut alarm, &mut source, cx, &mut 0)
                }),
            )
            .await;
            assert!(waited.is_ok(), "a cancel was missed");
            canceller.await.expect("the canceller ends");
        }
    }
}
