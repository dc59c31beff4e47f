//! Answers for `gabp.aio`, handed to the asyncio loop without the interpreter: a finished request is queued
//! here and one byte on a socket pair wakes the loop (`loop.add_reader`), which takes every queued answer at
//! once and resolves its futures. A runtime thread never waits for the interpreter, so many calls in flight
//! do not queue behind it, as a callback per answer (`call_soon_threadsafe`) would.
//!
//! Hand-made beside pyo3-async-runtimes' `future_into_py`, which takes the interpreter on a runtime thread for
//! each answer: 64 calls in flight made 9,400 calls/s that way against 169,000 for `gabp bench` on the same
//! mod (docs/performance.md).

use std::collections::{HashMap, VecDeque};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use gabp_session::Error;
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use serde_json::Value;
use tokio::task::AbortHandle;

use crate::errors::to_py;
use crate::json::to_python;
use crate::runtime::runtime;

struct Shared {
    answers: Mutex<VecDeque<(u64, Result<Value, Error>)>>,
    wake: UnixStream,
    running: Mutex<HashMap<u64, AbortHandle>>,
}

/// The answers of one asyncio loop's requests.
#[pyclass(name = "Completions", module = "gabp._gabp", frozen)]
pub(crate) struct Completions {
    shared: Arc<Shared>,
    woken: UnixStream,
    next: AtomicU64,
}

impl Completions {
    /// Runs `work` on the runtime; its answer is queued under the returned id.
    pub(crate) fn submit(
        &self,
        work: impl std::future::Future<Output = Result<Value, Error>> + Send + 'static,
    ) -> PyResult<u64> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let shared = self.shared.clone();
        let mut running = self.shared.running.lock();
        let task = runtime()?.spawn(async move {
            let answer = work.await;
            shared.running.lock().remove(&id);
            let first = {
                let mut answers = shared.answers.lock();
                answers.push_back((id, answer));
                answers.len() == 1
            };
            if first {
                // A full socket already holds a wake-up the loop has not read.
                let _ = (&shared.wake).write(&[1]);
            }
        });
        running.insert(id, task.abort_handle());
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
        Ok(Completions {
            shared: Arc::new(Shared {
                answers: Mutex::new(VecDeque::new()),
                wake,
                running: Mutex::new(HashMap::new()),
            }),
            woken,
            next: AtomicU64::new(1),
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
        let answers = std::mem::take(&mut *self.shared.answers.lock());
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
        if let Some(task) = self.shared.running.lock().remove(&id) {
            task.abort();
        }
    }
}
