//! `config.json` read again when it changes: a [`LiveHub`] holds the [`Hub`] made from the last valid
//! configuration and swaps in a new one when the file changes (docs/mcp.md §Configuration reload).
//!
//! - While the file is invalid the last valid configuration stays in effect, and [`Hub::config_problem`] says
//!   what is wrong; when no valid one was ever read, [`Hub::check_config`] is [`HubError::ConfigInvalid`].
//! - A game whose entry is unchanged keeps running untouched. A running game whose entry changed or was removed
//!   keeps running as it was started until it stops; then its new entry takes effect (or it goes away). Its
//!   `mirrorTools` take effect at once.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use tokio::time::Instant;

use crate::config::{self, CONFIG_FILE};
use crate::{ConfigProblem, EventLimits, Game, Hub, HubConfig, HubError, HubEvent};

/// How often the file is looked at.
pub const RELOAD_POLL: Duration = Duration::from_millis(500);

/// How long a game dropped from the configuration is still watched: a call that looked it up just before may
/// start it, and then it is taken back.
const RETIRED_GRACE: Duration = Duration::from_secs(60);

/// The most dropped games watched.
const MAX_RETIRED: usize = 256;

/// What a [`Hub`] snapshot knows of `config.json`.
#[derive(Debug, Clone)]
pub(crate) struct ConfigState {
    /// What is wrong with the file now.
    problem: Option<Arc<ConfigProblem>>,
    /// Whether the configuration in effect was read from a valid file (or given).
    valid: bool,
}

impl Default for ConfigState {
    fn default() -> Self {
        ConfigState {
            problem: None,
            valid: true,
        }
    }
}

impl Hub {
    /// What is wrong with `config.json` now, when it is invalid. The last valid configuration stays in effect
    /// meanwhile (see [`Hub::check_config`]).
    #[must_use]
    pub fn config_problem(&self) -> Option<&ConfigProblem> {
        self.config_state.problem.as_deref()
    }

    /// Whether the games are known.
    ///
    /// # Errors
    ///
    /// [`HubError::ConfigInvalid`] when `config.json` is invalid and no valid one has been read.
    pub fn check_config(&self) -> Result<(), HubError> {
        match &self.config_state.problem {
            Some(problem) if !self.config_state.valid => {
                Err(HubError::ConfigInvalid(ConfigProblem::clone(problem)))
            }
            _ => Ok(()),
        }
    }
}

/// A [`Hub`] that follows `DIR/config.json`: [`LiveHub::current`] is the hub of the configuration in effect.
/// Cheap to clone; clones share the hub.
#[derive(Clone, Debug)]
pub struct LiveHub {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The directory watched (absolute); `None` for a hub given as is.
    dir: Option<PathBuf>,
    limits: EventLimits,
    current: RwLock<Hub>,
    watch: Mutex<Watch>,
    stopped: AtomicBool,
}

#[derive(Debug, Default)]
struct Watch {
    /// A hash of the bytes last read (`Some(None)`: there was no file).
    seen: Option<Option<u64>>,
    /// The last valid configuration.
    good: Option<HubConfig>,
    problem: Option<Arc<ConfigProblem>>,
    /// Games kept with an entry that is not (or no longer) theirs, until they stop.
    pending: bool,
    /// Games dropped from the configuration, and when.
    retired: Vec<(Game, Instant)>,
}

impl From<Hub> for LiveHub {
    /// A hub that stays as it is (nothing is read again).
    fn from(hub: Hub) -> LiveHub {
        LiveHub {
            inner: Arc::new(Inner {
                dir: None,
                limits: EventLimits::default(),
                current: RwLock::new(hub),
                watch: Mutex::new(Watch::default()),
                stopped: AtomicBool::new(false),
            }),
        }
    }
}

impl LiveHub {
    /// Reads `DIR/config.json` now. An invalid file does not fail: the hub has no games and every call that
    /// needs them answers [`HubError::ConfigInvalid`] until the file is fixed. Call [`LiveHub::watch`] to
    /// follow the file.
    #[must_use]
    pub fn load(dir: impl AsRef<Path>) -> LiveHub {
        LiveHub::with_limits(dir, EventLimits::default())
    }

    /// As [`LiveHub::load`], with the limits of each game's event log.
    #[must_use]
    pub fn with_limits(dir: impl AsRef<Path>, limits: EventLimits) -> LiveHub {
        let dir = std::path::absolute(dir.as_ref()).unwrap_or_else(|_| dir.as_ref().to_owned());
        let empty = HubConfig::from_file_bytes(&dir, None).unwrap_or_default();
        let mut hub = Hub::with_limits(empty, limits);
        hub.config_state.valid = false;
        let live = LiveHub {
            inner: Arc::new(Inner {
                dir: Some(dir),
                limits,
                current: RwLock::new(hub),
                watch: Mutex::new(Watch::default()),
                stopped: AtomicBool::new(false),
            }),
        };
        live.reload();
        live
    }

    /// The hub of the configuration in effect now.
    #[must_use]
    pub fn current(&self) -> Hub {
        self.inner.current.read().clone()
    }

    /// Looks at the file every [`RELOAD_POLL`] from a task of the current Tokio runtime, until
    /// [`LiveHub::shutdown`] or the last clone is dropped. Does nothing outside a runtime.
    pub fn watch(&self) {
        if self.inner.dir.is_none() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(RELOAD_POLL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else { return };
                if inner.stopped.load(Ordering::Acquire) {
                    return;
                }
                let live = LiveHub { inner };
                if tokio::task::spawn_blocking(move || live.reload())
                    .await
                    .is_err()
                {
                    return;
                }
            }
        });
    }

    /// Reads the file again now, and applies it when it changed (or a game kept with an old entry stopped).
    /// Returns whether the hub changed.
    pub fn reload(&self) -> bool {
        let Some(dir) = &self.inner.dir else {
            return false;
        };
        let mut watch = self.inner.watch.lock();
        let path = dir.join(CONFIG_FILE);
        let read = config::read_file(&path);
        let seen = read.as_ref().ok().map(|bytes| bytes.as_deref().map(hash));
        let file_changed = seen.is_none() || watch.seen != seen;
        if !file_changed && !watch.pending && watch.retired.is_empty() {
            return false;
        }
        if file_changed {
            watch.seen = seen;
            let parsed = read.and_then(|bytes| HubConfig::from_file_bytes(dir, bytes.as_deref()));
            match parsed {
                Ok(config) => {
                    watch.good = Some(config);
                    watch.problem = None;
                }
                Err(e) => {
                    let problem = ConfigProblem::from_error(&e).map(Arc::new);
                    if problem != watch.problem {
                        let meanwhile = if watch.good.is_some() {
                            "the last valid configuration stays in effect"
                        } else {
                            "no game is available until then"
                        };
                        tracing::warn!(
                            "{}; {meanwhile}",
                            problem
                                .as_deref()
                                .map_or(e.to_string(), ToString::to_string)
                        );
                    }
                    watch.problem = problem;
                }
            }
        }
        self.apply(&mut watch)
    }

    /// Makes the hub of the last valid configuration, keeping every game whose entry is unchanged and every
    /// running one.
    fn apply(&self, watch: &mut Watch) -> bool {
        let previous = self.current();
        let valid = watch.good.is_some();
        let config = watch
            .good
            .clone()
            .unwrap_or_else(|| (*previous.config).clone());
        let mut pending = false;
        let mut games = BTreeMap::new();
        for (id, entry) in &config.games {
            let current = previous.games.get(id);
            let fits = |g: &Game| g.config() == entry && g.startup() == config.startup;
            let live = current
                .filter(|g| g.status().is_live())
                .or_else(|| watch.live_retired(id));
            let game = match (live, current) {
                (Some(g), _) => g.clone(),
                (None, Some(g)) if fits(g) => g.clone(),
                _ => Game::new(
                    entry.clone(),
                    config.dir.clone(),
                    config.startup,
                    self.inner.limits,
                    previous.changes.clone(),
                    previous.console.clone(),
                ),
            };
            pending |= !fits(&game);
            games.insert(id.clone(), game);
        }
        // Running games whose entry was removed stay until they stop.
        for (id, game) in previous.games.iter() {
            if !games.contains_key(id) && game.status().is_live() {
                pending = true;
                games.insert(id.clone(), game.clone());
            }
        }
        for (game, _) in &watch.retired {
            if !games.contains_key(game.id()) && game.status().is_live() {
                pending = true;
                games.insert(game.id().to_owned(), game.clone());
            }
        }
        watch.retire(previous.games.values(), &games);
        watch.pending = pending;

        let state = ConfigState {
            problem: watch.problem.clone(),
            valid,
        };
        let same_games = games.len() == previous.games.len()
            && games
                .iter()
                .zip(previous.games.iter())
                .all(|((a, x), (b, y))| a == b && x.is_same(y));
        let same_state = state.valid == previous.config_state.valid
            && state.problem == previous.config_state.problem;
        if same_games && same_state && config == *previous.config {
            return false;
        }
        let next = Hub {
            config: Arc::new(config),
            games: Arc::new(games),
            changes: previous.changes.clone(),
            console: previous.console.clone(),
            config_state: state,
        };
        let listed_before = mirrored_by_game(&previous);
        let listed_after = mirrored_by_game(&next);
        let next_listing = (next.config.tool_naming, next.config.strip_output_schema);
        *self.inner.current.write() = next;
        if !same_games {
            let _ = previous.changes.send(HubEvent::GamesChanged);
        }
        if next_listing
            != (
                previous.config.tool_naming,
                previous.config.strip_output_schema,
            )
        {
            let _ = previous.changes.send(HubEvent::ToolListChanged);
        }
        let ids: std::collections::BTreeSet<&String> =
            listed_before.keys().chain(listed_after.keys()).collect();
        for id in ids {
            if listed_before.get(id) != listed_after.get(id) {
                let _ = previous
                    .changes
                    .send(HubEvent::ToolsChanged { game: id.clone() });
            }
        }
        true
    }

    /// Stops following the file, then stops every game the hub started (those dropped from the configuration
    /// too), as [`Hub::shutdown`].
    pub async fn shutdown(&self) {
        self.inner.stopped.store(true, Ordering::Release);
        let retired: Vec<Game> = self
            .inner
            .watch
            .lock()
            .retired
            .iter()
            .map(|(g, _)| g.clone())
            .collect();
        let stops = retired.into_iter().map(|game| async move {
            let _ = game.stop_inner(Duration::from_secs(3), false).await;
        });
        futures::future::join(self.current().shutdown(), futures::future::join_all(stops)).await;
    }
}

impl Watch {
    fn live_retired(&self, id: &str) -> Option<&Game> {
        self.retired
            .iter()
            .map(|(g, _)| g)
            .find(|g| g.id() == id && g.status().is_live())
    }

    /// Keeps the games of `before` not in `now` for [`RETIRED_GRACE`], and forgets older ones that do not run.
    fn retire<'a>(&mut self, before: impl Iterator<Item = &'a Game>, now: &BTreeMap<String, Game>) {
        let at = Instant::now();
        let in_use = |g: &Game| now.get(g.id()).is_some_and(|n| n.is_same(g));
        self.retired.retain(|(g, since)| {
            !in_use(g) && (g.status().is_live() || at.duration_since(*since) < RETIRED_GRACE)
        });
        for game in before {
            if !in_use(game) && !self.retired.iter().any(|(g, _)| g.is_same(game)) {
                self.retired.push((game.clone(), at));
            }
        }
        if self.retired.len() > MAX_RETIRED {
            let excess = self.retired.len() - MAX_RETIRED;
            self.retired.drain(..excess);
        }
    }
}

impl Game {
    /// Whether `other` is this very game (not a game made anew from a changed entry with the same id).
    #[must_use]
    pub fn is_same(&self, other: &Game) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

/// The mirrored tool names of each game that has any.
fn mirrored_by_game(hub: &Hub) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, found) in hub.mirrored_tools() {
        out.entry(found.game.id().to_owned())
            .or_default()
            .push(name);
    }
    out
}

fn hash(bytes: &[u8]) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests;
