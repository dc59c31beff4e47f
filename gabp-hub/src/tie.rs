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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::time::Duration;

    #[test]
    fn a_game_started_from_a_thread_that_ends_keeps_running() {
        // Blocking threads retire 10 ms after their last task: the thread that asked for the start ends.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_keep_alive(Duration::from_millis(10))
            .enable_all()
            .build()
            .unwrap();
        let handle = runtime.handle().clone();
        let mut process = runtime
            .block_on(runtime.spawn_blocking(move || {
                let mut command = std::process::Command::new("sleep");
                command.arg("30");
                handle.block_on(super::start_tied(command))
            }))
            .unwrap()
            .unwrap();
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(
            process.try_status(),
            None,
            "the game ended with the thread that started it"
        );
        let _ = runtime.block_on(process.terminate(Duration::ZERO));
    }
}
