//! Launching a game the way GABS does, so that a game made for GABS runs unchanged: a fresh token and a free
//! loopback port, given in the environment (`GABP_SERVER_PORT`, `GABP_TOKEN`, `GABS_GAME_ID`,
//! `GABS_BRIDGE_PATH`) and in `DIR/<id>/bridge.json` (`{"port", "token", "gameId"}`); the game listens, the hub
//! connects (SPEC/1.0 transport.md §4).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use gabp_transport::Token;

use crate::config::{GameConfig, LaunchMode};
use crate::HubError;

/// The port variable.
pub const GABP_SERVER_PORT: &str = "GABP_SERVER_PORT";
/// The token variable.
pub const GABP_TOKEN: &str = "GABP_TOKEN";
/// The game id variable.
pub const GABS_GAME_ID: &str = "GABS_GAME_ID";
/// Where the game's `bridge.json` is (for diagnostics; the environment is authoritative).
pub const GABS_BRIDGE_PATH: &str = "GABS_BRIDGE_PATH";
/// Steam's app id variable, set for `SteamManaged` games (as GABS does).
pub const STEAM_APP_ID: &str = "SteamAppId";
/// Steam's game id variable, set for `SteamManaged` games (as GABS does).
pub const STEAM_GAME_ID: &str = "SteamGameId";
/// What the game prints goes here, in its directory (never to the hub's stdout, which may carry MCP).
pub const LAUNCH_LOG: &str = "launch.log";

/// Where and how a game is reached once started.
#[derive(Debug, Clone)]
pub struct LaunchPlan {
    /// The loopback port the game is told to listen on.
    pub port: u16,
    /// The token the game is told to expect.
    pub token: Token,
    /// The game's directory: `DIR/<id>`.
    pub game_dir: PathBuf,
}

impl LaunchPlan {
    /// A fresh token and a free loopback port for `game` under the configuration directory `dir`, with the
    /// game's directory created (0700) and its `bridge.json` written (0600, atomically).
    ///
    /// # Errors
    ///
    /// [`HubError::Launch`], naming what could not be done.
    pub fn prepare(dir: &Path, game: &GameConfig) -> Result<LaunchPlan, HubError> {
        let prepare = || {
            let token = Token::generate().map_err(|e| format!("cannot generate a token: {e}"))?;
            let port = free_port()?;
            let game_dir = dir.join(&game.id);
            create_private_dir(&game_dir)?;
            let plan = LaunchPlan {
                port,
                token,
                game_dir,
            };
            plan.write_bridge_json(&game.id)?;
            Ok(plan)
        };
        prepare().map_err(|reason| launch_failed(game, reason))
    }

    /// `DIR/<id>/bridge.json`.
    #[must_use]
    pub fn bridge_json(&self) -> PathBuf {
        self.game_dir.join("bridge.json")
    }

    fn write_bridge_json(&self, game_id: &str) -> Result<(), String> {
        let text = serde_json::to_string_pretty(&serde_json::json!({
            "port": self.port,
            "token": self.token.expose_secret(),
            "gameId": game_id,
        }))
        .map_err(|e| e.to_string())?;
        let path = self.bridge_json();
        let tmp = self.game_dir.join("bridge.json.tmp");
        let write = || -> std::io::Result<()> {
            let mut file = private_file(&tmp)?;
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&tmp, &path)
        };
        write().map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// The command that starts `game`: its target and args (no shell), or for a store launch mode the system's
    /// URL opener with the store's URL ([`store_url`]); its working directory, the hub's
    /// environment without any `GABS_*`/`GABP_*` variable, the game's `unsetEnv` and `env`, then the
    /// launch variables; stdin empty, stdout and stderr to `launch.log`.
    ///
    /// # Errors
    ///
    /// [`HubError::Launch`] when `launch.log` cannot be created.
    pub fn command(&self, game: &GameConfig) -> Result<Command, HubError> {
        let mut command = match store_url(game) {
            Some(url) => opener(&url),
            None => {
                let mut command = Command::new(&game.target);
                command.args(&game.args);
                command
            }
        };
        if let Some(dir) = &game.working_dir {
            command.current_dir(dir);
        }
        for (name, _) in std::env::vars_os() {
            let upper = name.to_string_lossy().to_ascii_uppercase();
            if upper.starts_with("GABS_") || upper.starts_with("GABP_") {
                command.env_remove(&name);
            }
        }
        for name in &game.unset_env {
            command.env_remove(name);
        }
        command.envs(&game.env);
        if game.launch_mode == LaunchMode::SteamManaged {
            command
                .env(STEAM_APP_ID, &game.target)
                .env(STEAM_GAME_ID, &game.target);
        }
        command
            .env(GABS_GAME_ID, &game.id)
            .env(GABS_BRIDGE_PATH, self.bridge_json())
            .env(GABP_SERVER_PORT, self.port.to_string())
            .env(GABP_TOKEN, self.token.expose_secret());
        let log_path = self.game_dir.join(LAUNCH_LOG);
        let cannot_create = |e: std::io::Error| {
            launch_failed(game, format!("cannot create {}: {e}", log_path.display()))
        };
        let log = private_file(&log_path).map_err(cannot_create)?;
        let log2 = log.try_clone().map_err(cannot_create)?;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log2));
        Ok(command)
    }

    /// `DIR/<id>/launch.log`.
    #[must_use]
    pub fn log_path(&self) -> PathBuf {
        self.game_dir.join(LAUNCH_LOG)
    }

    /// The last `max` bytes the game printed, as text.
    #[must_use]
    pub fn output_tail(&self, max: u64) -> String {
        let read = || -> std::io::Result<String> {
            let mut file = File::open(self.game_dir.join(LAUNCH_LOG))?;
            let len = file.metadata()?.len();
            file.seek(SeekFrom::Start(len.saturating_sub(max)))?;
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)?;
            Ok(String::from_utf8_lossy(&bytes).trim_end().to_owned())
        };
        read().unwrap_or_default()
    }
}

/// The URL a store launcher starts `game` by (`SteamAppId` and `SteamManaged`: `steam://rungameid/<target>`;
/// `EpicAppId`: `com.epicgames.launcher://apps/<target>?action=launch&silent=true`, as GABS has them), `None`
/// for a game the hub runs itself.
#[must_use]
pub fn store_url(game: &GameConfig) -> Option<String> {
    match game.launch_mode {
        LaunchMode::SteamAppId | LaunchMode::SteamManaged => {
            Some(format!("steam://rungameid/{}", game.target))
        }
        LaunchMode::EpicAppId => Some(format!(
            "com.epicgames.launcher://apps/{}?action=launch&silent=true",
            game.target
        )),
        _ => None,
    }
}

/// The system's URL opener with `url`: `xdg-open` (Linux and other Unix systems), `open` (macOS),
/// `cmd /c start "" "<url>"` (Windows; quoted, for the `&` in Epic's URL). The configuration allows only
/// URL-safe app ids ([`crate::config`]).
fn opener(url: &str) -> Command {
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt;
        let mut command = Command::new("cmd");
        command.raw_arg(format!("/c start \"\" \"{url}\""));
        command
    }
    #[cfg(not(windows))]
    {
        let program = if cfg!(target_os = "macos") {
            "open"
        } else {
            "xdg-open"
        };
        let mut command = Command::new(program);
        command.arg(url);
        command
    }
}

/// Why `game` cannot be started.
fn launch_failed(game: &GameConfig, reason: String) -> HubError {
    HubError::Launch {
        game: game.id.clone(),
        reason,
    }
}

/// A port on 127.0.0.1 that nothing listens on now. It is picked below the range the system gives outgoing
/// connections their ports from: a port from that range may be taken by a connection before the game listens on
/// it. (When none of 64 tried there is free, it is one the system picks.)
fn free_port() -> Result<u16, String> {
    let below = ephemeral_start().unwrap_or(32768);
    let low = below.saturating_sub(12_768).max(1024);
    let span = below.saturating_sub(low);
    if span > 0 {
        use std::hash::BuildHasher;
        let start = std::collections::hash_map::RandomState::new().hash_one(std::process::id());
        for step in 0..64u64 {
            let port = low + u16::try_from(start.wrapping_add(step) % u64::from(span)).unwrap_or(0);
            if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
                return Ok(port);
            }
        }
    }
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
        .map_err(|e| format!("cannot find a free loopback port: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free loopback port: {e}"))
}

/// The first port of the range the system gives outgoing connections (Linux), if it says.
fn ephemeral_start() -> Option<u16> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    range.split_whitespace().next()?.parse().ok()
}

fn create_private_dir(dir: &Path) -> Result<(), String> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder
        .create(dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

/// A new or truncated file only its owner can read (SPEC/1.0 security.md §5).
fn private_file(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HubConfig;

    fn game() -> GameConfig {
        let config = HubConfig::from_json_slice(
            br#"{"games": {"g": {"target": "sh", "args": ["-c", "env"], "env": {"EXTRA": "1"}, "unsetEnv": ["HOME"]}}}"#,
        )
        .unwrap();
        config.games["g"].clone()
    }

    #[test]
    fn a_launch_that_cannot_be_prepared_names_the_game_and_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("not-a-dir");
        std::fs::write(&file, b"").unwrap();
        let error = LaunchPlan::prepare(&file, &game()).unwrap_err();
        let HubError::Launch { game, reason } = &error else {
            panic!("{error:?}");
        };
        assert_eq!(game, "g");
        assert!(
            reason.contains("cannot create") && reason.contains("not-a-dir"),
            "{reason}"
        );
        assert!(
            error.to_string().starts_with("cannot start game 'g': "),
            "{error}"
        );
    }

    #[test]
    fn bridge_json_is_the_gabs_format_and_private() {
        let dir = tempfile::tempdir().unwrap();
        let plan = LaunchPlan::prepare(dir.path(), &game()).unwrap();
        let text = std::fs::read_to_string(plan.bridge_json()).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["port"], plan.port);
        // Not from the range outgoing connections take their ports from (unless all 64 tried were taken).
        if let Some(start) = ephemeral_start() {
            assert!(plan.port < start, "{} is in the ephemeral range", plan.port);
        }
        assert_eq!(value["gameId"], "g");
        assert_eq!(value["token"], plan.token.expose_secret());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(plan.bridge_json())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "bridge.json is readable by others");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_store_game_is_opened_by_its_url_with_the_gabs_environment() {
        let config = HubConfig::from_json_slice(
            br#"{"games": {"s": {"launchMode": "SteamManaged", "target": "42", "args": ["-x"], "stopProcessName": "g"},
                           "e": {"launchMode": "EpicAppId", "target": "Fn", "stopProcessName": "g"}}}"#,
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let steam = &config.games["s"];
        let plan = LaunchPlan::prepare(dir.path(), steam).unwrap();
        let command = plan.command(steam).unwrap();
        assert_eq!(command.get_program(), "xdg-open");
        let args: Vec<_> = command.get_args().collect();
        assert_eq!(args, ["steam://rungameid/42"]);
        let vars: Vec<_> = command.get_envs().collect();
        for (name, value) in [
            (STEAM_APP_ID, "42"),
            (STEAM_GAME_ID, "42"),
            (GABS_GAME_ID, "s"),
        ] {
            assert!(
                vars.iter()
                    .any(|(k, v)| *k == name && *v == Some(value.as_ref())),
                "{name}"
            );
        }
        assert!(vars.iter().any(|(k, _)| *k == GABP_TOKEN));
        assert_eq!(
            store_url(&config.games["e"]).unwrap(),
            "com.epicgames.launcher://apps/Fn?action=launch&silent=true"
        );
    }

    #[cfg(unix)]
    #[test]
    fn the_game_gets_the_gabs_environment_and_nothing_of_ours() {
        let dir = tempfile::tempdir().unwrap();
        let plan = LaunchPlan::prepare(dir.path(), &game()).unwrap();
        let mut command = plan.command(&game()).unwrap();
        command.env("GABP_STRAY", "x");
        // The hub's own variables are removed before the game's are set.
        let vars: Vec<_> = command.get_envs().collect();
        let get = |name: &str| {
            vars.iter()
                .rev()
                .find(|(k, _)| *k == name)
                .and_then(|(_, v)| *v)
        };
        assert_eq!(get(GABS_GAME_ID).unwrap(), "g");
        assert_eq!(
            get(GABP_SERVER_PORT).unwrap().to_str().unwrap(),
            plan.port.to_string()
        );
        assert_eq!(get(GABP_TOKEN).unwrap(), plan.token.expose_secret());
        assert_eq!(get("EXTRA").unwrap(), "1");
        assert!(vars.iter().any(|(k, v)| *k == "HOME" && v.is_none()));
        let status = plan.command(&game()).unwrap().status().unwrap();
        assert!(status.success());
        let out = plan.output_tail(1 << 20);
        assert!(out.contains("GABS_GAME_ID=g"), "{out}");
        assert!(out.contains(&format!("GABP_SERVER_PORT={}", plan.port)));
    }
}
