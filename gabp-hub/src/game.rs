//! One configured game: its process (when the hub started it), its GABP connection, and what the hub keeps
//! of it (status, tools, event log).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use gabp_transport::{Endpoint, ModProcess, Token};
use gabp_types::ToolDescriptor;
use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::{broadcast, mpsc, watch, Notify};

use crate::config::{GameConfig, StartupTimeouts};
use crate::error::HubError;
use crate::events::{EventLimits, EventLog};
use crate::launch::LaunchPlan;
use crate::link::{Link, Pump};
use crate::procs::Foreign;
use crate::HubEvent;

/// How long `games_start` waits for the game to answer over GABP before it returns and goes on trying in
/// the background (as GABS does).
const SYNC_START_WAIT: Duration = Duration::from_secs(20);
/// How long a graceful stop waits before it kills what is left.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Where a game is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum GameStatus {
    /// Not running as far as the hub knows.
    Stopped,
    /// Started by the hub; not reachable over GABP yet.
    Starting,
    /// Connected over GABP.
    Connected,
    /// Started by the hub, running, but not (or no longer) connected over GABP.
    RunningDisconnected,
    /// Attached with `games_connect` (not started by the hub), and the connection is lost.
    Disconnected,
    /// Exited without being asked to: crashed, or quit by itself.
    Exited,
    /// Being stopped.
    Stopping,
}

impl GameStatus {
    /// The status word (`connected`, `running-disconnected`, ...).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            GameStatus::Stopped => "stopped",
            GameStatus::Starting => "starting",
            GameStatus::Connected => "connected",
            GameStatus::RunningDisconnected => "running-disconnected",
            GameStatus::Disconnected => "disconnected",
            GameStatus::Exited => "exited",
            GameStatus::Stopping => "stopping",
        }
    }

    /// One sentence for people.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            GameStatus::Stopped => "stopped",
            GameStatus::Starting => "starting (the process runs; waiting for its GABP server)",
            GameStatus::Connected => "running and connected via GABP",
            GameStatus::RunningDisconnected => {
                "running, but not connected via GABP (use games_connect once its bridge is ready)"
            }
            GameStatus::Disconnected => "the GABP connection was lost (use games_connect)",
            GameStatus::Exited => {
                "exited on its own (crashed or quit); start it again with games_start"
            }
            GameStatus::Stopping => "stopping",
        }
    }

    pub(crate) fn is_live(self) -> bool {
        matches!(
            self,
            GameStatus::Starting
                | GameStatus::Connected
                | GameStatus::RunningDisconnected
                | GameStatus::Stopping
        )
    }
}

/// A game's state at one moment.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GameSnapshot {
    /// The id.
    pub game_id: String,
    /// The display name.
    pub name: String,
    /// The status.
    pub status: GameStatus,
    /// What the status means.
    pub status_description: &'static str,
    /// The process id, when the hub started it and it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The loopback port of its GABP server, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// How many tools it offers (0 when not connected).
    pub tool_count: usize,
    /// How its last process ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_exit: Option<String>,
    /// The last failure to reach it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// What `start` achieved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartOutcome {
    /// Started and connected; it offers this many tools.
    Connected {
        /// How many tools.
        tools: usize,
    },
    /// Not started: the game an earlier session of the hub started still runs, and the hub took it over
    /// and is connected to it.
    Attached {
        /// How many tools.
        tools: usize,
        /// Its process id.
        pid: Option<u32>,
    },
    /// Started, but not reachable over GABP yet; the hub goes on trying in the background.
    Pending {
        /// How long the call waited.
        waited: Duration,
        /// The last failure.
        reason: String,
    },
}

/// A request to the task that owns a game's process.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stop {
    Kill,
    Terminate(Duration),
}

#[derive(Debug, Clone)]
pub(crate) struct ProcessControl {
    pub(crate) pid: Option<u32>,
    pub(crate) stop: mpsc::UnboundedSender<Stop>,
    pub(crate) exited: watch::Receiver<Option<String>>,
}

pub(crate) struct State {
    pub(crate) status: GameStatus,
    /// Counts starts and attaches: work for an older one is dropped.
    pub(crate) epoch: u64,
    pub(crate) process: Option<ProcessControl>,
    /// The process was started by an earlier session and taken over (`games_start` attaches to it).
    pub(crate) adopted: bool,
    pub(crate) link: Option<Link>,
    pub(crate) port: Option<u16>,
    pub(crate) tools: Arc<[ToolDescriptor]>,
    last_exit: Option<String>,
    pub(crate) last_error: Option<String>,
    pub(crate) events: EventLog,
    /// The channels asked for with `subscribe`, restored on every new connection.
    pub(crate) channels: BTreeSet<String>,
    pub(crate) pumps: Vec<Pump>,
}

pub(crate) struct Shared {
    pub(crate) config: GameConfig,
    pub(crate) dir: PathBuf,
    pub(crate) startup: StartupTimeouts,
    pub(crate) changes: broadcast::Sender<HubEvent>,
    /// One start, stop or attach at a time.
    pub(crate) ops: tokio::sync::Mutex<()>,
    pub(crate) state: Mutex<State>,
    pub(crate) events_arrived: Notify,
    pub(crate) console: Arc<crate::console::ConsoleState>,
}

/// One configured game. Cheap to clone.
#[derive(Clone)]
pub struct Game {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Game {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Game")
            .field("id", &self.shared.config.id)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl Game {
    pub(crate) fn new(
        config: GameConfig,
        dir: PathBuf,
        startup: StartupTimeouts,
        limits: EventLimits,
        changes: broadcast::Sender<HubEvent>,
        console: broadcast::Sender<crate::console::ConsoleLine>,
    ) -> Game {
        Game {
            shared: Arc::new(Shared {
                config,
                dir,
                startup,
                changes,
                ops: tokio::sync::Mutex::new(()),
                state: Mutex::new(State {
                    status: GameStatus::Stopped,
                    epoch: 0,
                    process: None,
                    adopted: false,
                    link: None,
                    port: None,
                    tools: Arc::from(Vec::new()),
                    last_exit: None,
                    last_error: None,
                    events: EventLog::new(limits),
                    channels: BTreeSet::new(),
                    pumps: Vec::new(),
                }),
                events_arrived: Notify::new(),
                console: Arc::new(crate::console::ConsoleState::new(console)),
            }),
        }
    }

    /// Its configuration.
    #[must_use]
    pub fn config(&self) -> &GameConfig {
        &self.shared.config
    }

    /// The startup time limits it was made with.
    pub(crate) fn startup(&self) -> StartupTimeouts {
        self.shared.startup
    }

    /// Its id.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.shared.config.id
    }

    /// Its status.
    #[must_use]
    pub fn status(&self) -> GameStatus {
        self.shared.state.lock().status
    }

    /// Its state now.
    #[must_use]
    pub fn snapshot(&self) -> GameSnapshot {
        let state = self.shared.state.lock();
        GameSnapshot {
            game_id: self.shared.config.id.clone(),
            name: self.shared.config.name.clone(),
            status: state.status,
            status_description: state.status.describe(),
            pid: state.process.as_ref().and_then(|p| p.pid),
            port: state.port,
            tool_count: if state.link.is_some() {
                state.tools.len()
            } else {
                0
            },
            last_exit: state.last_exit.clone(),
            last_error: state.last_error.clone(),
        }
    }

    /// Starts the game: a fresh token and port in its environment and `bridge.json`, its process in a
    /// process group of its own, then connects to it. Waits up to 20 s (or the configured
    /// `gabpConnectSeconds`, if shorter) for the connection; after that returns
    /// [`StartOutcome::Pending`] and goes on trying in the background until `gabpConnectSeconds`. A store game
    /// is opened by its store's URL and found by `stopProcessName`. When the game an earlier session recorded
    /// still runs, it is attached to instead ([`StartOutcome::Attached`]).
    ///
    /// # Errors
    ///
    /// [`HubError::Unsupported`], [`HubError::AlreadyRunning`], [`HubError::Launch`],
    /// [`HubError::ExitedDuringStart`].
    pub async fn start(&self) -> Result<StartOutcome, HubError> {
        self.start_within(self.shared.startup.gabp_connect).await
    }

    /// As [`Game::start`], trying to connect for `total` instead of the configured `gabpConnectSeconds`.
    ///
    /// # Errors
    ///
    /// As [`Game::start`].
    pub async fn start_within(&self, total: Duration) -> Result<StartOutcome, HubError> {
        let _op = self.shared.ops.lock().await;
        let config = &self.shared.config;
        if let Some(reason) = &config.unsupported {
            return Err(self.unsupported(reason.clone()));
        }
        self.reconcile_locked();
        let status = self.status();
        if status.is_live() && self.shared.state.lock().adopted {
            return self.attach_adopted(total.min(SYNC_START_WAIT)).await;
        }
        if status.is_live() {
            return Err(HubError::AlreadyRunning {
                game: config.id.clone(),
                status: status.as_str(),
            });
        }
        let launch = |reason: String| HubError::Launch {
            game: config.id.clone(),
            reason,
        };
        let plan = LaunchPlan::prepare(&self.shared.dir, config)?;
        let mut command = plan.command(config)?;
        let epoch = if config.launch_mode.is_store() {
            let process = self.launch_store(&plan, command).await?;
            let epoch = self.begin(Some(plan.port), GameStatus::Starting);
            self.record(&process, plan.port);
            self.watch_foreign(epoch, process);
            epoch
        } else {
            crate::console::pipe_output(&mut command);
            let mut process = crate::tie::start_tied(command)
                .await
                .map_err(|e| launch(format!("{}: {e}", config.target)))?;
            self.shared
                .console
                .capture(self.id(), &mut process, &plan.log_path());
            let epoch = self.begin(Some(plan.port), GameStatus::Starting);
            if let Some(started) = process.id().and_then(Foreign::now) {
                self.record(&started, plan.port);
            }
            self.watch_process(epoch, process);
            epoch
        };
        self.changed(false);

        let endpoint = Endpoint::tcp_v4(plan.port);
        let game = self.clone();
        let token = plan.token.clone();
        let mut connecting = tokio::spawn(async move {
            game.connect_until(epoch, endpoint, token, total, Some(plan))
                .await
        });
        let wait = total.min(SYNC_START_WAIT);
        match tokio::time::timeout(wait, &mut connecting).await {
            Ok(Ok(Ok(tools))) => Ok(StartOutcome::Connected { tools }),
            Ok(Ok(Err(e))) => Err(e),
            Ok(Err(join)) => Err(launch(format!("the start task failed: {join}"))),
            Err(_) => Ok(StartOutcome::Pending {
                waited: wait,
                reason: self
                    .snapshot()
                    .last_error
                    .unwrap_or_else(|| "no answer yet".to_owned()),
            }),
        }
    }

    /// Attaches to the game at the endpoint and token in its `bridge.json` (`DIR/<id>/bridge.json`, written
    /// when the hub or GABS started it), or re-syncs its tools when already connected. Returns how many tools
    /// it offers.
    ///
    /// # Errors
    ///
    /// [`HubError::NotAttachable`] when there is no `bridge.json` to go by, [`HubError::ConnectTimeout`].
    pub async fn connect(&self, timeout: Duration) -> Result<usize, HubError> {
        let _op = self.shared.ops.lock().await;
        self.reconcile_locked();
        if let Some(link) = self.link() {
            link.bridge.invalidate_tools();
            let tools = link
                .bridge
                .tools()
                .await
                .map_err(|e| HubError::bridge(self.id(), e))?;
            self.shared.state.lock().tools = tools.clone();
            self.changed(true);
            return Ok(tools.len());
        }
        let (port, token) = self.read_bridge_json()?;
        let live = self.status().is_live();
        let epoch = if live {
            self.shared.state.lock().epoch
        } else {
            self.begin(Some(port), GameStatus::Disconnected)
        };
        self.connect_until(epoch, Endpoint::tcp_v4(port), token, timeout, None)
            .await
    }

    pub(crate) fn read_bridge_json(&self) -> Result<(u16, Token), HubError> {
        let path = self.shared.dir.join(self.id()).join("bridge.json");
        let not_attachable = |reason: String| HubError::NotAttachable {
            game: self.id().to_owned(),
            reason,
        };
        let text = std::fs::read(&path)
            .map_err(|e| not_attachable(format!("cannot read {}: {e}", path.display())))?;
        let value: serde_json::Value = serde_json::from_slice(&text)
            .map_err(|e| not_attachable(format!("{}: not valid JSON: {e}", path.display())))?;
        let port = value["port"]
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .ok_or_else(|| {
                not_attachable(format!("{}: /port: expected a port number", path.display()))
            })?;
        let token = value["token"]
            .as_str()
            .and_then(|t| Token::new(t).ok())
            .ok_or_else(|| {
                not_attachable(format!(
                    "{}: /token: expected the session token",
                    path.display()
                ))
            })?;
        Ok((port, token))
    }

    /// Stops the game the hub started: SIGTERM to its process group, then SIGKILL to what is left after
    /// 10 s (`force`: SIGKILL at once). Returns how the process ended.
    ///
    /// # Errors
    ///
    /// [`HubError::NotRunning`] when the hub has no process of this game.
    pub async fn stop(&self, force: bool) -> Result<String, HubError> {
        self.stop_within(if force { Duration::ZERO } else { STOP_GRACE })
            .await
    }

    /// Stops the game the hub started (or took over from an earlier session, see `runtime.json`): SIGTERM to
    /// its process group, SIGKILL to what is left after `grace` (at once when zero).
    ///
    /// # Errors
    ///
    /// [`HubError::NotRunning`] when the hub has no process of this game.
    pub async fn stop_within(&self, grace: Duration) -> Result<String, HubError> {
        self.stop_inner(grace, true).await
    }

    /// As [`Game::stop_within`]; with `take_over`, a game an earlier session recorded is stopped too.
    pub(crate) async fn stop_inner(
        &self,
        grace: Duration,
        take_over: bool,
    ) -> Result<String, HubError> {
        let _op = self.shared.ops.lock().await;
        if take_over {
            self.reconcile_locked();
        }
        let control = {
            let mut state = self.shared.state.lock();
            let Some(control) = state.process.clone() else {
                return Err(HubError::NotRunning {
                    game: self.id().to_owned(),
                });
            };
            state.status = GameStatus::Stopping;
            control
        };
        self.changed(false);
        if let Some(link) = self.link() {
            link.bridge.close().await;
        }
        let _ = control.stop.send(if grace.is_zero() {
            Stop::Kill
        } else {
            Stop::Terminate(grace)
        });
        let mut exited = control.exited;
        let outcome = exited
            .wait_for(Option::is_some)
            .await
            .map(|o| o.clone().unwrap_or_default())
            .unwrap_or_else(|_| "ended".to_owned());
        Ok(outcome)
    }

    /// A new start or attach: a new epoch, a new event log generation, no connection yet.
    pub(crate) fn begin(&self, port: Option<u16>, status: GameStatus) -> u64 {
        let mut state = self.shared.state.lock();
        state.epoch += 1;
        state.adopted = false;
        state.status = status;
        state.port = port;
        state.link = None;
        state.last_error = None;
        state.pumps.clear();
        state.events.restart();
        state.epoch
    }

    fn unsupported(&self, reason: String) -> HubError {
        HubError::Unsupported {
            game: self.id().to_owned(),
            reason,
        }
    }

    /// Tells listeners the status (and with `tools`, the tool list) changed.
    pub(crate) fn changed(&self, tools: bool) {
        let id = self.id().to_owned();
        let _ = self.shared.changes.send(HubEvent::StatusChanged {
            game: id.clone(),
            status: self.status(),
        });
        if tools {
            let _ = self
                .shared
                .changes
                .send(HubEvent::ToolsChanged { game: id });
        }
    }

    fn watch_process(&self, epoch: u64, mut process: ModProcess) {
        let (stop_tx, mut stops) = mpsc::unbounded_channel();
        let (exited_tx, exited_rx) = watch::channel(None);
        self.shared.state.lock().process = Some(ProcessControl {
            pid: process.id(),
            stop: stop_tx,
            exited: exited_rx,
        });
        let game = self.clone();
        tokio::spawn(async move {
            let status = loop {
                tokio::select! {
                    status = process.wait() => break status,
                    Some(stop) = stops.recv() => match stop {
                        Stop::Kill => process.kill(),
                        Stop::Terminate(grace) => break process.terminate(grace).await,
                    },
                }
            };
            let text = match status {
                Ok(status) => status.to_string(),
                Err(e) => e.to_string(),
            };
            game.process_exited(epoch, &text);
            exited_tx.send_replace(Some(text));
        });
    }

    pub(crate) fn process_exited(&self, epoch: u64, how: &str) {
        let link = {
            let mut state = self.shared.state.lock();
            if state.epoch != epoch {
                return;
            }
            state.status = if state.status == GameStatus::Stopping {
                GameStatus::Stopped
            } else {
                GameStatus::Exited
            };
            state.last_exit = Some(how.to_owned());
            state.process = None;
            state.adopted = false;
            state.pumps.clear();
            state.link.take()
        };
        crate::runtime::remove(&self.game_dir());
        tracing::info!(game = self.id(), how, "game process ended");
        if let Some(link) = link {
            tokio::spawn(async move { link.bridge.close().await });
        }
        self.changed(true);
    }

    /// The connection, when connected.
    pub(crate) fn link(&self) -> Option<Link> {
        self.shared.state.lock().link.clone()
    }

    /// The last exit of the process of `epoch`, if it has ended.
    pub(crate) fn exited(&self, epoch: u64) -> Option<String> {
        let state = self.shared.state.lock();
        if state.epoch != epoch {
            return Some("replaced by a newer start".to_owned());
        }
        match (&state.process, state.status) {
            (None, GameStatus::Exited | GameStatus::Stopped) => state.last_exit.clone(),
            _ => None,
        }
    }
}
