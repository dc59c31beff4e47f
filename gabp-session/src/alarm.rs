//! [`Alarm`]: the sources of a connection's signals (cancellation tokens, deadlines, close requests), watched
//! through one flag so that polling them all is cheap when none has fired.
//!
//! The connection loops poll their signals on every turn, several times per round trip. Polled each in turn, the
//! sources cost a waker registration apiece, and `CancellationToken::cancelled()` takes two locks (the token's
//! state and its waiter list). Polled under an [`Alarm`], they are registered with the alarm's own waker, and a
//! turn costs one registration of the task's waker and one atomic swap until one of them may have fired.

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

/// The flag a set of sources wakes. Poll the sources with [`Alarm::waker`] whenever [`Alarm::rang`] says so, and
/// [`Alarm::set`] it once they are all pending.
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

    /// Registers the task's waker; whether a source may have fired since the sources were last all pending (or
    /// was added since: [`Alarm::reset`]), so that they have to be polled.
    pub(crate) fn rang(&mut self, cx: &Context<'_>) -> bool {
        // Register first: a notification from here on wakes this task, and the flag is read after.
        self.flag.task.register(cx.waker());
        if self.set && !self.flag.rang.swap(false, Ordering::Acquire) {
            return false;
        }
        self.set = false;
        true
    }

    /// The waker to poll the sources with.
    pub(crate) fn waker(&self) -> Waker {
        self.waker.clone()
    }

    /// The sources were all polled with [`Alarm::waker`] and are pending.
    pub(crate) fn set(&mut self) {
        self.set = true;
    }

    /// A source was added or moved: the sources are polled on the next [`Alarm::rang`].
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

    /// Polls `token`'s cancellation the way the connection loops do: under the alarm, set once pending.
    fn poll_watched(alarm: &mut Alarm, source: &mut Cancellation, cx: &Context<'_>) -> Poll<()> {
        if !alarm.rang(cx) {
            return Poll::Pending;
        }
        let waker = alarm.waker();
        let polled = Pin::new(source).poll(&mut Context::from_waker(&waker));
        if polled.is_pending() {
            alarm.set();
        }
        polled
    }

    #[tokio::test]
    async fn ready_at_once_when_already_cancelled() {
        let token = CancellationToken::new();
        token.cancel();
        let (mut alarm, mut source) = (Alarm::new(), Cancellation::new(token));
        futures::future::poll_fn(|cx| poll_watched(&mut alarm, &mut source, cx)).await;
    }

    #[tokio::test]
    async fn a_set_alarm_polls_nothing_until_a_source_wakes_it_then_wakes_the_task() {
        let token = CancellationToken::new();
        let (mut alarm, mut source) = (Alarm::new(), Cancellation::new(token.clone()));
        let waker = futures::task::noop_waker();
        let cx = Context::from_waker(&waker);
        assert!(poll_watched(&mut alarm, &mut source, &cx).is_pending());
        for _ in 0..3 {
            assert!(!alarm.rang(&cx), "nothing fired");
        }
        alarm.reset();
        assert!(alarm.rang(&cx), "a source was added");
        assert!(poll_watched(&mut alarm, &mut source, &cx).is_pending());
        let waiter = tokio::spawn(async move {
            // Asked by a new task (another waker) before the cancel arrives.
            futures::future::poll_fn(|cx| poll_watched(&mut alarm, &mut source, cx)).await;
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
                    poll_watched(&mut alarm, &mut source, cx)
                }),
            )
            .await;
            assert!(waited.is_ok(), "a cancel was missed");
            canceller.await.expect("the canceller ends");
        }
    }
}
