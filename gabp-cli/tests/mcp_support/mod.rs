//! `gabp mcp` driven by rmcp's client over stdio, with demo games (`gabp mod`) configured the GABS way.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};
use tokio::sync::Notify;

/// How long any one step may take on a loaded 2-core machine with a debug build.
pub const STEP: Duration = Duration::from_secs(60);

/// What the client heard besides answers.
#[derive(Default)]
pub struct Heard {
    pub tool_list_changed: AtomicUsize,
    pub resource_list_changed: AtomicUsize,
    pub resources_updated: parking_lot::Mutex<Vec<String>>,
    pub progress: parking_lot::Mutex<Vec<(f64, Option<f64>)>>,
    pub notify: Notify,
}

#[derive(Clone, Default)]
pub struct Listener(pub Arc<Heard>);

impl ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.0.tool_list_changed.fetch_add(1, Ordering::SeqCst);
        self.0.notify.notify_waiters();
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.progress.lock().push((params.progress, params.total));
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.resources_updated.lock().push(params.uri);
        self.0.notify.notify_waiters();
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.0.resource_list_changed.fetch_add(1, Ordering::SeqCst);
        self.0.notify.notify_waiters();
    }
}

/// A running `gabp mcp` with its configuration directory.
pub struct Mcp {
    pub client: RunningService<RoleClient, Listener>,
    pub heard: Arc<Heard>,
    pub dir: tempfile::TempDir,
    pub pid: Option<u32>,
}

/// Writes `DIR/config.json` with one demo game per id, each `gabp mod` started by the hub.
pub fn write_config(dir: &Path, ids: &[&str]) {
    let mut games = serde_json::Map::new();
    for id in ids {
        games.insert(
            (*id).to_owned(),
            json!({
                "id": id, "name": format!("Demo {id}"), "launchMode": "DirectPath",
                "target": env!("CARGO_BIN_EXE_gabp"), "args": ["mod"],
                "env": {"RUST_LOG": "warn"},
            }),
        );
    }
    let config = json!({ "version": "1.0", "games": games,
        "timeouts": {"startup": {"gabpConnectSeconds": 30}} });
    std::fs::write(dir.join("config.json"), config.to_string()).expect("write config.json");
}

/// `gabp mcp --config-dir DIR`, with none of the caller's GABS settings and `HOME` in `DIR`.
pub fn command(dir: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_gabp"));
    command
        .arg("mcp")
        .arg("--config-dir")
        .arg(dir)
        .env_remove("GABP_TOKEN")
        .env_remove("GABP_SERVER_PORT")
        .env_remove("GABS_GAME_ID")
        .env("HOME", dir);
    command
}

impl Mcp {
    /// `gabp mcp --config-dir DIR EXTRA...` with games `ids`.
    pub async fn start(ids: &[&str], extra: &[&str]) -> Mcp {
        let dir = tempfile::tempdir().expect("temp dir");
        write_config(dir.path(), ids);
        Mcp::start_in(dir, extra).await
    }

    pub async fn start_in(dir: tempfile::TempDir, extra: &[&str]) -> Mcp {
        let mut command = command(dir.path());
        command.args(extra);
        Mcp::serve(dir, command).await
    }

    /// Starts `command` (from [`command`], adjusted) and initializes rmcp's client with it.
    pub async fn serve(dir: tempfile::TempDir, command: tokio::process::Command) -> Mcp {
        let transport = TokioChildProcess::new(command).expect("start gabp mcp");
        let pid = transport.id();
        let listener = Listener::default();
        let heard = listener.0.clone();
        let client = tokio::time::timeout(STEP, listener.serve(transport))
            .await
            .expect("initialize in time")
            .expect("initialize");
        Mcp {
            client,
            heard,
            dir,
            pid,
        }
    }

    /// Calls `name` with `args` and returns the result (a protocol error fails the test).
    pub async fn call(&self, name: &str, args: Value) -> CallToolResult {
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        tokio::time::timeout(STEP, self.client.call_tool(params))
            .await
            .unwrap_or_else(|_| panic!("{name} answered in time"))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// Calls and expects success; returns the structured content.
    pub async fn ok(&self, name: &str, args: Value) -> Value {
        let result = self.call(name, args.clone()).await;
        assert_ne!(
            result.is_error,
            Some(true),
            "{name} {args}: {}",
            text(&result)
        );
        result.structured_content.unwrap_or(Value::Null)
    }

    /// Calls and expects a tool error; returns its text and structured content.
    pub async fn err(&self, name: &str, args: Value) -> (String, Value) {
        let result = self.call(name, args.clone()).await;
        assert_eq!(
            result.is_error,
            Some(true),
            "{name} {args} should fail: {}",
            text(&result)
        );
        (
            text(&result),
            result.structured_content.unwrap_or(Value::Null),
        )
    }

    pub fn config_dir(&self) -> PathBuf {
        self.dir.path().to_owned()
    }
}

/// The first text content of a result.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .find_map(|c| match c {
            rmcp::model::ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Whether process `pid` still exists (and is not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits up to `limit` for `check` to hold.
pub async fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    check()
}
