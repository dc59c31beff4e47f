//! The hub tools' implementations, by what they act on.

mod discovery;
mod lifecycle;
pub(crate) mod logs;
mod play;

use gabp_hub::Hub;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::catalog::HubTool;
use crate::reply::{Args, Reply};

pub(crate) use play::{call_game_tool, ProgressTo, CALL_TIMEOUT};

/// Runs hub tool `tool` with `arguments`.
pub(crate) async fn run(
    hub: &Hub,
    tool: &HubTool,
    arguments: Option<&Map<String, Value>>,
    cancel: &CancellationToken,
    progress: ProgressTo,
) -> CallToolResult {
    let outcome = async {
        let args = Args::new(tool, arguments)?;
        let reply = match tool.name {
            "games_list" => lifecycle::list(hub),
            "games_show" => lifecycle::show(hub, &args)?,
            "games_status" => lifecycle::status(hub, &args)?,
            "games_start" => lifecycle::start(hub, &args).await?,
            "games_stop" => lifecycle::stop(hub, &args, false).await?,
            "games_kill" => lifecycle::stop(hub, &args, true).await?,
            "games_connect" => lifecycle::connect(hub, &args).await?,
            "games_tool_names" => discovery::tool_names(hub, &args).await?,
            "games_tools" => discovery::tools(hub, &args).await?,
            "games_tool_detail" => discovery::tool_detail(hub, &args).await?,
            "games_call_tool" => return play::call_tool(hub, &args, cancel, progress).await,
            "games_get_attention" => play::get_attention(hub, &args).await?,
            "games_ack_attention" => play::ack_attention(hub, &args).await?,
            "games_subscribe" => play::subscribe(hub, &args).await?,
            "games_unsubscribe" => play::unsubscribe(hub, &args)?,
            "games_events" => play::events(hub, &args).await?,
            "games_logs" => logs::logs(hub, &args)?,
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
