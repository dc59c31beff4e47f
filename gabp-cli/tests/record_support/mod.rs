//! Running `gabp record` and `gabp replay` in tests: each in a process group of its own (ended, and checked
//! empty, when the test is over), in a private home; and a [`Tap`], a byte relay that keeps a copy of what
//! passes each way, to compare the bytes on both sides of the recorder.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gabp_transport::{BridgeConfig, Endpoint, Listener};
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long a test waits for something that should happen promptly (generous: a loaded 2-core machine).
pub const PATIENCE: Duration = Duration::from_secs(60);

/// A running `gabp` command, leading a process group of its own.
pub struct Gabp {
    pub child: Child,
    pub home: tempfile::TempDir,
    stdout: Receiver<String>,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Gabp {
    /// Starts `gabp ARGS` with `env` in a private home.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> Gabp {
        let home = tempfile::tempdir().expect("tempdir");
        let mut command = Command::new(env!("CARGO_BIN_EXE_gabp"));
        command
            .args(args)
            .env_remove("GABP_TOKEN")
            .env_remove("GABP_SERVER_PORT")
            .env_remove("GABS_GAME_ID")
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path())
            .env("XDG_RUNTIME_DIR", home.path())
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .current_dir(home.path())
            .process_group(0);
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("spawn gabp");
        let stdout = lines(child.stdout.take().expect("stdout"), None);
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let _ = lines(child.stderr.take().expect("stderr"), Some(stderr.clone()));
        Gabp {
            child,
            home,
            stdout,
            stderr,
        }
    }

    /// The endpoint of the first stdout line, `listening on ENDPOINT`.
    pub fn listening_on(&self) -> Endpoint {
        let line = tokio::task::block_in_place(|| self.stdout.recv_timeout(PATIENCE))
            .unwrap_or_else(|e| {
                panic!(
                    "no `listening on` line ({e}); stderr:\n{}",
                    self.stderr_text()
                )
            });
        line.strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("first stdout line is {line:?}"))
            .parse()
            .expect("an endpoint")
    }

    /// The bridge.json the command wrote at `path`.
    pub fn bridge_json(&self, path: &Path) -> BridgeConfig {
        BridgeConfig::read(path).unwrap_or_else(|e| panic!("{e}; stderr:\n{}", self.stderr_text()))
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.home.path().join(name)
    }

    pub fn stderr_text(&self) -> String {
        self.stderr.lock().join("\n")
    }

    /// Sends `signal` (`TERM`, `INT`) to the command.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Waits for the command to exit; then its process group must be empty.
    pub fn wait(&mut self) -> ExitStatus {
        tokio::task::block_in_place(|| self.wait_blocking())
    }

    fn wait_blocking(&mut self) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "gabp did not exit; stderr:\n{}",
                self.stderr_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            left_in_group(self.child.id()),
            0,
            "processes left in the group"
        );
        status
    }

    /// Stdout lines after the first.
    pub fn more_stdout(&self) -> Vec<String> {
        let mut out = Vec::new();
        while let Ok(line) = self.stdout.recv_timeout(Duration::from_millis(200)) {
            out.push(line);
        }
        out
    }
}

impl Drop for Gabp {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            kill_group(self.child.id());
            let _ = self.child.wait();
        }
    }
}

/// Sends SIGKILL to every process of the group `pgid`.
pub fn kill_group(pgid: u32) {
    let _ = Command::new("kill")
        .args(["-s", "KILL", "--", &format!("-{pgid}")])
        .status();
}

/// How many processes are left in the process group `pgid` (zombies included), from `/proc/*/stat`.
pub fn left_in_group(pgid: u32) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            // pid (comm) state ppid pgrp ...: the fields after the last ')'.
            let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            rest.split_whitespace().nth(2) == Some(&pgid.to_string())
        })
        .count()
}

fn lines<R: std::io::Read + Send + 'static>(
    source: R,
    log: Option<Arc<Mutex<Vec<String>>>>,
) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(source).lines() {
            let Ok(line) = line else { break };
            if let Some(log) = &log {
                log.lock().push(line.clone());
            }
            let _ = tx.send(line);
        }
    });
    rx
}

/// The bytes of each tapped connection: towards the target, then from it.
pub type Seen = Arc<Mutex<Vec<(Vec<u8>, Vec<u8>)>>>;

/// A byte relay in front of `target` that keeps a copy of every byte in each direction: what a recorder
/// changes on the wire shows as a difference between two taps.
pub struct Tap {
    pub endpoint: Endpoint,
    /// Bytes towards the target (the mod), then from it, per connection.
    pub seen: Seen,
    /// Connections ended both ways.
    pub done: Arc<Mutex<usize>>,
}

impl Tap {
    pub async fn start(target: Endpoint) -> Tap {
        let listener = Listener::bind(&Endpoint::tcp_v4(0)).await.expect("bind");
        let endpoint = listener.endpoint().clone();
        let seen: Seen = Arc::default();
        let done: Arc<Mutex<usize>> = Arc::default();
        let (seen2, done2) = (seen.clone(), done.clone());
        tokio::spawn(async move {
            while let Ok((front, _)) = listener.accept_stream().await {
                let back = gabp_transport::connect_stream(&target)
                    .await
                    .expect("connect");
                let n = {
                    let mut seen = seen2.lock();
                    seen.push((Vec::new(), Vec::new()));
                    seen.len() - 1
                };
                let (fr, fw) = tokio::io::split(front);
                let (br, bw) = tokio::io::split(back);
                let (s1, s2, d) = (seen2.clone(), seen2.clone(), done2.clone());
                tokio::spawn(async move {
                    let up = copy(fr, bw, move |b| s1.lock()[n].0.extend_from_slice(b));
                    let down = copy(br, fw, move |b| s2.lock()[n].1.extend_from_slice(b));
                    tokio::join!(up, down);
                    *d.lock() += 1;
                });
            }
        });
        Tap {
            endpoint,
            seen,
            done,
        }
    }

    /// Waits until `n` connections have ended both ways.
    pub async fn wait_done(&self, n: usize) {
        let deadline = Instant::now() + PATIENCE;
        while *self.done.lock() < n {
            assert!(
                Instant::now() < deadline,
                "the tapped connections did not end"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn copy<R, W>(mut from: R, mut to: W, mut keep: impl FnMut(&[u8]))
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                keep(&buf[..n]);
                if to.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown().await;
}

/// `bytes` without its first frame (a hello the recorder rewrites).
pub fn after_first_frame(bytes: &[u8]) -> &[u8] {
    let mut rest = bytes;
    gabp_testkit::wire::read_frame(&mut rest)
        .expect("a frame")
        .expect("a first frame");
    rest
}
