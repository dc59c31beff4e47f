//! `ModProcess`: a child in a process group of its own, and ending it ends every process of the
//! group, grandchildren included. The group's members are counted in /proc (zombies, which only
//! wait to be reaped, do not count), so these tests are for Linux.
#![cfg(target_os = "linux")]

mod common;

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use gabp_transport::{spawn, ModProcess};
use tokio::io::AsyncReadExt;
use tokio::process::Command;

/// A shell with two grandchildren: three live processes in the group.
fn family() -> Command {
    let mut command = Command::new("sh");
    command.args(["-c", "sleep 1000 & sleep 1000 & wait"]);
    command
}

/// Kills group `pgid` with kill(1) when dropped, so a failing test leaves no process behind (they
/// would hold the test's output pipes open). Independent of the code under test.
struct Cleanup(u32);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0)])
            .stderr(Stdio::null())
            .status();
    }
}

/// The processes of group `pgid` that are alive (not zombies), from /proc.
fn live_members(pgid: u32) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            // "PID (COMM) STATE PPID PGRP ...": COMM may hold anything, so parse after the last ')'.
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let mut fields = rest.split_whitespace();
            let state = fields.next();
            let pgrp = fields.nth(1).and_then(|p| p.parse::<u32>().ok());
            pgrp == Some(pgid) && state != Some("Z") && state != Some("X")
        })
        .count()
}

/// Waits until the group has `want` live members; panics with the count after the deadline.
async fn until_members(pgid: u32, want: usize) {
    let deadline = Instant::now() + common::LIMIT;
    loop {
        let now = live_members(pgid);
        if now == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "group {pgid} has {now} live processes, expected {want}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_child_leads_a_group_of_its_own() {
    let process = ModProcess::start(family()).expect("start");
    let pid = process.id().expect("pid");
    let _cleanup = Cleanup(pid);
    until_members(pid, 3).await;
    assert_eq!(pgid_of(pid), Some(pid), "the child leads its group");
    assert_ne!(
        pgid_of(std::process::id()),
        Some(pid),
        "the test is elsewhere"
    );
}

/// The process group of `pid`, from /proc.
fn pgid_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(2)?.parse().ok()
}

#[tokio::test]
async fn kill_ends_the_grandchildren_too() {
    let mut process = ModProcess::start(family()).expect("start");
    let pgid = process.id().expect("pid");
    let _cleanup = Cleanup(pgid);
    until_members(pgid, 3).await;
    process.kill();
    let status = common::within("the exit", process.wait())
        .await
        .expect("status");
    assert_eq!(status.signal(), Some(9), "{status}");
    until_members(pgid, 0).await;
}

#[tokio::test]
async fn dropping_a_started_process_ends_its_group() {
    let process = ModProcess::start(family()).expect("start");
    let pgid = process.id().expect("pid");
    let _cleanup = Cleanup(pgid);
    until_members(pgid, 3).await;
    drop(process);
    until_members(pgid, 0).await;
}

#[tokio::test]
async fn dropping_the_connection_of_spawn_ends_its_group() {
    let mut command = Command::new("sh");
    command.args(["-c", "sleep 1000 & cat"]);
    let (conn, mut process) = spawn(command).expect("spawn");
    let pgid = process.id().expect("pid");
    let _cleanup = Cleanup(pgid);
    until_members(pgid, 3).await; // sh, sleep, cat
    drop(conn);
    // The shell may exit on its own first (cat sees the end of its input), or be killed: either way it
    // exits, and the group's `sleep` must not outlive it.
    common::within("the exit", process.wait())
        .await
        .expect("status");
    until_members(pgid, 0).await;
}

#[tokio::test]
async fn dropping_the_process_of_spawn_leaves_the_child_to_the_connection() {
    let (conn, process) = spawn(family()).expect("spawn");
    let pgid = process.id().expect("pid");
    let _cleanup = Cleanup(pgid);
    drop(process);
    until_members(pgid, 3).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        live_members(pgid),
        3,
        "still running while the connection lives"
    );
    drop(conn);
    until_members(pgid, 0).await;
}

#[tokio::test]
async fn kill_after_the_leader_exited_ends_what_it_left_behind() {
    let mut command = Command::new("sh");
    command.args(["-c", "sleep 1000 & exit 3"]);
    let mut process = ModProcess::start(command).expect("start");
    let pgid = process.id().expect("pid");
    let _cleanup = Cleanup(pgid);
    let status = common::within("the exit", process.wait())
        .await
        .expect("status");
    assert_eq!(status.code(), Some(3));
    until_members(pgid, 1).await; // the orphaned sleep
    process.kill();
    until_members(pgid, 0).await;
}

#[tokio::test]
async fn terminate_lets_the_group_exit_on_sigterm() {
    let mut process = ModProcess::start(family()).expect("start");
    let pgid = process.id().expect("pid");
    let _cleanup = Cleanup(pgid);
    until_members(pgid, 3).await;
    let started = Instant::now();
    let status = common::within("terminate", process.terminate(Duration::from_secs(30)))
        .await
        .expect("status");
    assert_eq!(status.signal(), Some(15), "{status}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "no need to wait out the grace"
    );
    until_members(pgid, 0).await;
}

#[tokio::test]
async fn terminate_kills_what_ignores_sigterm_after_the_grace() {
    let mut command = Command::new("sh");
    // Ignored signals stay ignored across exec: neither the shell nor its sleep ends on SIGTERM.
    command.args(["-c", "trap '' TERM; sleep 1000 & wait"]);
    let mut process = ModProcess::start(command).expect("start");
    let pgid = process.id().expect("pid");
    let _cleanup = Cleanup(pgid);
    until_members(pgid, 2).await;
    let grace = Duration::from_millis(300);
    let started = Instant::now();
    let status = common::within("terminate", process.terminate(grace))
        .await
        .expect("status");
    assert!(started.elapsed() >= grace, "{:?}", started.elapsed());
    assert_eq!(status.signal(), Some(9), "{status}");
    until_members(pgid, 0).await;
}

#[tokio::test]
async fn start_leaves_stdio_as_the_command_sets_them() {
    let mut command = Command::new("sh");
    command
        .args(["-c", "read line; echo \"got $line\""])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut process = ModProcess::start(command).expect("start");
    assert!(process.take_stderr().is_none(), "inherited, not captured");
    let mut stdin = process.take_stdin().expect("piped stdin");
    let mut stdout = process.take_stdout().expect("piped stdout");
    assert!(process.take_stdout().is_none(), "handed out once");
    tokio::io::AsyncWriteExt::write_all(&mut stdin, b"hello\n")
        .await
        .expect("write");
    drop(stdin);
    let mut text = String::new();
    common::within("the output", stdout.read_to_string(&mut text))
        .await
        .expect("read");
    assert_eq!(text, "got hello\n");
    assert!(common::within("the exit", process.wait())
        .await
        .expect("status")
        .success());
}

#[tokio::test]
async fn a_missing_program_is_an_error_naming_it() {
    let err = ModProcess::start(Command::new("/nonexistent/game")).expect_err("missing");
    assert!(err.to_string().contains("/nonexistent/game"), "{err}");
    assert_eq!(err.io_kind(), Some(std::io::ErrorKind::NotFound));
}

#[test]
fn start_outside_a_runtime_is_an_error_not_a_panic() {
    let err = ModProcess::start(std::process::Command::new("true")).expect_err("no runtime");
    assert!(
        matches!(err, gabp_transport::TransportError::NoRuntime(_)),
        "{err:?}"
    );
}

#[test]
fn the_group_is_ended_when_the_runtime_shuts_down() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let process = runtime.block_on(async { ModProcess::start(family()).expect("start") });
    let pgid = process.id().expect("pid");
    let _cleanup = Cleanup(pgid);
    runtime.block_on(until_members(pgid, 3));
    drop(runtime);
    // The handle outlives the runtime: the task that owned the child ended the group.
    let deadline = Instant::now() + common::LIMIT;
    while live_members(pgid) != 0 {
        assert!(
            Instant::now() < deadline,
            "group {pgid} outlived the runtime"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(process);
}
