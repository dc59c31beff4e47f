//! End-to-end tests of `gabp mod`: it runs the real binary in an isolated environment, and talks to it with the
//! raw client of `gabp_testkit::wire` ([`BlockingClient`]), which writes frames by hand and decodes every frame
//! the mod writes with the STRICT decoder (a frame that does not pass fails the test). It never uses our own
//! `Bridge`.
//!
//! Blocking: threads read the mod's log lines, the client runs on its own runtime; every wait has a generous
//! deadline and nothing depends on timing.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gabp_testkit::wire::BlockingClient;
use gabp_transport::Endpoint;
use parking_lot::Mutex;

/// A token of the test runs (64 lower-case hex characters, like a generated one).
pub const TOKEN: &str = "6d6f642d6532652d746f6b656e2d666f722d74657374732d6f6e6c792d303132";
/// How long a test waits for something that should happen promptly (generous for a loaded machine).
pub const PATIENCE: Duration = Duration::from_secs(60);

/// A running `gabp mod` in an isolated environment (no GABS variables, a private config home).
pub struct ModProcess {
    pub child: Child,
    /// The private home: `XDG_CONFIG_HOME`, `HOME` and `XDG_RUNTIME_DIR` point here.
    pub home: tempfile::TempDir,
    stderr: Arc<Mutex<Vec<String>>>,
    stderr_lines: Receiver<String>,
    stdout_lines: Option<Receiver<String>>,
}

/// How to start `gabp mod`.
pub struct Launch {
    args: Vec<String>,
    env: Vec<(String, String)>,
    home: Option<tempfile::TempDir>,
}

impl Launch {
    pub fn new(args: &[&str]) -> Self {
        Launch {
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: Vec::new(),
            home: None,
        }
    }

    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Uses `home` as the private home (to put a bridge.json there first).
    pub fn home(mut self, home: tempfile::TempDir) -> Self {
        self.home = Some(home);
        self
    }

    fn command(&self, home: &Path) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_gabp"));
        command
            .arg("mod")
            .args(&self.args)
            .env_remove("GABP_TOKEN")
            .env_remove("GABP_SERVER_PORT")
            .env_remove("GABS_GAME_ID")
            .env("XDG_CONFIG_HOME", home)
            .env("HOME", home)
            .env("XDG_RUNTIME_DIR", home)
            .env("RUST_LOG", "info");
        for (name, value) in &self.env {
            command.env(name, value);
        }
        command
    }

    /// Runs to completion (for errors and `--help`).
    pub fn output(mut self) -> std::process::Output {
        let home = self
            .home
            .take()
            .unwrap_or_else(|| tempfile::tempdir().expect("tempdir"));
        self.command(home.path())
            .stdin(Stdio::null())
            .output()
            .expect("run gabp mod")
    }

    /// Starts the mod. With `stdio`, its stdout is left for [`ModProcess::stdio`]; otherwise a thread reads its
    /// stdout lines.
    pub fn spawn(mut self, stdio: bool) -> ModProcess {
        let home = self
            .home
            .take()
            .unwrap_or_else(|| tempfile::tempdir().expect("tempdir"));
        let mut child = self
            .command(home.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn gabp mod");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let stderr_lines = lines(child.stderr.take().expect("stderr"), Some(stderr.clone()));
        let stdout_lines = if stdio {
            None
        } else {
            Some(lines(child.stdout.take().expect("stdout"), None))
        };
        ModProcess {
            child,
            home,
            stderr,
            stderr_lines,
            stdout_lines,
        }
    }
}

/// Reads `source` line by line on a thread; every line goes to the receiver (and to `log`).
fn lines<R: Read + Send + 'static>(
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
            if tx.send(line).is_err() && log.is_none() {
                break;
            }
        }
    });
    rx
}

impl ModProcess {
    /// The first stdout line, which must be `listening on ENDPOINT`; returns the endpoint.
    pub fn listening_on(&mut self) -> String {
        let lines = self.stdout_lines.as_ref().expect("not a stdio mod");
        let line = match lines.recv_timeout(PATIENCE) {
            Ok(line) => line,
            Err(e) => panic!(
                "no `listening on` line ({e}); stderr:\n{}",
                self.stderr_text()
            ),
        };
        line.strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("first stdout line is {line:?}"))
            .to_owned()
    }

    /// Every further stdout line written so far (a socket mod writes nothing after the first).
    pub fn more_stdout(&self) -> Vec<String> {
        self.stdout_lines
            .as_ref()
            .map(|lines| lines.try_iter().collect())
            .unwrap_or_default()
    }

    /// Waits for a stderr line starting with `prefix`; returns the rest of it.
    pub fn stderr_line(&mut self, prefix: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr_lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix(prefix) {
                        return rest.to_owned();
                    }
                }
                Err(e) => panic!(
                    "no stderr line starting with {prefix:?} ({e}); stderr:\n{}",
                    self.stderr_text()
                ),
            }
        }
    }

    pub fn stderr_text(&self) -> String {
        self.stderr.lock().join("\n")
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (`TERM`, `INT`) to the mod.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Waits for the mod to exit (panics, after killing it, if it does not within [`PATIENCE`]).
    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                // Let the stderr thread catch up with the last lines.
                std::thread::sleep(Duration::from_millis(50));
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("gabp mod did not exit; stderr:\n{}", self.stderr_text());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for a clean exit (status 0, no panic on stderr).
    pub fn assert_clean_exit(&mut self) {
        let status = self.wait_exit();
        let stderr = self.stderr_text();
        assert!(status.success(), "exit {status}; stderr:\n{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }

    /// Connects a raw client to `endpoint` (`tcp://...` or `unix://...`).
    pub fn connect(&self, endpoint: &str) -> BlockingClient {
        let endpoint: Endpoint = endpoint
            .parse()
            .unwrap_or_else(|e| panic!("unexpected endpoint {endpoint}: {e}"));
        let mut client = BlockingClient::connect(&endpoint).expect("connect");
        client.set_patience(PATIENCE);
        client
    }

    /// A raw client on the mod's stdin and stdout.
    pub fn stdio(&mut self) -> BlockingClient {
        let stdin = self.child.stdin.take().expect("stdin");
        let stdout = self.child.stdout.take().expect("stdout");
        let mut client = BlockingClient::child(stdin, stdout).expect("a client on the mod's stdio");
        client.set_patience(PATIENCE);
        client
    }
}

impl Drop for ModProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
