//! A game's GABP connection: reaching it, following it (reconnects, tool changes), and the event
//! subscriptions that feed its log.

use std::collections::BTreeSet;
use std::time::Duration;

use futures::StreamExt;
use gabp_attention::AttentionGate;
use gabp_session::bridge::{
    Bridge, ConnectionState, ReconnectPolicy, Subscription, SubscriptionItem,
};
use gabp_transport::{Endpoint, Token};
use gabp_types::methods::TOOLS_CHANGED_CHANNEL;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::error::HubError;
use crate::events::Gap;
use crate::game::{Game, GameStatus};
use crate::launch::LaunchPlan;

/// The extension methods that change the game: refused, like a game-changing tool call, while a blocking
/// attention item is open. `time/pause` and `time/status` always pass (pausing is what an agent does first).
pub const GATED_METHODS: [&str; 5] = [
    "time/resume",
    "time/step",
    "input/key",
    "input/text",
    "input/mouse",
];

/// The hub's name in `session/hello`.
const CLIENT_NAME: &str = "gabp-hub";

/// An established connection to a game, with the attention gate that follows it.
#[derive(Clone)]
pub(crate) struct Link {
    pub(crate) bridge: Bridge,
    pub(crate) gate: AttentionGate,
}

/// A task that moves one subscription's events into the game's log; ends (and unsubscribes) when dropped.
pub(crate) struct Pump {
    pub(crate) channels: BTreeSet<String>,
    task: JoinHandle<()>,
}

impl Drop for Pump {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Game {
    /// Tries to connect until `total` has passed, the process of `epoch` has exited, or a newer start
    /// replaced it; then attaches. Returns the number of tools.
    pub(crate) async fn connect_until(
        &self,
        epoch: u64,
        endpoint: Endpoint,
        token: Token,
        total: Duration,
        plan: Option<LaunchPlan>,
    ) -> Result<usize, HubError> {
        let started = Instant::now();
        let mut delay = Duration::from_millis(100);
        // While the hub owns the process, a lost connection is retried for as long as it runs; a game
        // attached with games_connect gets about a minute.
        let attempts = if plan.is_some() { None } else { Some(60) };
        loop {
            if let Some(how) = self.exited(epoch) {
                self.shared.console.drained().await;
                let output_tail = plan
                    .as_ref()
                    .map(|p| p.output_tail(2048))
                    .unwrap_or_default();
                return Err(HubError::ExitedDuringStart {
                    game: self.id().to_owned(),
                    status: how,
                    output_tail,
                });
            }
            let builder = Bridge::builder(token.clone())
                .client_info(CLIENT_NAME, env!("CARGO_PKG_VERSION"))
                .reconnect(
                    ReconnectPolicy::new()
                        .max_delay(Duration::from_secs(1))
                        .max_attempts(attempts),
                );
            let reason = match builder.connect(&endpoint).await {
                Ok(bridge) => return self.attach(epoch, bridge).await,
                Err(e) => e.to_string(),
            };
            self.shared.state.lock().last_error = Some(reason.clone());
            let elapsed = started.elapsed();
            if elapsed >= total {
                let mut state = self.shared.state.lock();
                if state.epoch == epoch && state.status == GameStatus::Starting {
                    state.status = GameStatus::RunningDisconnected;
                }
                drop(state);
                self.changed(false);
                return Err(HubError::ConnectTimeout {
                    game: self.id().to_owned(),
                    waited_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
                    reason,
                });
            }
            tokio::time::sleep(delay.min(total - elapsed)).await;
            delay = (delay * 2).min(Duration::from_secs(1));
        }
    }

    /// Takes `bridge` as the game's connection (unless a newer start replaced `epoch`): the attention gate,
    /// the tool list, the restored subscriptions, and the tasks that follow the connection.
    async fn attach(&self, epoch: u64, bridge: Bridge) -> Result<usize, HubError> {
        let gate = GATED_METHODS
            .iter()
            .fold(AttentionGate::builder(), |gate, method| {
                gate.gate_method(*method)
            })
            .build(&bridge.service());
        gate.sync().await;
        let tools = match bridge.tools().await {
            Ok(tools) => tools,
            Err(e) => {
                bridge.close().await;
                return Err(HubError::bridge(self.id(), e));
            }
        };
        let channels = {
            let mut state = self.shared.state.lock();
            if state.epoch == epoch {
                state.link = Some(Link {
                    bridge: bridge.clone(),
                    gate,
                });
                state.tools = tools.clone();
                state.status = GameStatus::Connected;
                state.last_error = None;
                Some(state.channels.clone())
            } else {
                None
            }
        };
        let Some(channels) = channels else {
            bridge.close().await;
            return Err(HubError::NotRunning {
                game: self.id().to_owned(),
            });
        };
        tracing::info!(game = self.id(), tools = tools.len(), "connected");
        self.follow_connection(epoch, &bridge);
        self.follow_tools(epoch, &bridge);
        if !channels.is_empty() {
            if let Ok(subscription) = bridge.subscribe(channels.iter().cloned()).await {
                self.pump(epoch, subscription);
            }
        }
        self.changed(true);
        Ok(tools.len())
    }

    /// Follows the connection's state: a reconnect (the game restarted on the same port) is a status change
    /// and a gap in the log; a connection lost for good is dropped.
    fn follow_connection(&self, epoch: u64, bridge: &Bridge) {
        let mut states = bridge.connection_state();
        let game = self.clone();
        tokio::spawn(async move {
            while states.changed().await.is_ok() {
                let now = states.borrow_and_update().clone();
                let Some((tools, end)) = game.connection_changed(epoch, now) else {
                    return;
                };
                if tools {
                    game.refresh_tools(epoch).await;
                }
                game.changed(tools || end);
                if end {
                    return;
                }
            }
        });
    }

    /// Records a new connection state; `None` when `epoch` is over, else whether the tools may have changed
    /// and whether the connection is gone for good.
    fn connection_changed(&self, epoch: u64, now: ConnectionState) -> Option<(bool, bool)> {
        let mut state = self.shared.state.lock();
        // Once the process has ended (or is being stopped), its status says so; the connection's end adds nothing.
        if state.epoch != epoch
            || matches!(
                state.status,
                GameStatus::Stopping | GameStatus::Exited | GameStatus::Stopped
            )
        {
            return None;
        }
        let lost = if state.process.is_some() {
            GameStatus::RunningDisconnected
        } else {
            GameStatus::Disconnected
        };
        match now {
            ConnectionState::Reconnecting { reason, .. } => {
                state.status = lost;
                state.last_error = Some(reason.to_string());
                Some((false, false))
            }
            ConnectionState::Connected { .. } => {
                state.status = GameStatus::Connected;
                state.events.push_gap(Gap {
                    channel: None,
                    missed: 0,
                    reason: "reconnected",
                });
                Some((true, false))
            }
            ConnectionState::Disconnected { reason } => {
                state.status = lost;
                state.last_error = Some(reason.to_string());
                state.link = None;
                state.pumps.clear();
                Some((false, true))
            }
            _ => Some((false, false)),
        }
    }

    /// Follows `tools/changed` (SPEC/1.0 extensions.md §tools-changed) when the game offers it.
    fn follow_tools(&self, epoch: u64, bridge: &Bridge) {
        let game = self.clone();
        let bridge = bridge.clone();
        tokio::spawn(async move {
            let Ok(mut changes) = bridge.subscribe([TOOLS_CHANGED_CHANNEL]).await else {
                return;
            };
            if changes.channels().is_empty() {
                return;
            }
            while let Some(Ok(_)) = changes.next().await {
                if !game.refresh_tools(epoch).await {
                    return;
                }
                game.changed(true);
            }
        });
    }

    /// Fetches the tool list again; `false` when `epoch` is no longer current.
    async fn refresh_tools(&self, epoch: u64) -> bool {
        let Some(link) = self.link() else {
            return false;
        };
        match link.bridge.tools().await {
            Ok(tools) => {
                let mut state = self.shared.state.lock();
                if state.epoch != epoch {
                    return false;
                }
                state.tools = tools;
                true
            }
            Err(e) => {
                tracing::debug!(game = self.id(), error = %e, "tools/list failed");
                true
            }
        }
    }

    /// Subscribes to `channels` (those not subscribed already) and logs their events; returns the channels
    /// subscribed now, all told.
    ///
    /// # Errors
    ///
    /// [`HubError::NotConnected`], [`HubError::Bridge`].
    pub async fn subscribe(&self, channels: &[String]) -> Result<Vec<String>, HubError> {
        let link = self.require_link()?;
        let (epoch, new): (u64, Vec<String>) = {
            let state = self.shared.state.lock();
            let new = channels
                .iter()
                .filter(|c| !state.channels.contains(*c))
                .cloned()
                .collect();
            (state.epoch, new)
        };
        if !new.is_empty() {
            let subscription = link
                .bridge
                .subscribe(new)
                .await
                .map_err(|e| HubError::bridge(self.id(), e))?;
            let granted = subscription.channels();
            self.shared.state.lock().channels.extend(granted);
            self.pump(epoch, subscription);
        }
        Ok(self.shared.state.lock().channels.iter().cloned().collect())
    }

    /// Stops logging `channels`; returns the channels still subscribed.
    pub fn unsubscribe(&self, channels: &[String]) -> Vec<String> {
        let mut state = self.shared.state.lock();
        for channel in channels {
            state.channels.remove(channel);
        }
        let keep = state.channels.clone();
        state
            .pumps
            .retain(|pump| pump.channels.iter().any(|c| keep.contains(c)));
        keep.into_iter().collect()
    }

    fn pump(&self, epoch: u64, mut subscription: Subscription) {
        let channels: BTreeSet<String> = subscription.channels().into_iter().collect();
        let game = self.clone();
        let task = tokio::spawn(async move {
            while let Some(Ok(item)) = subscription.next().await {
                let mut state = game.shared.state.lock();
                if state.epoch != epoch {
                    return;
                }
                match item {
                    SubscriptionItem::Event(event) => {
                        if state.channels.contains(event.channel.as_str()) {
                            state.events.push(event);
                        }
                    }
                    SubscriptionItem::Lagged { channel, missed } => state.events.push_gap(Gap {
                        channel: Some(channel.as_str().to_owned()),
                        missed,
                        reason: "mod",
                    }),
                    // The connection follower logs reconnects once for all subscriptions.
                    _ => continue,
                }
                drop(state);
                game.shared.events_arrived.notify_waiters();
            }
        });
        self.shared.state.lock().pumps.push(Pump { channels, task });
    }

    /// The connection, or [`HubError::NotConnected`].
    pub(crate) fn require_link(&self) -> Result<super::link::Link, HubError> {
        self.link().ok_or_else(|| HubError::NotConnected {
            game: self.id().to_owned(),
            status: self.status().as_str(),
        })
    }
}
