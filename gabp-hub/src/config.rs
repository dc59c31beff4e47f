//! The hub's configuration: `config.json` in a configuration directory, in the format GABS 1.1 reads, so that a
//! GABS user's games work unchanged.
//!
//! ```json
//! {
//!   "version": "1.0",
//!   "games": {
//!     "voxel": {
//!       "id": "voxel", "name": "Voxel demo", "launchMode": "DirectPath",
//!       "target": "/usr/local/bin/gabp", "args": ["mod"], "workingDir": "/tmp",
//!       "stopProcessName": "gabp", "env": {"RUST_LOG": "info"}
//!     }
//!   },
//!   "timeouts": {
//!     "startup": { "processStartSeconds": 10, "gabpConnectSeconds": 60 },
//!     "toolCallSeconds": 30
//!   }
//! }
//! ```
//!
//! `timeouts.toolCallSeconds` (our addition beside GABS's `timeouts.startup`) is how long a game tool call may
//! take before the hub gives up on it (default 30 s): a number of seconds greater than 0 and at most 3600,
//! fractions allowed. An MCP call can ask for another limit with `_meta` `{"gabp/timeoutSeconds": N}` (the same
//! range), see docs/mcp.md §Timeouts.
//!
//! `gabp mcp` reads the file again when it changes ([`crate::LiveHub`]); while it is invalid, the last valid one
//! stays in effect.
//!
//! Reading is strict where a mistake would launch the wrong thing (types, ids, `env` names) and liberal where
//! GABS has fields the hub does not use (`portRanges`, `timeouts.session`): those are accepted and ignored.
//! `toolNormalization` and `stripOutputSchema` shape the MCP tool list as in GABS ([`ToolNaming`]). Launch
//! modes that go through a store launcher (`SteamAppId`, `SteamManaged`, `EpicAppId`) need `stopProcessName`,
//! by which the hub finds the game the launcher started. Launch profiles are read but refused when the game is
//! started, with an error that says so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde_json::{Map, Value};

use crate::HubError;

mod naming;

pub use naming::ToolNaming;

/// The file name of the configuration in its directory.
pub const CONFIG_FILE: &str = "config.json";

/// The largest `config.json` read, in bytes.
pub const MAX_CONFIG_BYTES: u64 = 4 << 20;

/// How a game is launched (GABS's `launchMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LaunchMode {
    /// `target` is an executable, run with `args` (no shell).
    DirectPath,
    /// As `DirectPath`: `target` is one executable path, `args` its arguments.
    CustomCommand,
    /// A Steam game started through Steam's launcher (`steam://rungameid/<target>`).
    SteamAppId,
    /// A Steam game; GABS runs its executable found in the Steam library, the hub starts it through Steam's
    /// launcher as `SteamAppId`, with `SteamAppId` and `SteamGameId` in the launcher's environment.
    SteamManaged,
    /// An Epic Games Store game started through its launcher
    /// (`com.epicgames.launcher://apps/<target>?action=launch&silent=true`).
    EpicAppId,
}

impl LaunchMode {
    /// The name in the configuration.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            LaunchMode::DirectPath => "DirectPath",
            LaunchMode::CustomCommand => "CustomCommand",
            LaunchMode::SteamAppId => "SteamAppId",
            LaunchMode::SteamManaged => "SteamManaged",
            LaunchMode::EpicAppId => "EpicAppId",
        }
    }

    /// Whether the game is started through a store launcher that exits at once, so that the hub finds the
    /// game afterwards by its `stopProcessName`.
    #[must_use]
    pub fn is_store(self) -> bool {
        matches!(
            self,
            LaunchMode::SteamAppId | LaunchMode::SteamManaged | LaunchMode::EpicAppId
        )
    }
}

/// One configured game.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GameConfig {
    /// The game id (the key in `games`).
    pub id: String,
    /// Display name (the id when absent).
    pub name: String,
    /// What the game is.
    pub description: Option<String>,
    /// How it is launched.
    pub launch_mode: LaunchMode,
    /// The executable (or store app id).
    pub target: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Where it runs (the hub's working directory when absent).
    pub working_dir: Option<PathBuf>,
    /// The name of the game's process: how the hub finds and stops a game a store launcher started.
    pub stop_process_name: Option<String>,
    /// GABS's opaque `gabpMode`; kept for display.
    pub gabp_mode: Option<String>,
    /// Extra environment for the game.
    pub env: BTreeMap<String, String>,
    /// Environment variables removed for the game.
    pub unset_env: Vec<String>,
    /// Set when the entry uses launch profiles, launch inputs or lifecycle hooks, which the hub does not
    /// support: starting the game is refused with this explanation.
    pub unsupported: Option<String>,
    /// Which of its tools `--mirror-tools` lists (`mirrorTools`, our addition to GABS's format).
    pub mirror_tools: MirrorTools,
}

/// The tools of a game that are listed as MCP tools of their own: those matching one of the glob patterns
/// of `mirrorTools` (such as `world/*`; `*` does not cross a `/`), or all when it is absent. Tools not listed
/// can still be called.
#[derive(Debug, Clone, Default)]
pub struct MirrorTools {
    patterns: Vec<String>,
    /// `None`: every tool.
    set: Option<GlobSet>,
}

impl PartialEq for MirrorTools {
    fn eq(&self, other: &Self) -> bool {
        self.patterns == other.patterns && self.set.is_some() == other.set.is_some()
    }
}

impl Eq for MirrorTools {}

impl MirrorTools {
    /// The longest pattern accepted, in bytes.
    pub const MAX_PATTERN_BYTES: usize = 256;

    /// The patterns as configured (empty when every tool is listed, or when `mirrorTools` is `[]`).
    #[must_use]
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// Whether the tool named `tool` is listed.
    #[must_use]
    pub fn lists(&self, tool: &str) -> bool {
        self.set.as_ref().is_none_or(|set| set.is_match(tool))
    }
}

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct HubConfig {
    /// The directory the configuration was read from; each game's `bridge.json` goes in `DIR/<id>/`.
    pub dir: PathBuf,
    /// `version`.
    pub version: String,
    /// The games, by id.
    pub games: BTreeMap<String, GameConfig>,
    /// `timeouts.startup`.
    pub startup: StartupTimeouts,
    /// `apiKey`: the bearer key for MCP over HTTP, when the environment gives none.
    pub api_key: Option<String>,
    /// `toolNormalization`.
    pub tool_naming: ToolNaming,
    /// `stripOutputSchema`: leave `outputSchema` out of the MCP tool list, for clients that reject it.
    pub strip_output_schema: bool,
    /// `timeouts.toolCallSeconds`; see [`HubConfig::tool_call_timeout`].
    pub tool_call: Option<Duration>,
}

impl HubConfig {
    /// How long a game tool call may take: `timeouts.toolCallSeconds`, or [`DEFAULT_TOOL_CALL_TIMEOUT`].
    #[must_use]
    pub fn tool_call_timeout(&self) -> Duration {
        self.tool_call.unwrap_or(DEFAULT_TOOL_CALL_TIMEOUT)
    }

    /// Reads `DIR/config.json`. A missing file is an empty configuration (as GABS has it); a file that is there
    /// must be valid.
    ///
    /// # Errors
    ///
    /// [`HubError::ConfigRead`], [`HubError::ConfigJson`] or [`HubError::ConfigField`], naming the file (and
    /// the field and what was expected).
    pub fn load(dir: impl AsRef<Path>) -> Result<HubConfig, HubError> {
        let dir = dir.as_ref();
        let bytes = read_file(&dir.join(CONFIG_FILE))?;
        HubConfig::from_file_bytes(dir, bytes.as_deref())
    }

    /// As [`HubConfig::load`], from the bytes of `DIR/config.json` (`None`: no such file).
    pub(crate) fn from_file_bytes(dir: &Path, bytes: Option<&[u8]>) -> Result<HubConfig, HubError> {
        let Some(bytes) = bytes else {
            return Ok(HubConfig {
                dir: dir.to_owned(),
                version: "1.0".to_owned(),
                ..HubConfig::default()
            });
        };
        let path = dir.join(CONFIG_FILE);
        let mut config = HubConfig::from_json_slice(bytes).map_err(|e| e.in_file(&path))?;
        config.dir = dir.to_owned();
        Ok(config)
    }

    /// Parses the text of a `config.json` (the file name in errors is empty).
    ///
    /// # Errors
    ///
    /// As [`HubConfig::load`].
    pub fn from_json_slice(bytes: &[u8]) -> Result<HubConfig, HubError> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| HubError::ConfigJson {
            path: PathBuf::new(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        let top = object(&value, "")?;
        let version = optional_str(top, "", "version")?
            .unwrap_or("1.0")
            .to_owned();
        let mut games = BTreeMap::new();
        if let Some(entries) = top.get("games").filter(|v| !v.is_null()) {
            for (key, entry) in object(entries, "/games")? {
                let game = read_game(key, entry)?;
                games.insert(key.clone(), game);
            }
        }
        let (startup, tool_call) = read_timeouts(top)?;
        let api_key = optional_str(top, "", "apiKey")?
            .filter(|k| !k.is_empty())
            .map(str::to_owned);
        Ok(HubConfig {
            dir: PathBuf::new(),
            version,
            games,
            startup,
            api_key,
            tool_naming: naming::read_tool_naming(top)?,
            strip_output_schema: naming::read_strip_output_schema(top)?,
            tool_call,
        })
    }
}

/// The bytes of `path` (`None` when there is no such file, an empty configuration as GABS has it).
pub(crate) fn read_file(path: &Path) -> Result<Option<Vec<u8>>, HubError> {
    match read_bounded(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(HubError::ConfigRead {
            path: path.to_owned(),
            source,
        }),
    }
}

/// The file's bytes, refused when larger than [`MAX_CONFIG_BYTES`].
fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than the {} MiB accepted",
            MAX_CONFIG_BYTES >> 20
        )));
    }
    Ok(bytes)
}

impl HubError {
    fn in_file(self, file: &Path) -> HubError {
        match self {
            HubError::ConfigJson {
                line,
                column,
                message,
                ..
            } => HubError::ConfigJson {
                path: file.to_owned(),
                line,
                column,
                message,
            },
            HubError::ConfigField {
                pointer, expected, ..
            } => HubError::ConfigField {
                path: file.to_owned(),
                pointer,
                expected,
            },
            other => other,
        }
    }
}

fn field(pointer: impl Into<String>, expected: impl Into<String>) -> HubError {
    HubError::ConfigField {
        path: PathBuf::new(),
        pointer: pointer.into(),
        expected: expected.into(),
    }
}

/// A JSON pointer segment (RFC 6901).
fn segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn object<'a>(value: &'a Value, pointer: &str) -> Result<&'a Map<String, Value>, HubError> {
    value.as_object().ok_or_else(|| {
        field(
            if pointer.is_empty() { "/" } else { pointer },
            "expected a JSON object",
        )
    })
}

fn optional_str<'a>(
    obj: &'a Map<String, Value>,
    at: &str,
    key: &str,
) -> Result<Option<&'a str>, HubError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(field(format!("{at}/{key}"), "expected a string")),
    }
}

fn string_list(obj: &Map<String, Value>, at: &str, key: &str) -> Result<Vec<String>, HubError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| field(format!("{at}/{key}/{i}"), "expected a string"))
            })
            .collect(),
        Some(_) => Err(field(format!("{at}/{key}"), "expected an array of strings")),
    }
}

/// A game id must work as a directory name and in mirrored tool names.
fn check_id(key: &str, at: &str) -> Result<(), HubError> {
    let ok = !key.is_empty()
        && key.len() <= 64
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !key.starts_with('.');
    if ok {
        Ok(())
    } else {
        Err(field(
            at,
            "a game id of 1 to 64 characters: letters, digits, '_', '-' or '.', not starting with '.'",
        ))
    }
}

fn env_name_ok(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn read_game(key: &str, entry: &Value) -> Result<GameConfig, HubError> {
    let at = format!("/games/{}", segment(key));
    check_id(key, &at)?;
    let obj = object(entry, &at)?;
    if let Some(id) = optional_str(obj, &at, "id")? {
        if id != key {
            return Err(field(
                format!("{at}/id"),
                format!("the entry's key \"{key}\" (the id must match the key)"),
            ));
        }
    }
    let launch_mode = match optional_str(obj, &at, "launchMode")? {
        None | Some("") | Some("DirectPath") => LaunchMode::DirectPath,
        Some("CustomCommand") => LaunchMode::CustomCommand,
        Some("SteamAppId") => LaunchMode::SteamAppId,
        Some("SteamManaged") => LaunchMode::SteamManaged,
        Some("EpicAppId") => LaunchMode::EpicAppId,
        Some(_) => {
            return Err(field(
                format!("{at}/launchMode"),
                "one of DirectPath, CustomCommand, SteamAppId, SteamManaged, EpicAppId",
            ))
        }
    };
    let target = match optional_str(obj, &at, "target")? {
        Some(t) if !t.trim().is_empty() => t.to_owned(),
        _ => {
            return Err(field(
                format!("{at}/target"),
                "a non-empty string: the game's executable",
            ))
        }
    };
    let stop_process_name = optional_str(obj, &at, "stopProcessName")?
        .filter(|n| !n.trim().is_empty())
        .map(str::to_owned);
    if launch_mode.is_store() {
        check_store(&at, launch_mode, &target, stop_process_name.as_deref())?;
    }
    let mut env = BTreeMap::new();
    match obj.get("env") {
        None | Some(Value::Null) => {}
        Some(Value::Object(vars)) => {
            for (name, value) in vars {
                let pointer = format!("{at}/env/{}", segment(name));
                let upper = name.to_ascii_uppercase();
                if !env_name_ok(name) || upper.starts_with("GABS_") || upper.starts_with("GABP_") {
                    return Err(field(
                        pointer,
                        "an environment variable name ([A-Za-z_][A-Za-z0-9_]*) not starting with GABS_ or GABP_ (the hub sets those)",
                    ));
                }
                let value = value
                    .as_str()
                    .ok_or_else(|| field(pointer, "expected a string"))?;
                env.insert(name.clone(), value.to_owned());
            }
        }
        Some(_) => return Err(field(format!("{at}/env"), "expected an object of strings")),
    }
    let unsupported = ["profiles", "launchInputs", "lifecycle", "defaultProfile"]
        .into_iter()
        .find(|k| obj.get(*k).is_some_and(|v| !v.is_null()))
        .map(|k| {
            format!("{at}/{k}: launch profiles, launch inputs and lifecycle hooks are not supported by gabp mcp; remove `{k}` to start this game with its own target and args")
        });
    Ok(GameConfig {
        id: key.to_owned(),
        name: optional_str(obj, &at, "name")?.unwrap_or(key).to_owned(),
        description: optional_str(obj, &at, "description")?.map(str::to_owned),
        launch_mode,
        target,
        args: string_list(obj, &at, "args")?,
        working_dir: optional_str(obj, &at, "workingDir")?
            .filter(|d| !d.is_empty())
            .map(PathBuf::from),
        stop_process_name,
        gabp_mode: optional_str(obj, &at, "gabpMode")?.map(str::to_owned),
        env,
        unset_env: string_list(obj, &at, "unsetEnv")?,
        unsupported,
        mirror_tools: mirror_tools(obj, &at)?,
    })
}

/// A game a store launcher starts: its app id goes into a URL, and the hub finds the game by its process name.
fn check_store(
    at: &str,
    mode: LaunchMode,
    target: &str,
    stop_process_name: Option<&str>,
) -> Result<(), HubError> {
    let id_ok = target.len() <= 256
        && target
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':' | '%'));
    if !id_ok {
        return Err(field(
            format!("{at}/target"),
            format!(
                "the store's app id for {}: letters, digits and . _ - : % only, at most 256",
                mode.as_str()
            ),
        ));
    }
    if stop_process_name.is_none() {
        return Err(field(
            format!("{at}/stopProcessName"),
            format!("the name of the game's process (such as the executable's file name): a {} game is started through a store launcher that exits at once, and the hub finds and stops the game by this name", mode.as_str()),
        ));
    }
    Ok(())
}

fn mirror_tools(obj: &Map<String, Value>, at: &str) -> Result<MirrorTools, HubError> {
    if obj.get("mirrorTools").is_none_or(Value::is_null) {
        return Ok(MirrorTools::default());
    }
    let patterns = string_list(obj, at, "mirrorTools")?;
    let mut set = GlobSetBuilder::new();
    for (i, pattern) in patterns.iter().enumerate() {
        let expected = |why: &str| {
            field(
                format!("{at}/mirrorTools/{i}"),
                format!("a glob pattern over the game's tool names, such as world/* ({why})"),
            )
        };
        if pattern.len() > MirrorTools::MAX_PATTERN_BYTES {
            return Err(expected(&format!(
                "at most {} bytes",
                MirrorTools::MAX_PATTERN_BYTES
            )));
        }
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| expected(&e.kind().to_string()))?;
        set.add(glob);
    }
    let set = set
        .build()
        .map_err(|e| field(format!("{at}/mirrorTools"), e.kind().to_string()))?;
    Ok(MirrorTools {
        patterns,
        set: Some(set),
    })
}

#[cfg(test)]
mod tests;

mod timeouts;

use timeouts::read_timeouts;
pub use timeouts::{
    tool_call_seconds, StartupTimeouts, DEFAULT_TOOL_CALL_TIMEOUT, MAX_TOOL_CALL_SECONDS,
    TOOL_CALL_SECONDS_EXPECTED,
};
