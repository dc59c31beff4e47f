//! The hub tools' implementations, by what they act on.

mod control;
mod discovery;
mod lifecycle;
pub(crate) mod logs;
mod play;

use std::time::Duration;

use gabp_hub::config::{tool_call_seconds, TOOL_CALL_SECONDS_EXPECTED};
use gabp_hub::Hub;
use rmcp::model::{CallToolResult, RequestMetaObject};
use rmcp::ErrorData as McpError;
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use crate::catalog::HubTool;
use crate::reply::{Args, Reply};

pub(crate) use play::{call_game_tool, ProgressTo};

/// The `_meta` member of a `tools/call` that sets its time limit in seconds (docs/mcp.md §Timeouts).
pub(crate) const TIMEOUT_META: &str = "gabp/timeoutSeconds";

/// The time limit a call's `_meta` asks for.
///
/// # Errors
///
/// Invalid params, naming `_meta/gabp/timeoutSeconds`, when it is not a number of seconds in range.
pub(crate) fn meta_timeout(meta: &RequestMetaObject) -> Result<Option<Duration>, McpError> {
    match meta.get(TIMEOUT_META) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => tool_call_seconds(value).map(Some).ok_or_else(|| {
            McpError::invalid_params(
                format!("_meta/{TIMEOUT_META}: {TOOL_CALL_SECONDS_EXPECTED}, got {value}"),
                Some(json!({ "path": "/_meta/gabp~1timeoutSeconds" })),
            )
        }),
    }
}

/// Runs hub tool `tool` with `arguments`; `timeout` is the game call time limit the call's `_meta` asks for.
pub(crate) async fn run(
    hub: &Hub,
    tool: &HubTool,
    arguments: Option<&Map<String, Value>>,
    cancel: &CancellationToken,
    progress: ProgressTo,
    timeout: Option<Duration>,
) -> CallToolResult {
    let outcome = async {
        // Every hub tool needs the configured games.
        hub.check_config()?;
        let args = Args::new(tool, arguments)?;
        let reply = match tool.name {
            "games_list" => with_config_problem(hub, lifecycle::list(hub)),
            "games_show" => lifecycle::show(hub, &args)?,
            "games_status" => lifecycle::status(hub, &args)?,
            "games_start" => lifecycle::start(hub, &args).await?,
            "games_stop" => lifecycle::stop(hub, &args, false).await?,
            "games_kill" => lifecycle::stop(hub, &args, true).await?,
            "games_connect" => lifecycle::connect(hub, &args).await?,
            "games_tool_names" => discovery::tool_names(hub, &args).await?,
            "games_tools" => discovery::tools(hub, &args).await?,
            "games_tool_detail" => discovery::tool_detail(hub, &args).await?,
            "games_call_tool" => {
                return play::call_tool(hub, &args, cancel, progress, timeout).await
            }
            "games_get_attention" => play::get_attention(hub, &args).await?,
            "games_ack_attention" => play::ack_attention(hub, &args).await?,
            "games_subscribe" => play::subscribe(hub, &args).await?,
            "games_unsubscribe" => play::unsubscribe(hub, &args)?,
            "games_events" => play::events(hub, &args).await?,
            "games_logs" => logs::logs(hub, &args)?,
            "games_time" => control::time(hub, &args).await?,
            "games_input" => control::input(hub, &args).await?,
            other => Reply::error(
                "unknown_tool",
                format!("Unknown tool '{other}'"),
                Value::Null,
            ),
        };
        Ok::<CallToolResult, Reply>(reply.into_result())
    };
    outcome.await.unwrap_or_else(Reply::into_result)
}

/// `reply` with a warning when `config.json` is invalid now and the last valid configuration is in effect.
fn with_config_problem(hub: &Hub, mut reply: Reply) -> Reply {
    if let Some(problem) = hub.config_problem() {
        reply.text = format!(
            "Warning: {problem}. Until then the last valid configuration is in effect.\n{}",
            reply.text
        );
        reply.structured["configProblem"] = json!({
            "file": problem.path,
            "field": problem.pointer,
            "expected": problem.expected,
            "message": problem.to_string(),
        });
    }
    reply
}
