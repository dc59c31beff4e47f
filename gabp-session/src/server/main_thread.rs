//! Main-thread dispatch: [`MainThread`] and [`PumpReport`].

use std::any::Any;
use std::collections::VecDeque;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::{Condvar, Mutex};
use std::time::Duration;

use gabp_types::{ErrorCode, ErrorObject, ResultValue};
use serde_json::json;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::clock::{GameClock, Waker};
use super::session::internal_error;
use super::time_limit::Work;

pub(crate) type Job = Box<dyn FnOnce(&mut dyn Any) -> Result<ResultValue, ErrorObject> + Send>;

/// Told when a call is queued for the game thread.
type Notify = Arc<dyn Fn() + Send + Sync>;

struct Item {
    deadline: Instant,
    job: Job,
    reply: oneshot::Sender<Result<ResultValue, ErrorObject>>,
}

/// The queue of tool calls that must run on the game's main thread.
///
/// Tools registered with [`Tool::on_main_thread`](super::Tool::on_main_thread) never run on the async
/// runtime: their calls are queued here, and the game loop runs them with [`MainThread::pump_with`], handing
/// them its own state (`&mut World`, which need not be `Send`), or with [`MainThread::pump`] when they take
/// none. A game loop that sleeps between frames waits with [`MainThread::wait`] instead, which returns as soon
/// as a call arrives, so a call on an idle game costs microseconds, not a frame; a loop that owns another
/// event source registers [`MainThread::on_work`] to be woken. Each call carries a deadline (its timeout); one
/// that has not started by then is dropped and answered as late (SPEC/1.0 gabp.md §7: `-32403` for a tool,
/// `-32603` for another method). The queue is bounded: a call arriving when
/// it is full is answered `-32401` (retryable) at once. Connections never wait for the game thread. A game
/// loop that stops for good says so with [`MainThread::close`], so that calls still waiting are answered at once
/// instead of at their time limit.
///
/// ```
/// use std::time::Duration;
/// use gabp_session::server::{CallError, ModServer, Tool};
///
/// struct World { blocks: u32 } // the game's state; it need not be Send
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = ModServer::builder()
///     .token(gabp_transport::Token::generate()?)
///     .tool(Tool::on_main_thread("world/place", |world: &mut World, count: u32| {
///         world.blocks += count; // runs on the game thread, with the game's world
///         Ok::<_, CallError>(world.blocks)
///     }))
///     .build()?;
/// let main_thread = server.main_thread();
/// let mut world = World { blocks: 0 };
/// // The game loop: wait for work until the next frame is due, then run what arrived.
/// main_thread.wait(Duration::from_millis(1));
/// let report = main_thread.pump_with(&mut world, Duration::from_millis(2));
/// assert_eq!(report.ran, 0); // nothing queued yet
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct MainThread {
    inner: Arc<Inner>,
}

struct Inner {
    queue: Mutex<Queue>,
    arrived: Condvar,
    capacity: AtomicUsize,
    notify: Mutex<Option<Notify>>,
    clock: OnceLock<GameClock>,
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
    /// Calls dropped because their deadline passed before they started (answered as late).
    pub expired: usize,
    /// Calls dropped because nobody waits for them any more (their connection closed).
    pub cancelled: usize,
    /// Calls still queued when the budget ran out.
    pub remaining: usize,
}

#[derive(Default)]
struct Queue {
    items: VecDeque<Item>,
    /// Bumped by [`MainThread::wake`], so that a waiting game loop returns.
    wakes: u64,
    /// Set by [`MainThread::close`]: the game loop runs no more calls.
    closed: bool,
}

/// Why a call queued for the game thread did not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotRun {
    /// The queue was full when it arrived.
    Full,
    /// The game loop stopped ([`MainThread::close`]) before running it.
    Stopped,
    /// Its time limit passed before it was done (mostly: before it started).
    Late,
}

impl NotRun {
    /// The answer to `work` that did not run (SPEC/1.0 gabp.md §4.5): -32401 for a full queue or a stopped
    /// game, the time-limit answer of `work` (§7) for a call not done when its `limit` passed.
    pub(crate) fn answer(self, work: Work<'_>, limit: Duration) -> ErrorObject {
        match self {
            NotRun::Full => ErrorObject::new(
                ErrorCode::TOOL_UNAVAILABLE,
                format!("{work} runs on the game's main thread, whose queue is full"),
            )
            .with_data(json!({ "retryable": true })),
            NotRun::Stopped => ErrorObject::new(
                ErrorCode::TOOL_UNAVAILABLE,
                format!("{work} did not run: the game is shutting down"),
            )
            .with_data(json!({ "reason": "shutting_down", "retryable": false })),
            NotRun::Late => {
                work.timed_out("was not done on the game's main thread within its", limit)
            }
        }
    }
}

/// A call in the queue: its answer, once the game loop has run it.
pub(crate) struct Queued {
    rx: oneshot::Receiver<Result<ResultValue, ErrorObject>>,
    deadline: Instant,
    main_thread: MainThread,
}

impl Queued {
    /// The call's result, or why it did not run.
    pub(crate) async fn answer(self) -> Result<Result<ResultValue, ErrorObject>, NotRun> {
        match tokio::time::timeout_at(self.deadline, self.rx).await {
            Ok(Ok(result)) => Ok(result),
            // Dropped by the pump (its deadline passed before it started) or by `close`.
            Ok(Err(_)) if self.main_thread.is_closed() => Err(NotRun::Stopped),
            Ok(Err(_)) | Err(_) => Err(NotRun::Late),
        }
    }
}

impl MainThread {
    pub(crate) fn new(capacity: usize) -> Self {
        MainThread {
            inner: Arc::new(Inner {
                queue: Mutex::new(Queue::default()),
                arrived: Condvar::new(),
                capacity: AtomicUsize::new(capacity),
                notify: Mutex::new(None),
                clock: OnceLock::new(),
            }),
        }
    }

    pub(crate) fn set_capacity(&self, capacity: usize) {
        self.inner.capacity.store(capacity, Ordering::Relaxed);
    }

    /// Queues `job`, to run before `deadline`; refused at once when the queue is full or closed.
    pub(crate) fn submit(&self, deadline: Instant, job: Job) -> Result<Queued, NotRun> {
        let (reply, rx) = oneshot::channel();
        {
            let mut queue = self.inner.queue.lock();
            if queue.closed {
                return Err(NotRun::Stopped);
            }
            if queue.items.len() >= self.inner.capacity.load(Ordering::Relaxed) {
                return Err(NotRun::Full);
            }
            queue.items.push_back(Item {
                deadline,
                job,
                reply,
            });
        }
        self.inner.arrived.notify_all();
        let notify = self.inner.notify.lock().clone();
        if let Some(notify) = notify {
            notify();
        }
        Ok(Queued {
            rx,
            deadline,
            main_thread: self.clone(),
        })
    }

    /// Tells the server that the game loop runs no more calls (the game is exiting): the calls still queued,
    /// and any that arrive after, are answered -32401 with `data.reason` `shutting_down` at once, not at their
    /// time limit (SPEC/1.0 gabp.md §7). Call it before shutting the server down from the thread that pumped;
    /// a call already running finishes and is answered as usual.
    pub fn close(&self) {
        let dropped = {
            let mut queue = self.inner.queue.lock();
            queue.closed = true;
            queue.wakes += 1;
            std::mem::take(&mut queue.items)
        };
        self.inner.arrived.notify_all();
        // Their senders drop here, outside the lock: each waiting call sees the queue closed.
        drop(dropped);
    }

    /// Whether [`MainThread::close`] was called.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.inner.queue.lock().closed
    }

    /// The game's clock, when the server was built with
    /// [`ModServerBuilder::time_control`](super::ModServerBuilder::time_control): the game loop asks it whether
    /// to tick ([`GameClock::run_tick`]) so that `time/pause`, `time/resume` and `time/step` take effect
    /// (SPEC/1.0 extensions.md §time-control).
    #[must_use]
    pub fn clock(&self) -> Option<GameClock> {
        self.inner.clock.get().cloned()
    }

    pub(crate) fn set_clock(&self, clock: GameClock) {
        let _ = self.inner.clock.set(clock);
    }

    /// What ends a [`MainThread::wait`] in progress, without keeping the queue alive.
    pub(crate) fn waker(&self) -> Waker {
        let inner = Arc::downgrade(&self.inner);
        Box::new(move || {
            if let Some(inner) = inner.upgrade() {
                MainThread { inner }.wake();
            }
        })
    }

    /// How many calls are queued.
    #[must_use]
    pub fn pending(&self) -> usize {
        self.inner.queue.lock().items.len()
    }

    /// Blocks the calling thread until a call is queued, [`MainThread::wake`] is called, or `timeout` passes;
    /// `true` if calls are queued. For a game loop that would otherwise sleep until its next frame.
    pub fn wait(&self, timeout: Duration) -> bool {
        let mut queue = self.inner.queue.lock();
        let wakes = queue.wakes;
        self.inner.arrived.wait_while_for(
            &mut queue,
            |q| q.items.is_empty() && q.wakes == wakes,
            timeout,
        );
        !queue.items.is_empty()
    }

    /// Makes every [`MainThread::wait`] in progress return now (to stop a game loop, say).
    pub fn wake(&self) {
        self.inner.queue.lock().wakes += 1;
        self.inner.arrived.notify_all();
    }

    /// Calls `notify` whenever a call is queued (from the connection's thread): for a game loop that waits on
    /// an event source of its own, to wake it. Replaces any earlier callback; keep it short.
    pub fn on_work(&self, notify: impl Fn() + Send + Sync + 'static) {
        *self.inner.notify.lock() = Some(Arc::new(notify));
    }

    /// [`MainThread::pump_with`] for tools that take no game state.
    pub fn pump(&self, budget: Duration) -> PumpReport {
        self.pump_with(&mut (), budget)
    }

    /// Runs queued calls on the calling thread with the game's `state`, oldest first, until the queue is empty
    /// or `budget` is spent (a call that has started always finishes; with a non-zero budget at least one call
    /// runs). Calls whose deadline has passed are dropped without running. A panicking call is answered
    /// `-32603` and the pump goes on; so is a call whose tool takes another type of state.
    pub fn pump_with<S: 'static>(&self, state: &mut S, budget: Duration) -> PumpReport {
        let start = Instant::now();
        let mut report = PumpReport::default();
        loop {
            if budget.is_zero() || (report.ran > 0 && start.elapsed() >= budget) {
                break;
            }
            let item = self.inner.queue.lock().items.pop_front();
            let Some(item) = item else { break };
            if item.reply.is_closed() {
                report.cancelled += 1;
                continue;
            }
            if Instant::now() >= item.deadline {
                report.expired += 1;
                continue;
            }
            let job = item.job;
            let result = catch_unwind(AssertUnwindSafe(|| job(state))).unwrap_or_else(|_| {
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
        let mut a = mt.submit(far(), Box::new(|_| Ok(json!(1).into()))).unwrap();
        let mut b = mt.submit(far(), Box::new(|_| panic!("boom"))).unwrap();
        let expired = mt
            .submit(
                Instant::now() - Duration::from_millis(1),
                Box::new(|_| Ok(json!(3).into())),
            )
            .unwrap();
        let cancelled = mt.submit(far(), Box::new(|_| Ok(json!(4).into()))).unwrap();
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
        assert_eq!(a.rx.try_recv().unwrap().unwrap(), json!(1));
        assert_eq!(b.rx.try_recv().unwrap().unwrap_err().code.0, -32603);
        drop(expired);
    }

    #[test]
    fn bounded_and_budgeted() {
        let mt = MainThread::new(2);
        let _a = mt.submit(far(), Box::new(|_| Ok(json!(1).into()))).unwrap();
        let _b = mt
            .submit(
                far(),
                Box::new(|_| {
                    std::thread::sleep(Duration::from_millis(5));
                    Ok(json!(2).into())
                }),
            )
            .unwrap();
        assert!(mt.submit(far(), Box::new(|_| Ok(json!(3).into()))).is_err());
        assert_eq!(mt.pump(Duration::ZERO).ran, 0);
        // A tiny budget still runs one call; the rest waits for the next frame.
        let r = mt.pump(Duration::from_nanos(1));
        assert_eq!((r.ran, r.remaining), (1, 1));
        assert_eq!(mt.pump(Duration::from_secs(1)).ran, 1);
    }
}

#[cfg(test)]
mod wake_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wait_returns_when_a_call_arrives() {
        let mt = MainThread::new(4);
        assert!(!mt.wait(Duration::from_millis(1)));
        let submitter = mt.clone();
        let thread = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            submitter
                .submit(
                    Instant::now() + Duration::from_secs(60),
                    Box::new(|_| Ok(json!(1).into())),
                )
                .map(drop)
                .is_ok()
        });
        // Far longer than the submitter takes: returning true means it woke on the call.
        assert!(mt.wait(Duration::from_secs(30)));
        assert!(thread.join().unwrap());
        assert_eq!(mt.pending(), 1);
    }

    #[test]
    fn wake_ends_a_wait() {
        let mt = MainThread::new(4);
        let waker = mt.clone();
        let thread = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            waker.wake();
        });
        let started = std::time::Instant::now();
        assert!(!mt.wait(Duration::from_secs(30)));
        assert!(started.elapsed() < Duration::from_secs(30));
        thread.join().unwrap();
    }

    #[tokio::test]
    async fn close_answers_the_queue_ends_a_wait_and_refuses_what_comes_after() {
        let mt = MainThread::new(4);
        let queued = mt
            .submit(far_off(), Box::new(|_| Ok(json!(1).into())))
            .unwrap();
        mt.close();
        assert_eq!(queued.answer().await.err(), Some(NotRun::Stopped));
        let later = mt.submit(far_off(), Box::new(|_| Ok(json!(2).into())));
        assert_eq!(later.err(), Some(NotRun::Stopped));
        assert_eq!(mt.pump(Duration::from_secs(1)).ran, 0);
        let answer = NotRun::Stopped.answer(Work::Tool("world/place"), Duration::from_secs(1));
        assert_eq!(answer.code, ErrorCode::TOOL_UNAVAILABLE);
        assert_eq!(answer.retryable(), Some(false));

        // A game loop waiting for work returns on the close.
        let idle = MainThread::new(4);
        let waiter = idle.clone();
        let thread = std::thread::spawn(move || {
            let started = std::time::Instant::now();
            waiter.wait(Duration::from_secs(30));
            started.elapsed()
        });
        std::thread::sleep(Duration::from_millis(20));
        idle.close();
        assert!(thread.join().unwrap() < Duration::from_secs(30));
    }

    /// SPEC/1.0 gabp.md §4.5 and §7: a call that did not run is answered by why, and a late one by what it is.
    #[test]
    fn not_run_answers_by_why_and_by_what() {
        let limit = Duration::from_millis(250);
        let late = json!({ "timeoutMs": 250, "retryable": true });
        for (work, late_code, full_message) in [
            (
                Work::Tool("world/place"),
                -32403,
                "tool world/place runs on the game's main thread, whose queue is full",
            ),
            (
                Work::Method("input/key"),
                -32603,
                "input/key runs on the game's main thread, whose queue is full",
            ),
        ] {
            let full = NotRun::Full.answer(work, limit);
            assert_eq!((full.code.0, full.message.as_str()), (-32401, full_message));
            assert_eq!(full.data, Some(json!({ "retryable": true })));
            let stopped = NotRun::Stopped.answer(work, limit);
            assert_eq!(stopped.code.0, -32401);
            assert_eq!(stopped.data.unwrap()["reason"], "shutting_down");
            let answer = NotRun::Late.answer(work, limit);
            assert_eq!(answer.code.0, late_code, "{work}");
            assert_eq!(answer.data, Some(late.clone()), "{work}");
            assert!(
                answer.message.starts_with(&work.to_string()),
                "{}",
                answer.message
            );
        }
    }

    fn far_off() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    #[test]
    fn on_work_is_told_of_each_call() {
        let mt = MainThread::new(4);
        let told = Arc::new(AtomicUsize::new(0));
        let counter = told.clone();
        mt.on_work(move || {
            counter.fetch_add(1, Ordering::Relaxed);
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        let _a = mt
            .submit(deadline, Box::new(|_| Ok(json!(1).into())))
            .unwrap();
        let _b = mt
            .submit(deadline, Box::new(|_| Ok(json!(2).into())))
            .unwrap();
        assert_eq!(told.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn pump_with_hands_the_state_to_the_job() {
        struct World {
            blocks: Vec<u32>,
        }
        let mt = MainThread::new(4);
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut rx = mt
            .submit(
                deadline,
                Box::new(|state| {
                    let world = state
                        .downcast_mut::<World>()
                        .ok_or_else(|| internal_error("no world"))?;
                    world.blocks.push(7);
                    Ok(json!(world.blocks.len()).into())
                }),
            )
            .unwrap();
        let mut world = World { blocks: Vec::new() };
        assert_eq!(mt.pump_with(&mut world, Duration::from_secs(1)).ran, 1);
        assert_eq!(world.blocks, [7]);
        assert_eq!(rx.rx.try_recv().unwrap().unwrap(), json!(1));
    }
}
