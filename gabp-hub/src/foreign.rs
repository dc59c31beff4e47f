//! Games the hub did not fork: one a store launcher started (found by its `stopProcessName`), and one an
//! earlier session of the hub started and recorded (`runtime.json`), attached to instead of started twice.

use std::path::PathBuf;
use std::time::Duration;

use gabp_transport::Endpoint;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::error::HubError;
use crate::game::{Game, GameStatus, ProcessControl, StartOutcome, Stop};
use crate::launch::{store_url, LaunchPlan};
use crate::procs::{self, Foreign};
use crate::runtime::{self, Record};

/// How often a game that is not the hub's child is checked for its end.
const ALIVE_POLL: Duration = Duration::from_millis(200);
/// How long a game recorded by an earlier session is tried over GABP when the hub starts.
const RECONCILE_CONNECT: Duration = Duration::from_secs(10);

impl Game {
    /// `DIR/<id>`.
    pub(crate) fn game_dir(&self) -> PathBuf {
        self.shared.dir.join(self.id())
    }

    /// Records the process of a start (`runtime.json`), so that a later session finds it.
    pub(crate) fn record(&self, process: &Foreign, port: u16) {
        let record = Record {
            game_id: self.id().to_owned(),
            pid: process.pid,
            identity: process.identity.clone(),
            port,
            launch_mode: self.config().launch_mode.as_str().to_owned(),
            hub_pid: std::process::id(),
        };
        if let Err(e) = runtime::write(&self.game_dir(), &record) {
            tracing::warn!(game = self.id(), error = %e, "cannot record the started game");
        }
    }

    /// With no process of its own for this game, takes over the one an earlier session recorded, if it still
    /// runs (a record of one that ended is dropped). Called with the operation lock held. Returns whether it
    /// took one over.
    pub(crate) fn reconcile_locked(&self) -> bool {
        if self.shared.state.lock().process.is_some() {
            return false;
        }
        let dir = self.game_dir();
        let Some(record) = runtime::read(&dir, self.id()) else {
            return false;
        };
        let Some(process) = runtime::live(&record) else {
            tracing::info!(
                game = self.id(),
                pid = record.pid,
                "the recorded game no longer runs; record dropped"
            );
            runtime::remove(&dir);
            return false;
        };
        tracing::info!(
            game = self.id(),
            pid = process.pid,
            "the game an earlier session started still runs; taken over"
        );
        let epoch = self.begin(Some(record.port), GameStatus::RunningDisconnected);
        self.shared.state.lock().adopted = true;
        self.watch_foreign(epoch, process);
        self.changed(false);
        true
    }

    /// Takes over a game an earlier session started and left running, and connects to it (for up to 10 s).
    pub(crate) async fn reconcile(&self) {
        let _op = self.shared.ops.lock().await;
        if self.reconcile_locked() {
            if let Err(e) = self.attach_adopted(RECONCILE_CONNECT).await {
                tracing::info!(game = self.id(), error = %e, "not connected to the game taken over yet");
            }
        }
    }

    /// Connects to the game taken over (at the endpoint in its `bridge.json`), unless connected already.
    pub(crate) async fn attach_adopted(&self, within: Duration) -> Result<StartOutcome, HubError> {
        let (epoch, pid, connected) = {
            let state = self.shared.state.lock();
            (
                state.epoch,
                state.process.as_ref().and_then(|p| p.pid),
                state.link.as_ref().map(|_| state.tools.len()),
            )
        };
        if let Some(tools) = connected {
            return Ok(StartOutcome::Attached { tools, pid });
        }
        let (port, token) = self.read_bridge_json()?;
        let tools = self
            .connect_until(epoch, Endpoint::tcp_v4(port), token, within, None)
            .await?;
        Ok(StartOutcome::Attached { tools, pid })
    }

    /// Starts a store game: runs the store's launcher with the game's settings in its environment, then finds
    /// the game by its `stopProcessName` within `processStartSeconds`.
    pub(crate) async fn launch_store(
        &self,
        plan: &LaunchPlan,
        command: std::process::Command,
    ) -> Result<Foreign, HubError> {
        let config = self.config();
        let launch = |reason: String| HubError::Launch {
            game: config.id.clone(),
            reason,
        };
        let name = config.stop_process_name.as_deref().unwrap_or_default();
        if let Some(pid) = procs::find_by_name(name).map_err(launch)?.first() {
            return Err(launch(format!(
                "a process named '{name}' (pid {pid}) already runs and was not started by this hub; stop it, or attach to it with games_connect"
            )));
        }
        let url = store_url(config).unwrap_or_default();
        let program = command.get_program().to_string_lossy().into_owned();
        let mut command = tokio::process::Command::from(command);
        // Its own group: the terminal's signals to the hub do not reach a store client the launcher starts.
        #[cfg(unix)]
        command.process_group(0);
        let mut launcher = command
            .spawn()
            .map_err(|e| launch(format!("cannot run {program} {url}: {e}")))?;
        let limit = self.shared.startup.process_start;
        let deadline = Instant::now() + limit;
        let mut launcher_done = false;
        loop {
            if !launcher_done {
                if let Ok(Some(status)) = launcher.try_wait() {
                    launcher_done = true;
                    if !status.success() {
                        return Err(launch(format!(
                            "{program} {url} failed ({status}){}",
                            tail(&plan.output_tail(2048))
                        )));
                    }
                }
            }
            // Oldest first: the game rather than a helper it started.
            if let Some(process) = procs::find_by_name(name)
                .map_err(launch)?
                .into_iter()
                .find_map(Foreign::now)
            {
                // A launcher still running is left to itself (Tokio reaps it when it ends).
                return Ok(process);
            }
            if Instant::now() >= deadline {
                return Err(launch(format!(
                    "{program} opened {url}, but no process named '{name}' (/games/{}/stopProcessName) appeared within {} s (timeouts.startup.processStartSeconds){}",
                    config.id,
                    limit.as_secs(),
                    tail(&plan.output_tail(2048))
                )));
            }
            tokio::time::sleep(procs::POLL * 2).await;
        }
    }

    /// Follows a game the hub did not fork: its end is seen by polling, and it is stopped by signals.
    pub(crate) fn watch_foreign(&self, epoch: u64, process: Foreign) {
        let (stop_tx, mut stops) = mpsc::unbounded_channel();
        let (exited_tx, exited_rx) = watch::channel(None);
        self.shared.state.lock().process = Some(ProcessControl {
            pid: Some(process.pid),
            stop: stop_tx,
            exited: exited_rx,
        });
        let game = self.clone();
        tokio::spawn(async move {
            let text = loop {
                tokio::select! {
                    () = tokio::time::sleep(ALIVE_POLL) => if !process.alive() {
                        break "ended (not a child of this hub, so its exit status is not known)".to_owned();
                    },
                    Some(stop) = stops.recv() => break process.end(match stop {
                        Stop::Kill => Duration::ZERO,
                        Stop::Terminate(grace) => grace,
                    }).await,
                }
            };
            game.process_exited(epoch, &text);
            exited_tx.send_replace(Some(text));
        });
    }
}

fn tail(output: &str) -> String {
    if output.trim().is_empty() {
        String::new()
    } else {
        format!("; its output ends with:\n{output}")
    }
}
