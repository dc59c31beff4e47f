//! Main-thread dispatch (DESIGN.md section 5): [`MainThread`] and [`PumpReport`].

use std::collections::VecDeque;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use gabp_types::ErrorObject;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::session::internal_error;

type Job = Box<dyn FnOnce() -> Result<Value, ErrorObject> + Send>;

struct Item {
    deadline: Instant,
    job: Job,
    reply: oneshot::Sender<Result<Value, ErrorObject>>,
}

/// The queue of tool calls that must run on the game's main thread.
///
/// Tools registered with [`Tool::on_main_thread`](super::Tool::on_main_thread) never run on the async
/// runtime: their calls are queued here, and the game loop runs them by calling [`MainThread::pump`] once a
/// frame with a time budget. Each call carries a deadline (its timeout); one that has not started by then is
/// dropped and answered `-32403`. The queue is bounded: a call arriving when it is full is answered `-32401`
/// (retryable) at once. Connections never wait for the game thread.
///
/// ```
/// use std::time::Duration;
/// use gabp_session::server::{ModServer, Tool, ToolError};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = ModServer::builder()
///     .token(gabp_transport::Token::generate()?)
///     .tool(Tool::on_main_thread("world/spawn", |_: serde_json::Value| {
///         Ok::<_, ToolError>("spawned") // runs on the game thread
///     }))
///     .build()?;
/// let main_thread = server.main_thread();
/// // In the game loop, once per frame:
/// let report = main_thread.pump(Duration::from_millis(2));
/// assert_eq!(report.ran, 0); // nothing queued yet
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct MainThread {
    inner: Arc<Inner>,
}

struct Inner {
    queue: Mutex<VecDeque<Item>>,
    capacity: AtomicUsize,
}

impl fmt::Debug for MainThread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MainThread")
            .field("pending", &self.pending())
            .field("capacity", &self.inner.capacity.load(Ordering::Relaxed))
            .finish()
    }
}

/// What one [`MainThread::pump`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PumpReport {
    /// Calls run to completion (successfully, with an error, or with a caught panic).
    pub ran: usize,
    /// Calls dropped because their deadline passed before they started (answered `-32403`).
    pub expired: usize,
    /// Calls dropped because nobody waits for them any more (their connection closed).
    pub cancelled: usize,
    /// Calls still queued when the budget ran out.
    pub remaining: usize,
}

/// The queue is full.
#[derive(Debug)]
pub(crate) struct QueueFull;

impl MainThread {
    pub(crate) fn new(capacity: usize) -> Self {
        MainThread {
            inner: Arc::new(Inner {
                queue: Mutex::new(VecDeque::new()),
                capacity: AtomicUsize::new(capacity),
            }),
        }
    }

    pub(crate) fn set_capacity(&self, capacity: usize) {
        self.inner.capacity.store(capacity, Ordering::Relaxed);
    }

    /// Queues `job`, to run before `deadline`; the receiver gets its result, or is closed if it expires.
    pub(crate) fn submit(
        &self,
        deadline: Instant,
        job: Job,
    ) -> Result<oneshot::Receiver<Result<Value, ErrorObject>>, QueueFull> {
        let (reply, rx) = oneshot::channel();
        let mut queue = self
            .inner
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if queue.len() >= self.inner.capacity.load(Ordering::Relaxed) {
            return Err(QueueFull);
        }
        queue.push_back(Item {
            deadline,
            job,
            reply,
        });
        Ok(rx)
    }

    /// How many calls are queued.
    #[must_use]
    pub fn pending(&self) -> usize {
        self.inner
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Runs queued calls on the calling thread, oldest first, until the queue is empty or `budget` is spent
    /// (a call that has started always finishes; with a non-zero budget at least one call runs). Calls whose
    /// deadline has passed are dropped without running. A panicking call is answered `-32603` and the pump
    /// goes on.
    pub fn pump(&self, budget: Duration) -> PumpReport {
        let start = Instant::now();
        let mut report = PumpReport::default();
        loop {
            if budget.is_zero() || (report.ran > 0 && start.elapsed() >= budget) {
                break;
            }
            let item = self
                .inner
                .queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop_front();
            let Some(item) = item else { break };
            if item.reply.is_closed() {
                report.cancelled += 1;
                continue;
            }
            if Instant::now() >= item.deadline {
                report.expired += 1;
                continue;
            }
            let result = catch_unwind(AssertUnwindSafe(item.job)).unwrap_or_else(|_| {
                tracing::error!("a main-thread tool panicked");
                Err(internal_error("the tool panicked"))
            });
            // The caller may have given up meanwhile; nothing to do then.
            let _ = item.reply.send(result);
            report.ran += 1;
        }
        report.remaining = self.pending();
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    #[test]
    fn runs_in_order_and_reports() {
        let mt = MainThread::new(10);
        let mut a = mt.submit(far(), Box::new(|| Ok(json!(1)))).unwrap();
        let mut b = mt.submit(far(), Box::new(|| panic!("boom"))).unwrap();
        let expired = mt
            .submit(
                Instant::now() - Duration::from_millis(1),
                Box::new(|| Ok(json!(3))),
            )
            .unwrap();
        let cancelled = mt.submit(far(), Box::new(|| Ok(json!(4)))).unwrap();
        drop(cancelled);
        assert_eq!(mt.pending(), 4);
        let report = mt.pump(Duration::from_secs(1));
        assert_eq!(
            report,
            PumpReport {
                ran: 2,
                expired: 1,
                cancelled: 1,
                remaining: 0
            }
        );
        assert_eq!(a.try_recv().unwrap().unwrap(), json!(1));
        assert_eq!(b.try_recv().unwrap().unwrap_err().code.0, -32603);
        drop(expired);
    }

    #[test]
    fn bounded_and_budgeted() {
        let mt = MainThread::new(2);
        let _a = mt.submit(far(), Box::new(|| Ok(json!(1)))).unwrap();
        let _b = mt
            .submit(
                far(),
                Box::new(|| {
                    std::thread::sleep(Duration::from_millis(5));
                    Ok(json!(2))
                }),
            )
            .unwrap();
        assert!(mt.submit(far(), Box::new(|| Ok(json!(3)))).is_err());
        assert_eq!(mt.pump(Duration::ZERO).ran, 0);
        // A tiny budget still runs one call; the rest waits for the next frame.
        let r = mt.pump(Duration::from_nanos(1));
        assert_eq!((r.ran, r.remaining), (1, 1));
        assert_eq!(mt.pump(Duration::from_secs(1)).ran, 1);
    }
}
