//! The hub's one error type.

use std::path::PathBuf;

use gabp_attention::BlockedByAttention;
use gabp_session::Error as SessionError;

/// What went wrong in a hub operation. The message is one sentence a person (or an agent) can act on; it never
/// contains a token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HubError {
    /// No configured game has this id (or launch target).
    #[error("game '{game}' not found; configured games: {}", list(.candidates))]
    GameNotFound {
        /// What was asked for.
        game: String,
        /// The configured ids.
        candidates: Vec<String>,
    },
    /// A launch target that several games share.
    #[error("game reference '{game}' matches several configured games ({}); use the exact game id", list(.matches))]
    AmbiguousGame {
        /// What was asked for.
        game: String,
        /// The games it matches.
        matches: Vec<String>,
    },
    /// The call needs one game and none was named while several (or none) are connected.
    #[error("{0}")]
    NoGameSelected(String),
    /// The game is not connected over GABP.
    #[error("game '{game}' is not connected via GABP (status {status}); start it with games_start or attach with games_connect")]
    NotConnected {
        /// The game.
        game: String,
        /// Its status.
        status: &'static str,
    },
    /// The game has no tool of this name.
    #[error("tool '{tool}' not found{}; list the tools with games_tool_names", in_game(.game))]
    ToolNotFound {
        /// What was asked for.
        tool: String,
        /// The game searched, when one was named.
        game: Option<String>,
    },
    /// The tool's game has exited (crashed or quit by itself), so none of its tools can be called.
    #[error("tool '{tool}' is not available: game '{game}' exited ({exit}); start it again with games_start {{\"gameId\": \"{game}\"}}")]
    GameExited {
        /// What was asked for.
        tool: String,
        /// The game.
        game: String,
        /// How its process ended, such as `exit status: 3` or `signal: 9 (SIGKILL)`.
        exit: String,
    },
    /// A tool name that several games have.
    #[error("tool '{tool}' matches tools of several games ({}); give gameId or the mirrored name", list(.games))]
    AmbiguousTool {
        /// What was asked for.
        tool: String,
        /// The games that have it.
        games: Vec<String>,
    },
    /// There is no endpoint to attach to: no `bridge.json`, or one that cannot be read.
    #[error(
        "game '{game}' has no GABP endpoint to attach to ({reason}); start it with games_start"
    )]
    NotAttachable {
        /// The game.
        game: String,
        /// Why.
        reason: String,
    },
    /// The game cannot be started by the hub as configured.
    #[error("game '{game}' cannot be started: {reason}")]
    Unsupported {
        /// The game.
        game: String,
        /// Why, naming the configuration field.
        reason: String,
    },
    /// The game is already running (or starting).
    #[error("game '{game}' is already {status}; use games_status or games_connect instead of starting it again")]
    AlreadyRunning {
        /// The game.
        game: String,
        /// Its status.
        status: &'static str,
    },
    /// The game was not started by this hub, so it has no process to stop.
    #[error("game '{game}' is not running (no process started by this hub)")]
    NotRunning {
        /// The game.
        game: String,
    },
    /// The game's process could not be started, or its files written.
    #[error("cannot start game '{game}': {reason}")]
    Launch {
        /// The game.
        game: String,
        /// Why.
        reason: String,
    },
    /// The game exited before it could be reached over GABP.
    #[error("game '{game}' exited during start ({status}){}", tail(.output_tail))]
    ExitedDuringStart {
        /// The game.
        game: String,
        /// Its exit status, as text.
        status: String,
        /// The end of what it printed.
        output_tail: String,
    },
    /// The game was not reached over GABP in time.
    #[error("game '{game}' was not reachable over GABP within {waited_ms} ms: {reason}")]
    ConnectTimeout {
        /// The game.
        game: String,
        /// How long the hub tried.
        waited_ms: u64,
        /// The last failure.
        reason: String,
    },
    /// The call was refused because a blocking attention item is open. It was not executed.
    #[error(transparent)]
    Blocked(Box<BlockedByAttention>),
    /// A GABP request failed (an error answer of the game, a timeout, a lost connection).
    #[error("game '{game}': {source}")]
    Bridge {
        /// The game.
        game: String,
        /// What the bridge said.
        #[source]
        source: SessionError,
    },
    /// An event cursor this hub did not hand out.
    #[error("not an event cursor: expected GENERATION-POSITION as returned by a previous read")]
    BadCursor,
    /// An argument out of range or of the wrong shape.
    #[error("{0}")]
    InvalidArgument(String),
    /// The configuration file could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    ConfigRead {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The configuration file is not JSON.
    #[error("{}: not valid JSON at line {line}, column {column}: {message}", path.display())]
    ConfigJson {
        /// The file.
        path: PathBuf,
        /// Where.
        line: usize,
        /// Where.
        column: usize,
        /// What serde_json said.
        message: String,
    },
    /// A field of the configuration has the wrong type or value.
    #[error("{}: {pointer}: {expected}", path.display())]
    ConfigField {
        /// The file.
        path: PathBuf,
        /// The JSON pointer of the field (`/games/voxel/launchMode`).
        pointer: String,
        /// What was expected.
        expected: String,
    },
    /// The configuration the call needs is invalid, and no valid one has been read yet.
    #[error("{0}")]
    ConfigInvalid(ConfigProblem),
}

/// What is wrong with `config.json`: the file (an absolute path), the field and what was expected. Shown as
/// `config_invalid: FILE: field POINTER: expected ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigProblem {
    /// The file.
    pub path: PathBuf,
    /// The JSON pointer of the field (`/games/voxel/launchMode`), when one field is wrong.
    pub pointer: Option<String>,
    /// What was expected there (or what is wrong with the file as a whole).
    pub expected: String,
}

impl ConfigProblem {
    /// The problem `error` (an error of [`crate::HubConfig::load`]) describes; `None` for other errors.
    #[must_use]
    pub fn from_error(error: &HubError) -> Option<ConfigProblem> {
        let (path, pointer, expected) = match error {
            HubError::ConfigRead { path, source } => {
                (path, None, format!("a readable file ({source})"))
            }
            HubError::ConfigJson {
                path,
                line,
                column,
                message,
            } => (
                path,
                None,
                format!("valid JSON (line {line}, column {column}: {message})"),
            ),
            HubError::ConfigField {
                path,
                pointer,
                expected,
            } => (path, Some(pointer.clone()), expected.clone()),
            HubError::ConfigInvalid(problem) => return Some(problem.clone()),
            _ => return None,
        };
        let expected = if expected.starts_with("expected ") {
            expected
        } else {
            format!("expected {expected}")
        };
        Some(ConfigProblem {
            path: path.clone(),
            pointer,
            expected,
        })
    }
}

impl std::fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "config_invalid: {}: ", self.path.display())?;
        if let Some(pointer) = &self.pointer {
            write!(f, "field {pointer}: ")?;
        }
        write!(
            f,
            "{}; fix the file: it is read again when it changes",
            self.expected
        )
    }
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

fn in_game(game: &Option<String>) -> String {
    game.as_ref()
        .map(|g| format!(" in game '{g}'"))
        .unwrap_or_default()
}

fn tail(output: &str) -> String {
    if output.trim().is_empty() {
        String::new()
    } else {
        format!("; its output ends with:\n{output}")
    }
}

impl HubError {
    /// A stable code for machines: `game_not_found`, `blocked_by_attention`, `gabp_error`, ...
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            HubError::GameNotFound { .. } => "game_not_found",
            HubError::AmbiguousGame { .. } => "ambiguous_game_reference",
            HubError::NoGameSelected(_) => "game_required",
            HubError::NotConnected { .. } => "not_connected",
            HubError::ToolNotFound { .. } => "tool_not_found",
            HubError::GameExited { .. } => "game_exited",
            HubError::AmbiguousTool { .. } => "ambiguous_tool",
            HubError::NotAttachable { .. } => "endpoint_unavailable",
            HubError::Unsupported { .. } => "launch_mode_incompatible",
            HubError::AlreadyRunning { .. } => "already_running",
            HubError::NotRunning { .. } => "not_running",
            HubError::Launch { .. } => "spawn_failed",
            HubError::ExitedDuringStart { .. } => "exited_during_start",
            HubError::ConnectTimeout { .. } => "started_bridge_pending",
            HubError::Blocked(_) => "blocked_by_attention",
            HubError::Bridge { .. } => "gabp_error",
            HubError::BadCursor => "bad_cursor",
            HubError::InvalidArgument(_) => "invalid_argument",
            HubError::ConfigRead { .. } => "config_unreadable",
            HubError::ConfigJson { .. } | HubError::ConfigField { .. } => "invalid_config",
            HubError::ConfigInvalid(_) => "config_invalid",
        }
    }

    pub(crate) fn bridge(game: &str, source: SessionError) -> HubError {
        match BlockedByAttention::from_error(&source) {
            Some(blocked) => HubError::Blocked(Box::new(blocked.clone())),
            None => HubError::Bridge {
                game: game.to_owned(),
                source,
            },
        }
    }
}
