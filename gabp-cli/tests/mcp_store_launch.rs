//! Store launch modes (`SteamAppId`, `SteamManaged`, `EpicAppId`) as GABS has them: the hub runs `xdg-open`
//! with the store's URL and the game's GABP settings in its environment, finds the game the launcher started by
//! `stopProcessName`, connects to it over GABP and stops it. A fake `xdg-open` on PATH records what it got and
//! starts the demo game (`gabp mod`) under a name of its own, then exits at once as a real one does.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

mod mcp_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mcp_support::{alive, eventually, Mcp, STEP};
use serde_json::{json, Value};

/// A configuration directory with one store game and a fake `xdg-open` in `DIR/bin`.
struct Store {
    dir: tempfile::TempDir,
    /// The game's process name (a link to `gabp` of that name).
    name: String,
}

impl Store {
    fn new(mode: &str, target: &str, tag: &str) -> Store {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        // Short enough for the kernel's 15-byte command name.
        let name = format!("gs{}-{tag}", std::process::id() % 100_000);
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_gabp"), bin.join(&name)).unwrap();
        let d = dir.path().display();
        let script = format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{d}/argv'\nenv > '{d}/env'\n'{d}/bin/{name}' mod >/dev/null 2>&1 &\necho $! > '{d}/game.pid'\nexit 0\n"
        );
        let opener = bin.join("xdg-open");
        std::fs::write(&opener, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).unwrap();
        let config = json!({"games": {"shop": {
            "name": "Store game", "launchMode": mode, "target": target, "stopProcessName": name,
            "env": {"RUST_LOG": "warn"}}},
            "timeouts": {"startup": {"processStartSeconds": 30, "gabpConnectSeconds": 30}}});
        std::fs::write(dir.path().join("config.json"), config.to_string()).unwrap();
        Store { dir, name }
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    /// `gabp mcp` with the fake `xdg-open` first on PATH.
    async fn mcp(self) -> (Mcp, String) {
        let path = format!(
            "{}:{}",
            self.path("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut command = mcp_support::command(self.dir.path());
        command.env("PATH", path);
        let name = self.name;
        let mcp = Mcp::serve(self.dir, command).await;
        (mcp, name)
    }
}

/// Ends the game the fake launcher started, should the test fail before `games_stop`.
struct KillGame(PathBuf);

impl Drop for KillGame {
    fn drop(&mut self) {
        if let Some(pid) = game_pid(&self.0) {
            if alive(pid) {
                let _ = std::process::Command::new("kill")
                    .args(["-9", &pid.to_string()])
                    .status();
            }
        }
    }
}

fn game_pid(dir: &Path) -> Option<u32> {
    std::fs::read_to_string(dir.join("game.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn env_file(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(dir.join("env"))
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// Starts the store game, checks what the launcher got and that the game found by name is connected, stops
/// it; returns the launcher's environment.
async fn start_and_stop(
    mode: &str,
    target: &str,
    tag: &str,
    url: &str,
) -> BTreeMap<String, String> {
    let (mcp, name) = Store::new(mode, target, tag).mcp().await;
    let dir = mcp.config_dir();
    let _cleanup = KillGame(dir.clone());

    let started = mcp.ok("games_start", json!({"gameId": "shop"})).await;
    assert_eq!(started["code"], "started_connected", "{started}");

    // The launcher got the store's URL and nothing else.
    let argv = std::fs::read_to_string(dir.join("argv")).unwrap();
    assert_eq!(argv.lines().collect::<Vec<_>>(), [url]);
    // ... and the game's GABP settings, which are in bridge.json too.
    let env = env_file(&dir);
    let bridge_path = dir.join("shop/bridge.json");
    assert_eq!(env["GABS_GAME_ID"], "shop");
    assert_eq!(env["GABS_BRIDGE_PATH"], bridge_path.display().to_string());
    let bridge: Value = serde_json::from_slice(&std::fs::read(&bridge_path).unwrap()).unwrap();
    assert_eq!(bridge["gameId"], "shop");
    assert_eq!(env["GABP_SERVER_PORT"], bridge["port"].to_string());
    assert_eq!(env["GABP_TOKEN"], bridge["token"].as_str().unwrap());

    // The game found by its name is the one the launcher started, and the hub is connected to it.
    let game = game_pid(&dir).unwrap();
    let status = mcp.ok("games_status", json!({"gameId": "shop"})).await;
    assert_eq!(status["status"], "connected", "{status}");
    assert_eq!(status["pid"], game, "{status} (process {name})");
    let echoed = mcp
        .ok(
            "games_call_tool",
            json!({"gameId": "shop", "tool": "demo/echo", "arguments": {"value": 7}}),
        )
        .await;
    assert!(echoed.to_string().contains('7'), "{echoed}");
    assert!(dir.join("shop/runtime.json").exists());

    let stopped = mcp.ok("games_stop", json!({"gameId": "shop"})).await;
    assert_eq!(stopped["code"], "terminated", "{stopped}");
    assert!(
        !alive(game),
        "the game found by name still runs after games_stop"
    );
    let status = mcp.ok("games_status", json!({"gameId": "shop"})).await;
    assert_eq!(status["status"], "stopped", "{status}");
    assert!(
        eventually(STEP, || !dir.join("shop/runtime.json").exists()).await,
        "the runtime record outlived the game"
    );
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steam_game_is_started_through_steam_and_found_and_stopped_by_its_process_name() {
    let env = start_and_stop("SteamAppId", "294100", "sa", "steam://rungameid/294100").await;
    assert!(!env.contains_key("SteamAppId"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steam_managed_game_gets_its_app_id_in_the_environment_as_well() {
    let env = start_and_stop("SteamManaged", "294100", "sm", "steam://rungameid/294100").await;
    assert_eq!(env["SteamAppId"], "294100");
    assert_eq!(env["SteamGameId"], "294100");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_epic_game_is_started_through_the_epic_launcher() {
    start_and_stop(
        "EpicAppId",
        "Fortnite",
        "ep",
        "com.epicgames.launcher://apps/Fortnite?action=launch&silent=true",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_game_that_runs_already_but_was_not_started_by_the_hub_is_not_started_twice() {
    let store = Store::new("SteamAppId", "294100", "ar");
    use std::os::unix::process::CommandExt;
    // The game, started by someone else.
    let mut other = std::process::Command::new(store.path("bin").join(&store.name))
        .args(["mod", "--listen", "tcp://127.0.0.1:0", "--no-bridge-json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let name = store.name.clone();
    assert!(
        eventually(STEP, || {
            std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
                std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim_end() == name)
            })
        })
        .await
    );
    let (mcp, _) = store.mcp().await;
    let (message, _) = mcp.err("games_start", json!({"gameId": "shop"})).await;
    assert!(
        message.contains(&other.id().to_string()) && message.contains("already runs"),
        "{message}"
    );
    assert!(
        !mcp.config_dir().join("argv").exists(),
        "the launcher ran although the game runs"
    );
    let _ = other.kill();
    let _ = other.wait();
}
