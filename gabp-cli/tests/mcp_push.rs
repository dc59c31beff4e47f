//! What `gabp mcp` sends without being asked, through rmcp's client over stdio: the games' consoles
//! (`games_logs`, the `logs` resource, MCP logging) and pushed events (event resources).
#![cfg(unix)]
#![allow(clippy::unwrap_used)]
#![allow(deprecated)] // MCP logging and resources/subscribe are what 2025 clients send.

mod mcp_support;

use std::sync::Arc;
use std::time::Duration;

use mcp_support::{eventually, text, STEP};
use parking_lot::Mutex;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, LoggingLevel, LoggingMessageNotificationParam,
    ReadResourceRequestParams, ResourceContents, ResourceUpdatedNotificationParam,
    SetLevelRequestParams,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};

/// What the client heard: log messages and updated resources.
#[derive(Clone, Default)]
struct Heard {
    logs: Arc<Mutex<Vec<LoggingMessageNotificationParam>>>,
    updated: Arc<Mutex<Vec<(String, std::time::Instant)>>>,
}

impl ClientHandler for Heard {
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logs.lock().push(params);
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.updated
            .lock()
            .push((params.uri, std::time::Instant::now()));
    }
}

struct Client {
    service: RunningService<RoleClient, Heard>,
    heard: Heard,
    _dir: tempfile::TempDir,
}

/// `gabp mcp` with game `id` run as `sh -c SCRIPT`, where the script ends in `exec gabp mod`.
async fn start(id: &str, script: &str) -> Client {
    let dir = tempfile::tempdir().unwrap();
    let gabp = env!("CARGO_BIN_EXE_gabp");
    let config = json!({ "version": "1.0", "games": { id: {
        "id": id, "name": id, "launchMode": "DirectPath", "target": "sh",
        "args": ["-c", format!("{script}\nexec '{gabp}' mod")],
        "env": {"RUST_LOG": "warn"},
    }}, "timeouts": {"startup": {"gabpConnectSeconds": 30}} });
    std::fs::write(dir.path().join("config.json"), config.to_string()).unwrap();
    let transport = TokioChildProcess::new(mcp_support::command(dir.path())).unwrap();
    let heard = Heard::default();
    let service = tokio::time::timeout(STEP, heard.clone().serve(transport))
        .await
        .unwrap()
        .unwrap();
    Client {
        service,
        heard,
        _dir: dir,
    }
}

impl Client {
    async fn call(&self, name: &str, args: Value) -> CallToolResult {
        let Value::Object(map) = args else {
            panic!("arguments are an object")
        };
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(map);
        tokio::time::timeout(STEP, self.service.call_tool(params))
            .await
            .unwrap()
            .unwrap()
    }

    async fn ok(&self, name: &str, args: Value) -> Value {
        let result = self.call(name, args.clone()).await;
        assert_ne!(
            result.is_error,
            Some(true),
            "{name} {args}: {}",
            text(&result)
        );
        result.structured_content.unwrap_or(Value::Null)
    }

    async fn read(&self, uri: &str) -> String {
        let read = self
            .service
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .unwrap_or_else(|e| panic!("read {uri}: {e}"));
        match &read.contents[0] {
            ResourceContents::TextResourceContents { text, .. } => text.clone(),
            other => panic!("{other:?}"),
        }
    }

    async fn set_level(&self, level: LoggingLevel) {
        self.service
            .set_level(SetLevelRequestParams::new(level))
            .await
            .expect("logging/setLevel is answered");
    }

    /// Whether a log message `check` accepts arrives within `limit`.
    async fn heard_log(
        &self,
        limit: Duration,
        check: impl Fn(&LoggingMessageNotificationParam) -> bool,
    ) -> bool {
        eventually(limit, || self.heard.logs.lock().iter().any(&check)).await
    }
}

fn console(message: &LoggingMessageNotificationParam, line: &str) -> bool {
    message.data["text"] == line
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_is_a_tool_a_resource_and_log_messages_at_the_level_set() {
    let client = start("noisy", "echo hello-out; echo oops-err >&2").await;
    client.ok("games_start", json!({"gameId": "noisy"})).await;
    // The pipes are read apart from the start: wait (generously) until both lines are in.
    let mut logs = Value::Null;
    for _ in 0..200 {
        logs = client
            .ok("games_logs", json!({"gameId": "noisy", "tail": 10}))
            .await;
        if logs["matched"].as_u64() >= Some(2) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let lines = logs["lines"].as_array().unwrap();
    let find = |text: &str| lines.iter().find(|l| l["text"] == text).cloned();
    assert_eq!(find("hello-out").unwrap()["stream"], "stdout", "{logs}");
    assert_eq!(find("oops-err").unwrap()["stream"], "stderr", "{logs}");
    assert_eq!(logs["truncated"], false);
    // Nothing is sent before the client sets a level.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        client.heard.logs.lock().is_empty(),
        "{:?}",
        client.heard.logs.lock()
    );

    let grep = client
        .ok("games_logs", json!({"gameId": "noisy", "grep": "^oops"}))
        .await;
    assert_eq!(grep["lines"].as_array().unwrap().len(), 1, "{grep}");
    assert_eq!(grep["matched"], 1);
    let bad = client
        .call("games_logs", json!({"gameId": "noisy", "grep": "("}))
        .await;
    assert_eq!(bad.is_error, Some(true));
    assert!(text(&bad).contains("'grep'"), "{}", text(&bad));
    let bad = client
        .call("games_logs", json!({"gameId": "noisy", "tail": 0}))
        .await;
    assert_eq!(bad.is_error, Some(true));

    let resource = client.read("gabp-game://noisy/logs").await;
    assert!(resource.contains("[stdout] hello-out"), "{resource}");
    assert!(resource.contains("[stderr] oops-err"), "{resource}");
    let listed = client.service.list_all_resources().await.unwrap();
    assert!(listed.iter().any(|r| r.uri == "gabp-game://noisy/logs"));

    // At info: the hub's messages and both outputs, stdout at info and stderr at warning.
    client.set_level(LoggingLevel::Info).await;
    client.ok("games_stop", json!({"gameId": "noisy"})).await;
    client.ok("games_start", json!({"gameId": "noisy"})).await;
    assert!(
        client
            .heard_log(STEP, |m| console(m, "hello-out")
                && m.level == LoggingLevel::Info)
            .await,
        "{:?}",
        client.heard.logs.lock()
    );
    assert!(
        client
            .heard_log(STEP, |m| console(m, "oops-err")
                && m.level == LoggingLevel::Warning)
            .await
    );
    assert!(
        client
            .heard_log(STEP, |m| m.logger.as_deref() == Some("gabp-hub")
                && m.data["status"] == "connected")
            .await,
        "{:?}",
        client.heard.logs.lock()
    );

    // At error: a crash is said, and nothing below error is sent any more.
    client.set_level(LoggingLevel::Error).await;
    let before = client.heard.logs.lock().len();
    let status = client.ok("games_status", json!({"gameId": "noisy"})).await;
    let pid = status["pid"].as_u64().unwrap();
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(
        client
            .heard_log(STEP, |m| m.level == LoggingLevel::Error
                && m.data["status"] == "exited")
            .await,
        "{:?}",
        client.heard.logs.lock()
    );
    let after: Vec<_> = client.heard.logs.lock()[before..].to_vec();
    assert!(
        after.iter().all(|m| m.level == LoggingLevel::Error),
        "{after:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chatty_game_does_not_flood_the_client() {
    let client = start(
        "chatty",
        "i=0; while [ $i -lt 1500 ]; do echo line-$i; i=$((i+1)); done",
    )
    .await;
    client.set_level(LoggingLevel::Debug).await;
    client.ok("games_start", json!({"gameId": "chatty"})).await;
    assert!(
        client.heard_log(STEP, |m| m.data["dropped"] == true).await,
        "no message about dropped lines"
    );
    let lines = client
        .heard
        .logs
        .lock()
        .iter()
        .filter(|m| m.data["stream"] == "stdout")
        .count();
    assert!(lines < 1500, "{lines} lines sent");
    // All of them are still there to read (once the pipe is read to where the game is).
    let mut logs = Value::Null;
    for _ in 0..100 {
        logs = client
            .ok(
                "games_logs",
                json!({"gameId": "chatty", "tail": 1000, "grep": "^line-"}),
            )
            .await;
        if logs["matched"] == 1500 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(logs["matched"], 1500, "{}", logs["matched"]);
    assert_eq!(logs["lines"].as_array().unwrap().len(), 1000);
    assert_eq!(logs["lines"][999]["text"], "line-1499");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscribed_event_resource_is_pushed_and_read_since_the_last_read() {
    let client = start("voxel", "true").await;
    client.ok("games_start", json!({"gameId": "voxel"})).await;
    let uri = "gabp-game://voxel/events/world/block_change";
    // Not an event resource until the channel is subscribed.
    let early = client
        .service
        .subscribe(rmcp::model::SubscribeRequestParams::new(uri))
        .await;
    assert!(early.is_err(), "{early:?}");
    client
        .ok(
            "games_subscribe",
            json!({"channels": ["world/block_change"]}),
        )
        .await;
    let listed = client.service.list_all_resources().await.unwrap();
    assert!(listed.iter().any(|r| r.uri == uri), "{listed:?}");
    // An event before the resource subscription is not part of the first read.
    let place = |x: i64| {
        json!({"tool": "voxel_world_place_block",
        "arguments": {"x": x, "y": 6, "z": 0, "blockType": "sand"}})
    };
    client.ok("games_call_tool", place(0)).await;
    client
        .service
        .subscribe(rmcp::model::SubscribeRequestParams::new(uri))
        .await
        .expect("resources/subscribe");

    let called = std::time::Instant::now();
    client.ok("games_call_tool", place(1)).await;
    assert!(
        eventually(Duration::from_secs(2), || {
            client.heard.updated.lock().iter().any(|(u, _)| u == uri)
        })
        .await,
        "no notifications/resources/updated for {uri} within 2 s"
    );
    let heard_after = client.heard.updated.lock()[0].1.duration_since(called);
    eprintln!("resources/updated {heard_after:?} after the call was sent");
    let read: Value = serde_json::from_str(&client.read(uri).await).unwrap();
    let xs: Vec<i64> = read["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["payload"]["x"].as_i64().unwrap())
        .collect();
    assert_eq!(xs, [1], "{read}");
    assert_eq!(read["gaps"], json!([]));
    let again: Value = serde_json::from_str(&client.read(uri).await).unwrap();
    assert_eq!(again["events"], json!([]), "{again}");

    // Unsubscribed: no more updates, but the events are still read from where this client was.
    client
        .service
        .unsubscribe(rmcp::model::UnsubscribeRequestParams::new(uri))
        .await
        .unwrap();
    let heard = client.heard.updated.lock().len();
    client.ok("games_call_tool", place(2)).await;
    let read: Value = serde_json::from_str(&client.read(uri).await).unwrap();
    assert_eq!(read["events"][0]["payload"]["x"], 2, "{read}");
    assert_eq!(client.heard.updated.lock().len(), heard);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_game_printed_before_it_died_is_in_the_error_launch_log_and_games_logs() {
    let client = start(
        "dies",
        "echo started-out; echo boom-before-exit >&2; exit 3",
    )
    .await;
    let failed = client.call("games_start", json!({"gameId": "dies"})).await;
    assert_eq!(failed.is_error, Some(true));
    let message = text(&failed);
    assert!(
        message.contains("exited during start") && message.contains("boom-before-exit"),
        "{message}"
    );
    let log = std::fs::read_to_string(client._dir.path().join("dies/launch.log")).unwrap();
    assert!(
        log.contains("started-out\n") && log.contains("boom-before-exit\n"),
        "{log}"
    );
    let logs = client.ok("games_logs", json!({"gameId": "dies"})).await;
    // Each output is in order; the two are read apart, so their lines may interleave either way.
    let mut texts: Vec<&str> = logs["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["text"].as_str().unwrap())
        .collect();
    texts.sort_unstable();
    assert_eq!(texts, ["boom-before-exit", "started-out"], "{logs}");
}
