//! The runtimes connections run on (the process's shared one for `gabp.aio` and the mods, one of its own for
//! each blocking bridge), and the wait that blocks a Python thread on them: without the interpreter held, and
//! Ctrl-C still heard.

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use tokio::runtime::Runtime;

use crate::errors::state_error;

/// How often a blocked call looks for a signal (Ctrl-C) to hand to Python.
const SIGNAL_CHECK: Duration = Duration::from_millis(50);

/// How often a bridge's own runtime yields when settled ([`Driver::settle`]): its connection's task writes
/// and reads within the first.
const SETTLE_YIELDS: usize = 4;

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// The process's runtime, started on first use, for `gabp.aio`'s connections and the mods' servers. One
/// worker: a second one on a small machine mostly wakes up to steal work, and `gabp.aio` at 64 calls in
/// flight made 5-35% more calls a second with one (blocking bridges run on runtimes of their own, [`Driver`]).
/// A task that takes the interpreter on it (an aio subscription's next event, `close_async`) holds up every
/// connection on it meanwhile; calls answer through [`crate::completions`], which never does.
pub(crate) fn runtime() -> PyResult<&'static Runtime> {
    if let Some(runtime) = RUNTIME.get() {
        return Ok(runtime);
    }
    let built = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("gabp")
        .enable_all()
        .build()
        .map_err(|e| PyRuntimeError::new_err(format!("starting gabp's runtime failed: {e}")))?;
    let runtime = RUNTIME.get_or_init(|| built);
    // asyncio awaits (gabp.aio) run their futures on the same runtime; a second call is refused, which is
    // what we want.
    let _ = pyo3_async_runtimes::tokio::init_with_runtime(runtime);
    Ok(runtime)
}

/// Runs `work` to its end on the calling thread, detached from the interpreter so other Python threads
/// run meanwhile. Every 50 ms it looks for signals: a Ctrl-C drops `work` (a dropped tool call asks the mod
/// to cancel it, SPEC/1.0 extensions.md §cancel) and raises `KeyboardInterrupt`.
pub(crate) fn wait<F>(py: Python<'_>, work: F) -> PyResult<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    let runtime = runtime()?;
    let mut work = pin!(work);
    loop {
        let done = py.detach(|| {
            let _entered = runtime.enter();
            futures::executor::block_on(tokio::time::timeout(SIGNAL_CHECK, work.as_mut()))
        });
        match done {
            Ok(output) => return Ok(output),
            Err(_) => py.check_signals()?,
        }
    }
}

/// Where a bridge's connection runs, and so how a Python thread waits on it.
#[derive(Clone)]
pub(crate) enum Driver {
    /// The process's runtime, shared with `gabp.aio` and the mods: its worker reads and writes.
    Shared,
    /// A runtime of the bridge's own, run by the Python thread that waits on it: a blocking call is written,
    /// and its answer read, on the calling thread, so neither crosses to another thread (on a small machine
    /// that saves two context switches a call). Nothing runs while no thread waits: what the mod sends
    /// meanwhile stays in the socket until the next call or `next()`.
    Own(Arc<OwnRuntime>),
}

/// A bridge's own single-threaded runtime.
pub(crate) struct OwnRuntime(Option<Runtime>);

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        // The last handle may go in any thread, a runtime worker's included, where a blocking shutdown would
        // panic.
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl Driver {
    /// A driver with a runtime of its own.
    pub(crate) fn own() -> PyResult<Driver> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| {
                PyRuntimeError::new_err(format!("starting a bridge's runtime failed: {e}"))
            })?;
        Ok(Driver::Own(Arc::new(OwnRuntime(Some(runtime)))))
    }

    /// Whether the connection runs on the shared runtime, where `gabp.aio` awaits it.
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self, Driver::Shared)
    }

    /// As [`wait`], on this driver's runtime. On Ctrl-C the runtime is [settled](Driver::settle) after `work`
    /// is dropped, so that what dropping it queued (a call's cancel, SPEC/1.0 extensions.md §cancel) is sent.
    pub(crate) fn wait<F>(&self, py: Python<'_>, work: F) -> PyResult<F::Output>
    where
        F: Future + Send,
        F::Output: Send,
    {
        let Driver::Own(own) = self else {
            return wait(py, work);
        };
        let runtime = own.runtime(py)?;
        let mut work = Box::pin(work);
        loop {
            // The timer is made inside, where the runtime is current.
            let done = py.detach(|| {
                runtime.block_on(async { tokio::time::timeout(SIGNAL_CHECK, work.as_mut()).await })
            });
            if let Ok(output) = done {
                return Ok(output);
            }
            if let Err(interrupted) = py.check_signals() {
                drop(work);
                self.settle(py);
                return Err(interrupted);
            }
        }
    }

    /// Runs a bridge's own runtime a moment, for what a dropped call queued (its cancel) to be written and
    /// what arrived (the connection's end) to be read, when no call follows to do it. With another thread
    /// waiting on the bridge meanwhile, that thread does it. Nothing for the shared runtime, whose worker
    /// always runs.
    pub(crate) fn settle(&self, py: Python<'_>) {
        let Driver::Own(own) = self else {
            return;
        };
        let Ok(runtime) = own.runtime(py) else {
            return;
        };
        py.detach(|| {
            runtime.block_on(async {
                for _ in 0..SETTLE_YIELDS {
                    tokio::task::yield_now().await;
                }
            });
        });
    }
}

impl OwnRuntime {
    fn runtime(&self, py: Python<'_>) -> PyResult<&Runtime> {
        // Emptied only when dropped.
        self.0
            .as_ref()
            .ok_or_else(|| state_error(py, "the bridge's runtime has stopped"))
    }
}
