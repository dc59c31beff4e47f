//! A raw bridge for end-to-end tests of `gabp mod`: it runs the real binary, writes `Content-Length` frames by
//! hand, reads frames by hand, and decodes every frame the mod writes with the STRICT decoder (a frame that
//! does not pass fails the test). It never uses our own `Bridge`.
//!
//! Blocking std I/O with reader threads; every wait has a generous deadline and nothing depends on timing.
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gabp_types::decode::{decode_response_to, decode_strict, DecodeMode};
use gabp_types::{ErrorObject, Event, Message, MessageId, MethodName, Request, Response};
use parking_lot::Mutex;
use serde_json::{json, Value};

/// A token of the test runs (64 lower-case hex characters, like a generated one).
pub const TOKEN: &str = "6d6f642d6532652d746f6b656e2d666f722d74657374732d6f6e6c792d303132";
/// The `launchId` the raw client presents.
pub const LAUNCH_ID: &str = "6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11";
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

    /// Starts the mod. With `stdio`, its stdout is left for [`Client::stdio`]; otherwise a thread reads its
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
    pub fn connect(&self, endpoint: &str) -> Client {
        if let Some(addr) = endpoint.strip_prefix("tcp://") {
            let stream = TcpStream::connect(addr).expect("connect tcp");
            let reader = stream.try_clone().expect("clone");
            Client::new(Box::new(stream), reader)
        } else if let Some(path) = endpoint.strip_prefix("unix://") {
            let stream = UnixStream::connect(path).expect("connect unix");
            let reader = stream.try_clone().expect("clone");
            Client::new(Box::new(stream), reader)
        } else {
            panic!("unexpected endpoint {endpoint}")
        }
    }

    /// A raw client on the mod's stdin and stdout.
    pub fn stdio(&mut self) -> Client {
        let stdin = self.child.stdin.take().expect("stdin");
        let stdout = self.child.stdout.take().expect("stdout");
        Client::new(Box::new(stdin), stdout)
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

/// What the frame reader thread saw.
enum Incoming {
    Body(Vec<u8>),
    Broken(String),
}

/// Reads `Content-Length` frames from `source` on a thread. The channel closes at end of stream.
fn frames<R: Read + Send + 'static>(source: R) -> Receiver<Incoming> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(source);
        loop {
            match read_frame(&mut reader) {
                Ok(Some(body)) => {
                    if tx.send(Incoming::Body(body)).is_err() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let _ = tx.send(Incoming::Broken(e));
                    break;
                }
            }
        }
    });
    rx
}

/// One frame: `Ok(None)` at a clean end of stream (between frames).
fn read_frame<R: BufRead>(reader: &mut R) -> Result<Option<Vec<u8>>, String> {
    let mut length = None;
    let mut first = true;
    loop {
        let mut line = Vec::new();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| e.to_string())?;
        if n == 0 {
            return if first {
                Ok(None)
            } else {
                Err("end of stream inside a header".into())
            };
        }
        first = false;
        let line = String::from_utf8(line).map_err(|_| "header is not UTF-8".to_owned())?;
        let Some(line) = line.strip_suffix("\r\n") else {
            return Err(format!("header line without CRLF: {line:?}"));
        };
        if line.is_empty() {
            break;
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("not a header: {line:?}"))?;
        if name.eq_ignore_ascii_case("content-length") {
            let n: usize = value
                .trim()
                .parse()
                .map_err(|_| format!("bad Content-Length: {line:?}"))?;
            length = Some(n);
        } else if !name.eq_ignore_ascii_case("content-type") {
            return Err(format!("unexpected header: {line:?}"));
        }
    }
    let length = length.ok_or("a frame without Content-Length")?;
    let mut body = vec![0; length];
    reader.read_exact(&mut body).map_err(|e| e.to_string())?;
    Ok(Some(body))
}

/// Frames `body` with a `Content-Length` header.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// The params of a `session/hello` with `token`.
pub fn hello_params(token: &str) -> Value {
    json!({
        "token": token,
        "bridgeVersion": "1.0.0",
        "platform": "linux",
        "launchId": LAUNCH_ID,
        "clientInfo": { "name": "raw-e2e-client", "version": "0" }
    })
}

/// A raw bridge: frames by hand, strict decoding of everything the mod writes.
pub struct Client {
    writer: Option<Box<dyn Write + Send>>,
    incoming: Receiver<Incoming>,
    /// Events read while waiting for responses, in arrival order.
    pub events: VecDeque<Event>,
    /// The method of each request sent, to check each result against its method's schema.
    methods: HashMap<MessageId, String>,
    /// Every frame read, decoded.
    pub frames_read: usize,
}

impl Client {
    pub fn new<R: Read + Send + 'static>(writer: Box<dyn Write + Send>, reader: R) -> Self {
        Client {
            writer: Some(writer),
            incoming: frames(reader),
            events: VecDeque::new(),
            methods: HashMap::new(),
            frames_read: 0,
        }
    }

    /// Writes raw bytes.
    pub fn write_raw(&mut self, bytes: &[u8]) {
        let writer = self.writer.as_mut().expect("input closed");
        writer.write_all(bytes).expect("write");
        writer.flush().expect("flush");
    }

    /// Closes our writing side (for stdio: the mod's stdin).
    pub fn close_input(&mut self) {
        self.writer = None;
    }

    /// Sends a message given as JSON (its `id` and `method` are remembered when it is a request).
    pub fn send_value(&mut self, message: &Value) {
        if let (Some(id), Some(method)) = (message["id"].as_str(), message["method"].as_str()) {
            if let Ok(id) = MessageId::parse(id) {
                self.methods.insert(id, method.to_owned());
            }
        }
        let body = serde_json::to_vec(message).expect("serialize");
        self.write_raw(&frame(&body));
    }

    /// Sends a request; returns its id.
    pub fn send(&mut self, method: &str, params: Option<Value>) -> MessageId {
        let params = params.map(|p| match p {
            Value::Object(map) => map,
            other => panic!("params must be an object, not {other}"),
        });
        let request = Request::new(MethodName::new(method).expect("method name"), params);
        let id = request.id;
        self.methods.insert(id, method.to_owned());
        self.write_raw(&frame(&Message::from(request).to_vec()));
        id
    }

    /// The next frame, strictly decoded; `None` when the mod closed the connection.
    pub fn recv(&mut self) -> Option<Message> {
        let incoming = match self.incoming.recv_timeout(PATIENCE) {
            Ok(incoming) => incoming,
            Err(RecvTimeoutError::Disconnected) => return None,
            Err(RecvTimeoutError::Timeout) => panic!("no frame from the mod within {PATIENCE:?}"),
        };
        let body = match incoming {
            Incoming::Body(body) => body,
            Incoming::Broken(e) => panic!("the mod wrote a broken frame: {e}"),
        };
        self.frames_read += 1;
        let text = String::from_utf8_lossy(&body).into_owned();
        let peek: Value = serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("the mod wrote a body that is not JSON ({e}): {text}"));
        let method = peek["id"]
            .as_str()
            .and_then(|id| MessageId::parse(id).ok())
            .filter(|_| peek["type"] == "response")
            .and_then(|id| self.methods.get(&id).cloned());
        let decoded = match &method {
            Some(method) => decode_response_to(&body, method, DecodeMode::Strict),
            None => decode_strict(&body),
        };
        Some(decoded.unwrap_or_else(|e| {
            panic!("the mod wrote a frame that fails strict decoding: {e}\n{text}")
        }))
    }

    /// Reads until the response to `id` (events meanwhile go to [`Client::events`]).
    pub fn response(&mut self, id: MessageId) -> Response {
        loop {
            match self.recv() {
                Some(Message::Response(r)) if r.id == id => return r,
                Some(Message::Response(r)) => {
                    panic!("unexpected response {r:?} while waiting for {id}")
                }
                Some(Message::Event(e)) => self.events.push_back(e),
                Some(Message::Request(r)) => panic!("the mod sent a request: {r:?}"),
                None => panic!("the mod closed the connection before answering {id}"),
            }
        }
    }

    /// Sends a request and waits for its response.
    pub fn request(&mut self, method: &str, params: Option<Value>) -> Response {
        let id = self.send(method, params);
        self.response(id)
    }

    /// A request that must succeed; its result.
    pub fn ok(&mut self, method: &str, params: Option<Value>) -> Value {
        let response = self.request(method, params);
        match response.into_result() {
            Ok(v) => v,
            Err(e) => panic!("{method} failed: {e:?}"),
        }
    }

    /// A request that must fail; its error.
    pub fn err(&mut self, method: &str, params: Option<Value>) -> ErrorObject {
        let response = self.request(method, params);
        match response.into_result() {
            Ok(v) => panic!("{method} succeeded with {v}, expected an error"),
            Err(e) => e,
        }
    }

    /// Calls a tool.
    pub fn call_tool(&mut self, name: &str, arguments: Value) -> Result<Value, ErrorObject> {
        self.request(
            "tools/call",
            Some(json!({ "name": name, "arguments": arguments })),
        )
        .into_result()
    }

    /// `session/hello` with `token`; the welcome.
    pub fn hello(&mut self, token: &str) -> Value {
        self.ok("session/hello", Some(hello_params(token)))
    }

    /// The next event (buffered ones first).
    pub fn next_event(&mut self) -> Event {
        if let Some(e) = self.events.pop_front() {
            return e;
        }
        match self.recv() {
            Some(Message::Event(e)) => e,
            other => panic!("expected an event, got {other:?}"),
        }
    }

    /// Reads until the mod closes the connection; returns what it still sent.
    pub fn until_closed(&mut self) -> Vec<Message> {
        let mut rest = Vec::new();
        while let Some(message) = self.recv() {
            rest.push(message);
        }
        rest
    }
}

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
