//! `gabp tail` across a restart of the game: the status lines on stderr, the reconnect (events flow again on
//! stdout), and `--no-reconnect`, which stops instead.

mod cli_support;
mod mod_support;

use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Instant;

use cli_support::{gabp_in, lines, run, text, DEADLINE};
use mod_support::{Launch, ModProcess, TOKEN};
use serde_json::Value;

/// A loopback port nothing listens on now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// `gabp mod` listening at `endpoint`.
fn game_at(endpoint: &str) -> ModProcess {
    let mut game = Launch::new(&["--token", TOKEN, "--listen", endpoint]).spawn(false);
    assert_eq!(game.listening_on(), endpoint);
    game
}

/// Stops the game and waits until it is gone (the port is free again).
fn stop(mut game: ModProcess) {
    game.signal("TERM");
    game.wait_exit();
}

/// A running `gabp tail`, in a process group of its own that is killed when the test ends.
struct Tail {
    child: Child,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
    _home: tempfile::TempDir,
}

impl Tail {
    fn start(endpoint: &str, extra: &[&str]) -> Tail {
        let home = tempfile::tempdir().expect("tempdir");
        let mut args = vec!["tail", "--connect", endpoint, "--token", TOKEN];
        args.extend_from_slice(extra);
        args.push("player/move");
        let mut command = gabp_in(home.path(), &args);
        command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = command.spawn().expect("start gabp tail");
        let stdout = lines(child.stdout.take().expect("stdout"));
        let stderr = lines(child.stderr.take().expect("stderr"));
        Tail {
            child,
            stdout,
            stderr,
            _home: home,
        }
    }

    /// The next stderr line.
    fn status(&self) -> String {
        self.stderr
            .recv_timeout(DEADLINE)
            .expect("a line on stderr")
    }

    /// Moves the player until an event arrives on stdout; returns it.
    fn event_after_moving(&self, endpoint: &str) -> Value {
        let deadline = Instant::now() + DEADLINE;
        for x in 1.. {
            assert!(Instant::now() < deadline, "no event on stdout");
            let x = (x % 15).to_string();
            let x = format!("x={x}");
            let out = run(&[
                "call",
                "--connect",
                endpoint,
                "--token",
                TOKEN,
                "player/teleport",
                &x,
                "y=5",
                "z=1",
            ]);
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
            if let Ok(line) = self
                .stdout
                .recv_timeout(std::time::Duration::from_millis(500))
            {
                return serde_json::from_str(&line).expect("one JSON event per line");
            }
        }
        unreachable!()
    }
}

impl Drop for Tail {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = std::process::Command::new("kill")
                .args(["-s", "KILL", "--", &format!("-{}", self.child.id())])
                .status();
            let _ = self.child.wait();
        }
    }
}

#[test]
fn tail_reconnects_after_the_game_restarts() {
    let endpoint = format!("tcp://127.0.0.1:{}", free_port());
    let game = game_at(&endpoint);
    let mut tail = Tail::start(&endpoint, &[]);
    assert_eq!(tail.status(), format!("connected to {endpoint}"));
    assert_eq!(tail.status(), "subscribed to player/move");
    let event = tail.event_after_moving(&endpoint);
    assert_eq!(event["channel"], "player/move");

    stop(game);
    let lost = tail.status();
    assert!(
        lost.starts_with("connection lost (")
            && lost.ends_with(&format!("); reconnecting to {endpoint}")),
        "{lost}"
    );
    let _game = game_at(&endpoint);
    assert_eq!(
        tail.status(),
        format!("reconnected to {endpoint} and subscribed again to player/move")
    );
    assert_eq!(
        tail.status(),
        "warning: events published while disconnected are lost"
    );
    let event = tail.event_after_moving(&endpoint);
    assert_eq!(event["channel"], "player/move");

    let status = std::process::Command::new("kill")
        .args(["-INT", &tail.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let status = cli_support::wait(&mut tail.child, DEADLINE);
    assert_eq!(status.code(), Some(0));
}

#[test]
fn no_reconnect_stops_when_the_game_goes_away() {
    let endpoint = format!("tcp://127.0.0.1:{}", free_port());
    let game = game_at(&endpoint);
    let mut tail = Tail::start(&endpoint, &["--no-reconnect"]);
    assert_eq!(tail.status(), format!("connected to {endpoint}"));
    assert_eq!(tail.status(), "subscribed to player/move");
    stop(game);
    let status = cli_support::wait(&mut tail.child, DEADLINE);
    assert_eq!(status.code(), Some(1));
    assert_eq!(tail.status(), "error: the mod closed the connection");
}
