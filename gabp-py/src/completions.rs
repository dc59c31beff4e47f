//! Answers for `gabp.aio`, handed to the asyncio loop without the interpreter: a finished request is queued
//! here and one byte on a socket pair wakes the loop (`loop.add_reader`), which takes every queued answer at
//! once and resolves its futures. A runtime thread never waits for the interpreter, so many calls in flight
//! do not queue behind it, as a callback per answer (`call_soon_threadsafe`) would.
//!
//! Hand-made beside pyo3-async-runtimes' `future_into_py`, which takes the interpreter on a runtime thread for
//! each answer: 64 calls in flight made 9,400 calls/s that way against 169,000 for `gabp bench` on the same
//! mod (docs/performance.md).

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use futures::future::{AbortHandle, Abortable};
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use gabp_session::Error;
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::errors::to_py;
use crate::json::to_python;
use crate::runtime::runtime;

/// A request's work, run on the runtime.
type Work = Pin<Box<dyn Future<Output = Result<Value, Error>> + Send>>;

/// What the loop's thread asks of the runtime.
enum Job {
    Start(u64, Work),
    Cancel(u64),
}

/// The answers waiting for the loop, and the byte that wakes it.
struct Answers {
    queue: Mutex<VecDeque<(u64, Result<Value, Error>)>>,
    wake: UnixStream,
}

impl Answers {
    fn push(&self, id: u64, answer: Result<Value, Error>) {
        let first = {
            let mut queue = self.queue.lock();
            queue.push_back((id, answer));
            queue.len() == 1
        };
        if first {
            // A full socket already holds a wake-up the loop has not read.
            let _ = (&self.wake).write(&[1]);
        }
    }
}

/// Runs every request of one loop in one task: the loop's thread hands work over a channel, which wakes the
/// runtime only when this task is idle, instead of spawning (and waking a worker for) a task per call.
async fn run(mut jobs: mpsc::UnboundedReceiver<Job>, answers: Arc<Answers>) {
    let mut running = FuturesUnordered::new();
    let mut aborts: HashMap<u64, AbortHandle> = HashMap::new();
    loop {
        tokio::select! {
            job = jobs.recv() => match job {
                Some(Job::Start(id, work)) => {
                    let (abort, registration) = AbortHandle::new_pair();
                    aborts.insert(id, abort);
                    running.push(Abortable::new(work, registration).map(move |done| (id, done)));
                }
                Some(Job::Cancel(id)) => {
                    // Dropping a tool call asks the mod to cancel it (SPEC/1.0 extensions.md §cancel).
                    if let Some(abort) = aborts.remove(&id) {
                        abort.abort();
                    }
                }
                // The loop's `Completions` is gone: what still runs is dropped, so cancelled.
                None => return,
            },
            Some((id, done)) = running.next(), if !running.is_empty() => {
                aborts.remove(&id);
                if let Ok(answer) = done {
                    answers.push(id, answer);
                }
            }
        }
    }
}

/// The answers of one asyncio loop's requests.
#[pyclass(name = "Completions", module = "gabp._gabp", frozen)]
pub(crate) struct Completions {
    answers: Arc<Answers>,
    woken: UnixStream,
    next: AtomicU64,
    /// Unbounded as the loop's own awaits are: how many calls are on the wire at once is the bridge's
    /// `max_in_flight`; the rest wait there.
    jobs: mpsc::UnboundedSender<Job>,
}

impl Completions {
    /// Runs `work` on the runtime; its answer is queued under the returned id.
    pub(crate) fn submit(
        &self,
        work: impl Future<Output = Result<Value, Error>> + Send + 'static,
    ) -> PyResult<u64> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if self.jobs.send(Job::Start(id, Box::pin(work))).is_err() {
            // The runtime is shutting down: answer at once.
            self.answers.push(id, Err(Error::Disconnected));
        }
        Ok(id)
    }
}

#[pymethods]
impl Completions {
    #[new]
    fn new() -> PyResult<Self> {
        let (wake, woken) = UnixStream::pair()?;
        wake.set_nonblocking(true)?;
        woken.set_nonblocking(true)?;
        let answers = Arc::new(Answers {
            queue: Mutex::new(VecDeque::new()),
            wake,
        });
        let (jobs, received) = mpsc::unbounded_channel();
        runtime()?.spawn(run(received, answers.clone()));
        Ok(Completions {
            answers,
            woken,
            next: AtomicU64::new(1),
            jobs,
        })
    }

    /// The descriptor the loop watches for answers.
    fn fileno(&self) -> i32 {
        self.woken.as_raw_fd()
    }

    /// Every answer queued: `(id, True, result)` or `(id, False, exception)`.
    fn drain<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyTuple>>> {
        let mut buffer = [0u8; 64];
        loop {
            match (&self.woken).read(&mut buffer) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let answers = std::mem::take(&mut *self.answers.queue.lock());
        answers
            .into_iter()
            .map(|(id, answer)| match answer {
                Ok(value) => (id, true, to_python(py, &value)?).into_pyobject(py),
                Err(e) => (id, false, to_py(py, &e).into_value(py)).into_pyobject(py),
            })
            .collect()
    }

    /// Drops request `id` (a tool call is then cancelled in the mod, SPEC/1.0 extensions.md §cancel); its
    /// answer never comes.
    fn cancel(&self, id: u64) {
        let _ = self.jobs.send(Job::Cancel(id));
    }
}
