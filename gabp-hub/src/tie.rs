//! Starting a game so that it does not outlive the hub (docs/mcp.md, "Games do not outlive the hub").
//!
//! On Linux the game is given a parent-death signal (`prctl(PR_SET_PDEATHSIG, SIGTERM)`): when the hub dies,
//! even by SIGKILL, the kernel sends the game SIGTERM. The kernel counts the *thread* that forked as the
//! parent, and Tokio's threads may end while the hub lives (blocking threads retire when idle), so every game
//! is forked from one thread that lives as long as the process. Elsewhere the game is started as before; the
//! runtime record (`runtime.rs`) is what finds it again.

use std::sync::mpsc;
use std::sync::OnceLock;

use gabp_transport::ModProcess;

type Job = Box<dyn FnOnce() + Send>;

/// The thread games are forked from: started once, never ends (the sender lives in a static).
fn spawner() -> &'static mpsc::Sender<Job> {
    static SPAWNER: OnceLock<mpsc::Sender<Job>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (jobs, queue) = mpsc::channel::<Job>();
        let started = std::thread::Builder::new()
            .name("gabp-hub-spawner".to_owned())
            .spawn(move || {
                for job in queue {
                    job();
                }
            });
        if let Err(e) = started {
            tracing::warn!(error = %e, "cannot start the spawner thread; games are started from the caller's thread");
        }
        jobs
    })
}

/// Starts `command` as [`ModProcess::start`] does, tied to the hub's life where the system allows it.
/// Must be called inside a Tokio runtime. The error says why it could not be started.
pub(crate) async fn start_tied(mut command: std::process::Command) -> Result<ModProcess, String> {
    tie(&mut command);
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|_| "not inside a Tokio runtime".to_owned())?;
    let (done, answer) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _entered = runtime.enter();
        let _ = done.send(ModProcess::start(command).map_err(|e| e.to_string()));
    });
    if let Err(mpsc::SendError(job)) = spawner().send(job) {
        // No spawner thread: start from here (the parent-death signal then follows this thread).
        job();
    }
    answer
        .await
        .unwrap_or_else(|_| Err("the spawner thread ended before starting the game".to_owned()))
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn tie(command: &mut std::process::Command) {
    use rustix::process::{getppid, set_parent_process_death_signal, Signal};
    use std::os::unix::process::CommandExt;
    let hub = rustix::process::getpid();
    // SAFETY: the closure runs in the forked child before exec. It makes two system calls (prctl, getppid)
    // through rustix's raw syscall layer: async-signal-safe, no allocation, no lock. On failure it returns
    // an io::Error made from an errno, which does not allocate either.
    unsafe {
        command.pre_exec(move || {
            set_parent_process_death_signal(Some(Signal::TERM))?;
            // The hub died between fork and prctl: the signal will never come, so do not start.
            if getppid() != Some(hub) {
                return Err(rustix::io::Errno::SRCH.into());
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn tie(_command: &mut std::process::Command) {}
