//! No game outlives `gabp mcp`, and none is started twice: a game the hub started ends within 2 s of the hub's
//! death by SIGKILL (the parent-death signal), and a game an earlier session recorded in `runtime.json` and
//! that still runs is taken over by the next session (games_start attaches to it) rather than doubled.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

mod mcp_support;

use std::path::Path;
use std::time::Duration;

use mcp_support::{alive, eventually, write_config, Mcp};
use serde_json::{json, Value};

/// `gabp mcp --config-dir DIR` in a process group of its own.
async fn mcp_in(dir: tempfile::TempDir) -> Mcp {
    let mut command = mcp_support::command(dir.path());
    command.process_group(0);
    Mcp::serve(dir, command).await
}

fn pid_of(status: &Value) -> u32 {
    status["pid"]
        .as_u64()
        .and_then(|p| u32::try_from(p).ok())
        .unwrap()
}

/// The start time of `pid` in clock ticks (`/proc/<pid>/stat`, field 22).
fn start_time(pid: u32) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = stat.rsplit_once(')').unwrap().1;
    after.split_whitespace().nth(19).unwrap().to_owned()
}

/// The processes whose parent is `parent`.
fn children(parent: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(parent)
            })
        })
        .filter(|pid| alive(*pid))
        .collect()
}

/// Kills the process group `pgid` when dropped (what a failed test leaves).
struct KillGroup(u32);

impl Drop for KillGroup {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-9", "--", &format!("-{}", self.0)])
            .stderr(std::process::Stdio::null())
            .status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_ends_within_two_seconds_of_a_hub_killed_with_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &["voxel"]);
    let mcp = mcp_in(dir).await;
    let hub = mcp.pid.unwrap();
    let _hub_group = KillGroup(hub);
    let started = mcp.ok("games_start", json!({"gameId": "voxel"})).await;
    assert_eq!(started["code"], "started_connected", "{started}");
    let game = pid_of(&mcp.ok("games_status", json!({"gameId": "voxel"})).await);
    let _game_group = KillGroup(game);
    assert!(alive(game));

    std::process::Command::new("kill")
        .args(["-9", &hub.to_string()])
        .status()
        .unwrap();
    assert!(
        eventually(Duration::from_secs(2), || !alive(game)).await,
        "the game still runs 2 s after its hub was killed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_hub_takes_over_the_game_an_earlier_one_left_running() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &["voxel"]);
    // The game as the earlier hub left it: running with its settings, in bridge.json and runtime.json.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let token = "0123456789abcdef".repeat(3);
    let game_dir = dir.path().join("voxel");
    std::fs::create_dir(&game_dir).unwrap();
    let mut game = std::process::Command::new(env!("CARGO_BIN_EXE_gabp"))
        .arg("mod")
        .env("GABP_SERVER_PORT", port.to_string())
        .env("GABP_TOKEN", &token)
        .env("GABS_GAME_ID", "voxel")
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = game.id();
    let _game_group = KillGroup(pid);
    write_json(
        &game_dir.join("bridge.json"),
        &json!({"port": port, "token": token, "gameId": "voxel"}),
    );
    write_json(
        &game_dir.join("runtime.json"),
        &json!({"gameId": "voxel", "pid": pid, "identity": start_time(pid), "port": port,
                "launchMode": "DirectPath", "hubPid": 1}),
    );

    let mcp = mcp_in(dir).await;
    let hub = mcp.pid.unwrap();
    let _hub_group = KillGroup(hub);
    let attached = mcp.ok("games_start", json!({"gameId": "voxel"})).await;
    assert_eq!(attached["code"], "attached_running", "{attached}");
    assert_eq!(attached["pid"], pid);
    let status = mcp.ok("games_status", json!({"gameId": "voxel"})).await;
    assert_eq!(status["status"], "connected", "{status}");
    assert_eq!(pid_of(&status), pid);
    assert_eq!(
        children(hub),
        Vec::<u32>::new(),
        "the hub started a second copy"
    );
    // Starting it again changes nothing.
    let again = mcp.ok("games_start", json!({"gameId": "voxel"})).await;
    assert_eq!(again["code"], "attached_running", "{again}");
    assert_eq!(children(hub), Vec::<u32>::new());

    // Taken over, it is the hub's to stop.
    let stopped = mcp.ok("games_stop", json!({"gameId": "voxel"})).await;
    assert_eq!(stopped["code"], "terminated", "{stopped}");
    let _ = game.wait();
    assert!(!game_dir.join("runtime.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_or_corrupt_record_is_dropped_and_the_game_started() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &["voxel", "other"]);
    // A record of a process that has ended, and one that is not JSON.
    let mut ended = std::process::Command::new("true").spawn().unwrap();
    let gone = ended.id();
    ended.wait().unwrap();
    for (id, text) in [
        (
            "voxel",
            json!({"gameId": "voxel", "pid": gone, "identity": "1", "port": 1,
                          "launchMode": "DirectPath", "hubPid": 1})
            .to_string(),
        ),
        ("other", "{not json".to_owned()),
    ] {
        std::fs::create_dir(dir.path().join(id)).unwrap();
        std::fs::write(dir.path().join(id).join("runtime.json"), text).unwrap();
    }
    let mcp = mcp_in(dir).await;
    let _hub_group = KillGroup(mcp.pid.unwrap());
    for id in ["voxel", "other"] {
        let started = mcp.ok("games_start", json!({"gameId": id})).await;
        assert_eq!(started["code"], "started_connected", "{id}: {started}");
        let pid = pid_of(&mcp.ok("games_status", json!({"gameId": id})).await);
        let _game_group = KillGroup(pid);
        let record: Value = serde_json::from_slice(
            &std::fs::read(mcp.config_dir().join(id).join("runtime.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(record["pid"], pid, "{record}");
        assert_eq!(record["identity"], start_time(pid));
        mcp.ok("games_stop", json!({"gameId": id})).await;
    }
}

fn write_json(path: &Path, value: &Value) {
    std::fs::write(path, value.to_string()).unwrap();
}
