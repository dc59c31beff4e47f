//! gabp-hub: the multi-game supervisor of gabp-rs.
//!
//! A [`Hub`] reads a GABS-compatible configuration ([`HubConfig`]), launches the configured games the way
//! GABS does (a fresh token and a free loopback port in their environment and `bridge.json`, each in a
//! process group of its own), attaches to them over GABP as a bridge, and keeps for each one its status, its
//! tools (refreshed on `tools/changed`), its attention item (followed from events: a refused call costs no
//! message to the game) and a log of the events a client subscribed to, read by cursor. It has no MCP in it:
//! `gabp-mcp` puts an MCP front on it. A [`LiveHub`] follows `config.json` as it changes.
//!
//! Layering: a bridge-side application of `gabp-session` (each game's `Bridge`), `gabp-transport` (launching,
//! `bridge.json`) and `gabp-attention` (the gate); below `gabp-mcp` and `gabp mcp`.
//!
//! ```no_run
//! use gabp_hub::{Hub, HubConfig};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let hub = Hub::new(HubConfig::load("/home/me/.gabs")?);
//! let game = hub.game("voxel")?;
//! game.start().await?;
//! let block = game
//!     .call_tool("world/get_block", serde_json::json!({"x": 0, "y": 0, "z": 0}))
//!     .await?;
//! println!("{}", block.value);
//! hub.shutdown().await;
//! # Ok(())
//! # }
//! ```
#![deny(unsafe_code)]

mod calls;
pub mod config;
pub mod console;
mod error;
pub mod events;
mod foreign;
mod game;
pub mod launch;
mod link;
pub mod names;
mod procs;
mod reload;
pub mod runtime;
mod tie;

use std::collections::BTreeMap;
use std::time::Duration;

use gabp_types::ToolDescriptor;
use tokio::sync::broadcast;

pub use calls::{AttentionView, GameCall, MAX_EVENT_WAIT};
pub use config::{GameConfig, HubConfig, LaunchMode, MirrorTools, ToolNaming};
pub use error::{ConfigProblem, HubError};
pub use events::{EventLimits, Gap, LoggedEvent};
pub use game::{Game, GameSnapshot, GameStatus, StartOutcome};
pub use link::GATED_METHODS;
pub use reload::{LiveHub, RELOAD_POLL};

/// A change a front end passes on to its clients.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HubEvent {
    /// A game's status changed.
    StatusChanged {
        /// The game.
        game: String,
        /// Its new status.
        status: GameStatus,
    },
    /// A game's tools changed (it connected, disconnected, or announced a change).
    ToolsChanged {
        /// The game.
        game: String,
    },
    /// The configured games changed: `config.json` was read again ([`LiveHub`]).
    GamesChanged,
    /// How the hub's own tools are listed changed (`toolNormalization`, `stripOutputSchema`).
    ToolListChanged,
}

/// The supervisor of the configured games. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Hub {
    config: std::sync::Arc<HubConfig>,
    games: std::sync::Arc<BTreeMap<String, Game>>,
    changes: broadcast::Sender<HubEvent>,
    console: broadcast::Sender<console::ConsoleLine>,
    /// The state of `config.json` this snapshot was made from ([`LiveHub`]).
    config_state: reload::ConfigState,
}

/// A game tool found by name.
#[derive(Debug, Clone)]
pub struct FoundTool {
    /// The game.
    pub game: Game,
    /// The tool.
    pub tool: ToolDescriptor,
}

impl Hub {
    /// A hub for the games of `config`, none started.
    #[must_use]
    pub fn new(config: HubConfig) -> Hub {
        Hub::with_limits(config, EventLimits::default())
    }

    /// As [`Hub::new`], with the limits of each game's event log.
    #[must_use]
    pub fn with_limits(config: HubConfig, limits: EventLimits) -> Hub {
        let (changes, _) = broadcast::channel(256);
        let (console, _) = broadcast::channel(1024);
        let games = config
            .games
            .values()
            .map(|game| {
                (
                    game.id.clone(),
                    Game::new(
                        game.clone(),
                        config.dir.clone(),
                        config.startup,
                        limits,
                        changes.clone(),
                        console.clone(),
                    ),
                )
            })
            .collect();
        Hub {
            config: std::sync::Arc::new(config),
            games: std::sync::Arc::new(games),
            changes,
            console,
            config_state: reload::ConfigState::default(),
        }
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &HubConfig {
        &self.config
    }

    /// The games, by id.
    pub fn games(&self) -> impl Iterator<Item = &Game> {
        self.games.values()
    }

    /// The game `reference`: its id, or a launch target only one game has.
    ///
    /// # Errors
    ///
    /// [`HubError::GameNotFound`] (with the configured ids), [`HubError::AmbiguousGame`].
    pub fn game(&self, reference: &str) -> Result<&Game, HubError> {
        if let Some(game) = self.games.get(reference) {
            return Ok(game);
        }
        let matches: Vec<&Game> = self
            .games
            .values()
            .filter(|g| g.config().target == reference)
            .collect();
        match matches.as_slice() {
            [one] => Ok(one),
            [] => Err(HubError::GameNotFound {
                game: reference.to_owned(),
                candidates: self.games.keys().cloned().collect(),
            }),
            many => Err(HubError::AmbiguousGame {
                game: reference.to_owned(),
                matches: many.iter().map(|g| g.id().to_owned()).collect(),
            }),
        }
    }

    /// The game a call is for: `reference` when given, else the only connected game.
    ///
    /// # Errors
    ///
    /// As [`Hub::game`]; [`HubError::NoGameSelected`] when none is given and not exactly one is connected.
    pub fn game_or_connected(&self, reference: Option<&str>) -> Result<&Game, HubError> {
        if let Some(reference) = reference {
            return self.game(reference);
        }
        let connected: Vec<&Game> = self
            .games
            .values()
            .filter(|g| g.status() == GameStatus::Connected)
            .collect();
        match connected.as_slice() {
            [one] => Ok(one),
            [] => Err(HubError::NoGameSelected(
                "no game is connected via GABP; use games_status, games_start or games_connect first"
                    .to_owned(),
            )),
            many => Err(HubError::NoGameSelected(format!(
                "several games are connected via GABP ({}); give gameId to choose one",
                many.iter().map(|g| g.id()).collect::<Vec<_>>().join(", ")
            ))),
        }
    }

    /// The tool `name` names: a mirrored name (`voxel_world_get_block`), or with `game` given, the tool's
    /// GABP name or one of its aliases (`world/get_block`, `world.get_block`, `voxel/world/get_block`).
    ///
    /// # Errors
    ///
    /// [`HubError::ToolNotFound`], [`HubError::AmbiguousTool`], and as [`Hub::game`].
    pub fn find_tool(&self, name: &str, game: Option<&str>) -> Result<FoundTool, HubError> {
        let max_name_len = self.config.tool_naming.max_name_len;
        let candidates: Vec<&Game> = match game {
            Some(reference) => vec![self.game(reference)?],
            None => self.games.values().collect(),
        };
        let mut found: Vec<FoundTool> = Vec::new();
        for game in candidates {
            for tool in game.cached_tools().iter() {
                let tool_name = tool.name.as_str();
                let hit = self.mirrored_name(game.id(), tool_name) == name
                    // The name at the default limit, as agents may have learnt it.
                    || (max_name_len != names::MAX_NAME
                        && names::mirrored_name(game.id(), tool_name, names::MAX_NAME) == name)
                    || names::aliases(game.id(), tool_name)
                        .iter()
                        .any(|alias| alias == name);
                if hit {
                    found.push(FoundTool {
                        game: game.clone(),
                        tool: tool.clone(),
                    });
                    break;
                }
            }
        }
        match found.len() {
            1 => Ok(found.remove(0)),
            0 => Err(self
                .exited_owner(name, game)
                .unwrap_or(HubError::ToolNotFound {
                    tool: name.to_owned(),
                    game: game.map(str::to_owned),
                })),
            _ => Err(HubError::AmbiguousTool {
                tool: name.to_owned(),
                games: found.iter().map(|f| f.game.id().to_owned()).collect(),
            }),
        }
    }

    /// When `name` is a tool of a game that has exited (the game named, or the one whose mirrored names
    /// `name` starts with), the error that says so.
    fn exited_owner(&self, name: &str, game: Option<&str>) -> Option<HubError> {
        let owner = match game {
            Some(reference) => self.game(reference).ok()?,
            // The longest id that fits: `voxel_2_demo_echo` is voxel_2's, not voxel's.
            None => self
                .games
                .values()
                .filter(|g| {
                    let prefix = names::mirrored_name(g.id(), "x", names::MAX_NAME);
                    name.starts_with(prefix.trim_end_matches('x'))
                })
                .max_by_key(|g| g.id().len())?,
        };
        let snapshot = owner.snapshot();
        (snapshot.status == GameStatus::Exited).then(|| HubError::GameExited {
            tool: name.to_owned(),
            game: owner.id().to_owned(),
            exit: snapshot
                .last_exit
                .unwrap_or_else(|| "how is not known".to_owned()),
        })
    }

    /// The mirrored name of `tool` of `game_id`, within the configured `toolNormalization.maxToolNameLength`.
    #[must_use]
    pub fn mirrored_name(&self, game_id: &str, tool: &str) -> String {
        names::mirrored_name(game_id, tool, self.config.tool_naming.max_name_len)
    }

    /// Every connected game's tools with their mirrored names, in game and tool order.
    #[must_use]
    pub fn mirrored_tools(&self) -> Vec<(String, FoundTool)> {
        let mut out = Vec::new();
        for game in self.games.values() {
            // From the configuration in effect: a running game keeps the entry it was started with.
            let listed = self
                .config
                .games
                .get(game.id())
                .map_or(&game.config().mirror_tools, |c| &c.mirror_tools);
            for tool in game.cached_tools().iter() {
                if !listed.lists(tool.name.as_str()) {
                    continue;
                }
                out.push((
                    self.mirrored_name(game.id(), tool.name.as_str()),
                    FoundTool {
                        game: game.clone(),
                        tool: tool.clone(),
                    },
                ));
            }
        }
        out
    }

    /// The changes of every game, as they happen.
    #[must_use]
    pub fn changes(&self) -> broadcast::Receiver<HubEvent> {
        self.changes.subscribe()
    }

    /// Takes over the games an earlier session of the hub started and left running (their `runtime.json`),
    /// and connects to them, so that they are shown, stopped and attached to rather than started twice. A
    /// record of a game that ended is dropped. Call once when the hub starts.
    pub async fn reconcile(&self) {
        futures::future::join_all(self.games.values().map(Game::reconcile)).await;
    }

    /// Every game's console lines (what the processes the hub started print), as they are read. A receiver
    /// that falls behind is told how many it missed; [`Game::console_tail`] still has them.
    #[must_use]
    pub fn console_lines(&self) -> broadcast::Receiver<console::ConsoleLine> {
        self.console.subscribe()
    }

    /// Stops every game this hub started: SIGTERM to each process group, SIGKILL to what is left after
    /// 3 s. Returns when all have ended.
    pub async fn shutdown(&self) {
        let stops = self.games.values().map(|game| async move {
            let _ = game.stop_inner(Duration::from_secs(3), false).await;
        });
        futures::future::join_all(stops).await;
    }
}
