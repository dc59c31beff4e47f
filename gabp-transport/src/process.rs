//! [`ModProcess`]: a game or mod process in a process group of its own, so that ending it ends
//! everything it started, a shell's children included (SPEC/1.0/transport.md §2.1).

use std::fmt;
use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::error::TransportError;

/// How often a terminating group is checked for members left once its leader has exited.
const EMPTY_POLL: Duration = Duration::from_millis(20);

/// A request to the task that owns the child.
#[derive(Debug, Clone, Copy)]
enum Stop {
    Kill,
    Terminate(Duration),
}

type Outcome = Option<Result<ExitStatus, (io::ErrorKind, String)>>;

/// Ends the process group when dropped: dropping the sender wakes the task that owns the child.
pub(crate) struct EndOnDrop(#[allow(dead_code)] oneshot::Sender<()>);

/// A game or mod process, started in a process group of its own: [`ModProcess::start`] for a
/// process that listens on a socket, [`spawn`](crate::spawn) for one on stdio.
///
/// Ending it ([`kill`](ModProcess::kill), [`terminate`](ModProcess::terminate), dropping its
/// owner) ends the whole group: a `sh -c 'CMD'` and everything it started, not only the shell.
/// On Unix the child is the leader of a new process group; on Windows it gets a new process
/// group and is ended with `taskkill /T`, which takes its descendants too.
///
/// Who keeps the process alive: a `ModProcess` from [`ModProcess::start`] ends the group when it
/// is dropped; one from [`spawn`](crate::spawn) does not, its [`Connection`](crate::Connection)
/// does. The group is also ended when the Tokio runtime shuts down. Being in a group of its own,
/// the child does not get the terminal's Ctrl-C: end it yourself (a mod on stdio also sees end of
/// input when this process exits).
///
/// ```
/// # #[cfg(unix)]
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use gabp_transport::ModProcess;
///
/// // A game that starts a helper and then listens on TCP (here: sleeps).
/// let mut game = std::process::Command::new("sh");
/// game.args(["-c", "sleep 1000 & sleep 1000"]);
/// let mut process = ModProcess::start(game)?;
/// assert!(process.try_status().is_none());
///
/// // SIGTERM to the group; SIGKILL to whatever is left after two seconds.
/// let status = process.terminate(Duration::from_secs(2)).await?;
/// assert!(!status.success());
/// # Ok(())
/// # }
/// # #[cfg(not(unix))]
/// # fn main() {}
/// ```
pub struct ModProcess {
    pid: Option<u32>,
    program: String,
    status: watch::Receiver<Outcome>,
    stop: mpsc::UnboundedSender<Stop>,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    end_on_drop: Option<EndOnDrop>,
}

impl ModProcess {
    /// Start `command` in a process group of its own. Its stdin, stdout and stderr are as the
    /// command sets them (inherited by default); those set to `Stdio::piped()` are handed out by
    /// [`take_stdin`](ModProcess::take_stdin), [`take_stdout`](ModProcess::take_stdout) and
    /// [`take_stderr`](ModProcess::take_stderr). Dropping the returned value ends the group.
    ///
    /// Takes a [`tokio::process::Command`] or a [`std::process::Command`]. Must be called inside
    /// a Tokio runtime.
    ///
    /// # Errors
    ///
    /// [`TransportError::NoRuntime`] outside a Tokio runtime; [`TransportError::Io`] when the
    /// program cannot be started.
    pub fn start(command: impl Into<Command>) -> Result<ModProcess, TransportError> {
        Self::start_as(command.into(), "ModProcess::start")
    }

    pub(crate) fn start_as(
        mut command: Command,
        caller: &'static str,
    ) -> Result<ModProcess, TransportError> {
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| TransportError::NoRuntime(caller))?;
        let program = command
            .as_std()
            .get_program()
            .to_string_lossy()
            .into_owned();
        own_group(&mut command);
        command.kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| TransportError::io("start", &program, e))?;
        let pid = child.id();
        let (stdin, stdout, stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let (end_tx, end_rx) = oneshot::channel();
        let (stop_tx, stop_rx) = mpsc::unbounded_channel();
        let (status_tx, status_rx) = watch::channel(None);
        runtime.spawn(supervise(
            child,
            Group::new(pid),
            stop_rx,
            end_rx,
            status_tx,
        ));
        tracing::debug!(%program, ?pid, "started a process in its own process group");
        Ok(ModProcess {
            pid,
            program,
            status: status_rx,
            stop: stop_tx,
            stdin,
            stdout,
            stderr,
            end_on_drop: Some(EndOnDrop(end_tx)),
        })
    }

    /// Hands the duty of ending the group on drop to someone else (the connection of `spawn`).
    pub(crate) fn take_end_on_drop(&mut self) -> Option<EndOnDrop> {
        self.end_on_drop.take()
    }

    /// The program, as given to the command (for messages).
    pub(crate) fn program(&self) -> &str {
        &self.program
    }

    /// The child's process id (on Unix also its process group id), if it had one when started.
    #[must_use]
    pub fn id(&self) -> Option<u32> {
        self.pid
    }

    /// The child's stdin, if the command was given `Stdio::piped()` for it (once).
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.stdin.take()
    }

    /// The child's stdout, if the command was given `Stdio::piped()` for it (once).
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.stdout.take()
    }

    /// The child's stderr, if the command was given `Stdio::piped()` for it (once).
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.stderr.take()
    }

    /// End the whole group now (SIGKILL on Unix). Returns at once; [`ModProcess::wait`] sees the
    /// child's exit.
    pub fn kill(&self) {
        let _ = self.stop.send(Stop::Kill);
    }

    /// End the group gracefully: SIGTERM to every process of it, then SIGKILL to those still there
    /// after `grace` (on Windows: `taskkill /T`, then `taskkill /T /F`). Returns the child's exit
    /// status once it has exited.
    ///
    /// # Errors
    ///
    /// As [`ModProcess::wait`].
    pub async fn terminate(&mut self, grace: Duration) -> Result<ExitStatus, TransportError> {
        let _ = self.stop.send(Stop::Terminate(grace));
        self.wait().await
    }

    /// The exit status, if the child has exited.
    #[must_use]
    pub fn try_status(&self) -> Option<ExitStatus> {
        match &*self.status.borrow() {
            Some(Ok(status)) => Some(*status),
            _ => None,
        }
    }

    /// Wait until the child has exited and return its status. Cancel-safe.
    ///
    /// # Errors
    ///
    /// [`TransportError::Io`] if waiting for the child failed, or if the runtime shut down before
    /// the child's exit was seen (the group is ended then).
    pub async fn wait(&mut self) -> Result<ExitStatus, TransportError> {
        let outcome = self
            .status
            .wait_for(Option::is_some)
            .await
            .map(|o| o.clone())
            .map_err(|_| {
                TransportError::io(
                    "wait for",
                    &self.program,
                    io::Error::other("the runtime shut down before the child exited"),
                )
            })?;
        match outcome {
            Some(Ok(status)) => Ok(status),
            Some(Err((kind, message))) => Err(TransportError::io(
                "wait for",
                &self.program,
                io::Error::new(kind, message),
            )),
            None => Err(TransportError::io(
                "wait for",
                &self.program,
                io::Error::other("no exit status"),
            )),
        }
    }
}

impl fmt::Debug for ModProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModProcess")
            .field("pid", &self.pid)
            .field("program", &self.program)
            .field("status", &self.try_status())
            .finish_non_exhaustive()
    }
}

/// Owns the child: reaps it, ends its group on request, and when the owner lets go (or the runtime
/// drops this task, through [`Group`]'s `Drop`).
async fn supervise(
    mut child: Child,
    group: Group,
    mut stops: mpsc::UnboundedReceiver<Stop>,
    mut released: oneshot::Receiver<()>,
    status: watch::Sender<Outcome>,
) {
    let record = |outcome: io::Result<ExitStatus>| {
        status.send_replace(Some(outcome.map_err(|e| (e.kind(), e.to_string()))));
    };
    let mut exited = false;
    let mut stops_open = true;
    // While terminating: when the group gets SIGKILL.
    let mut kill_at: Option<Instant> = None;
    loop {
        tokio::select! {
            outcome = child.wait(), if !exited => {
                exited = true;
                group.leader_exited();
                record(outcome);
            }
            // The owner let go: the sender was dropped (it is never used otherwise).
            _ = &mut released => break,
            stop = stops.recv(), if stops_open => match stop {
                None => stops_open = false,
                Some(Stop::Kill) => {
                    group.kill(&mut child, exited);
                    kill_at = None;
                }
                Some(Stop::Terminate(grace)) => {
                    group.terminate();
                    let at = Instant::now() + grace;
                    kill_at = Some(kill_at.map_or(at, |k| k.min(at)));
                }
            },
            () = tokio::time::sleep_until(kill_at.unwrap_or_else(Instant::now)), if kill_at.is_some() => {
                group.kill(&mut child, exited);
                kill_at = None;
            }
            // The leader is gone: once the rest of the group is too, nothing is left to kill.
            () = tokio::time::sleep(EMPTY_POLL), if kill_at.is_some() && exited => {
                if group.is_empty() {
                    kill_at = None;
                }
            }
        }
    }
    group.kill(&mut child, exited);
    if !exited {
        record(child.wait().await);
        group.leader_exited();
    }
}

/// Starts the child as the leader of a new process group (Unix) or in a new process group
/// (Windows), so that signals reach everything it starts.
fn own_group(command: &mut Command) {
    #[cfg(unix)]
    command.process_group(0);
    #[cfg(windows)]
    {
        const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
        command.creation_flags(CREATE_NEW_PROCESS_GROUP);
    }
    #[cfg(not(any(unix, windows)))]
    let _ = command;
}

/// The child's process group. Dropped (the task ends, or the runtime drops it), it is killed.
struct Group {
    #[cfg(unix)]
    pgid: Option<rustix::process::Pid>,
    #[cfg(windows)]
    pid: Option<u32>,
    /// The group is known to be empty: never signal it again (its id may be reused).
    gone: std::sync::atomic::AtomicBool,
    leader_exited: std::sync::atomic::AtomicBool,
}

impl Group {
    fn new(pid: Option<u32>) -> Self {
        Group {
            #[cfg(unix)]
            pgid: pid
                .and_then(|p| i32::try_from(p).ok())
                .and_then(rustix::process::Pid::from_raw),
            #[cfg(windows)]
            pid,
            gone: pid.is_none().into(),
            leader_exited: false.into(),
        }
    }

    fn is_gone(&self) -> bool {
        self.gone.load(std::sync::atomic::Ordering::Acquire)
    }

    fn mark_gone(&self) {
        self.gone.store(true, std::sync::atomic::Ordering::Release);
    }

    fn leader_exited(&self) {
        self.leader_exited
            .store(true, std::sync::atomic::Ordering::Release);
        // Nobody else left in the group: its id is free from now on, never signal it.
        if self.is_empty() {
            self.mark_gone();
        }
    }

    /// SIGKILL to the group; the child itself too, should it be elsewhere.
    fn kill(&self, child: &mut Child, exited: bool) {
        if !exited {
            let _ = child.start_kill();
        }
        self.end(true);
    }

    /// SIGTERM to the group.
    fn terminate(&self) {
        self.end(false);
    }

    #[cfg(unix)]
    fn end(&self, kill: bool) {
        use rustix::process::{kill_process_group, Signal};
        let Some(pgid) = self.pgid.filter(|_| !self.is_gone()) else {
            return;
        };
        let signal = if kill { Signal::KILL } else { Signal::TERM };
        match kill_process_group(pgid, signal) {
            Ok(()) => {}
            Err(rustix::io::Errno::SRCH) => self.mark_gone(),
            Err(e) => {
                tracing::debug!(pgid = pgid.as_raw_nonzero(), error = %e, "cannot signal the process group")
            }
        }
    }

    #[cfg(windows)]
    fn end(&self, kill: bool) {
        // taskkill follows parent links from the child, so it can only find the tree while it lives.
        let Some(pid) = self.pid.filter(|_| {
            !self.is_gone()
                && !self
                    .leader_exited
                    .load(std::sync::atomic::Ordering::Acquire)
        }) else {
            return;
        };
        let mut taskkill = std::process::Command::new("taskkill");
        taskkill.arg("/T").arg("/PID").arg(pid.to_string());
        if kill {
            taskkill.arg("/F");
        }
        taskkill
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if let Err(e) = taskkill.spawn() {
            tracing::debug!(pid, error = %e, "cannot run taskkill");
        }
    }

    #[cfg(not(any(unix, windows)))]
    fn end(&self, _kill: bool) {}

    /// Whether no process of the group is left (zombies still count on Unix).
    fn is_empty(&self) -> bool {
        if self.is_gone() {
            return true;
        }
        #[cfg(unix)]
        if let Some(pgid) = self.pgid {
            return matches!(
                rustix::process::test_kill_process_group(pgid),
                Err(rustix::io::Errno::SRCH)
            );
        }
        self.leader_exited
            .load(std::sync::atomic::Ordering::Acquire)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.end(true);
    }
}
