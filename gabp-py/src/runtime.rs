//! The one tokio runtime every bridge and mod of the process runs on, and the wait that blocks a Python
//! thread on it: without the interpreter held, and Ctrl-C still heard.

use std::future::Future;
use std::pin::pin;
use std::sync::OnceLock;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use tokio::runtime::Runtime;

/// How often a blocked call looks for a signal (Ctrl-C) to hand to Python.
const SIGNAL_CHECK: Duration = Duration::from_millis(50);

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// The process's runtime, started on first use: two worker threads serve every connection.
pub(crate) fn runtime() -> PyResult<&'static Runtime> {
    if let Some(runtime) = RUNTIME.get() {
        return Ok(runtime);
    }
    let built = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
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
