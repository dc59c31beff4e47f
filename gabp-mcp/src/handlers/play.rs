//! The hub tools that act on a connected game: tool calls, attention, events.

use std::time::Duration;

use futures::StreamExt;
use gabp_hub::{AttentionView, Game, Hub, HubError};
use gabp_types::methods::ToolResult;
use gabp_types::Attention;
use rmcp::model::{CallToolResult, ContentBlock, ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::discovery::resolve;
use crate::reply::{Args, Reply};

/// The most bytes of arguments passed on to a game (the game's own frame limit is usually 1 MiB).
pub(crate) const MAX_ARGUMENTS: usize = 1 << 20;

/// Where a call's progress goes: the client's progress token and the client.
pub(crate) type ProgressTo = Option<(ProgressToken, Peer<RoleServer>)>;

/// Calls game tool `name` (mirrored, or with `game` its GABP name) with `arguments`, ending the call when
/// `cancel` fires or `timeout` passes (the game is told with `tools/cancel`). With `progress`, the game's
/// progress events go to the client as MCP progress notifications.
pub(crate) async fn call_game_tool(
    hub: &Hub,
    name: &str,
    game: Option<&str>,
    arguments: Value,
    timeout: Duration,
    cancel: &CancellationToken,
    progress: ProgressTo,
) -> Result<CallToolResult, Reply> {
    let size = arguments.to_string().len();
    if size > MAX_ARGUMENTS {
        return Err(Reply::error(
            "arguments_too_large",
            format!("The arguments are {size} bytes; at most {MAX_ARGUMENTS} are passed to a game"),
            json!({ "path": "/arguments", "limit": MAX_ARGUMENTS }),
        ));
    }
    let found = resolve(hub, name, game).await?;
    let (mut updates, call) = found
        .game
        .call_tool_with_progress(found.tool.name.as_str(), arguments)?;
    let call = async {
        tokio::pin!(call);
        loop {
            tokio::select! {
                biased;
                result = &mut call => return result,
                Some(item) = updates.next(), if progress.is_some() => {
                    if let Some((token, peer)) = &progress {
                        let mut note = ProgressNotificationParam::new(token.clone(), item.progress);
                        note.total = item.total;
                        note.message = item.message;
                        let _ = peer.notify_progress(note).await;
                    }
                }
            }
        }
    };
    let gated = tokio::select! {
        r = tokio::time::timeout(timeout, call) => match r {
            Ok(result) => result?,
            Err(_) => return Err(Reply::error(
                "timeout",
                format!(
                    "GABP tool call failed: no answer from game '{}' within {} s; give a longer limit with _meta {{\"gabp/timeoutSeconds\": N}} or timeouts.toolCallSeconds in config.json",
                    found.game.id(),
                    timeout.as_secs_f64()
                ),
                json!({ "gameId": found.game.id(), "timeoutSeconds": timeout.as_secs_f64() }),
            )),
        },
        () = cancel.cancelled() => return Err(Reply::error(
            "cancelled",
            "The call was cancelled by the client",
            json!({ "gameId": found.game.id() }),
        )),
    };
    Ok(game_result(gated.value, gated.attention.as_ref()))
}

/// A game tool's result as MCP content: its `text` member when it has one, else its JSON; its content items
/// (SPEC/1.0 extensions.md §content) as MCP images and audio, and image items of a `content` member as other
/// implementations send them; the value itself (without `_content`) as `structuredContent`, wrapped as
/// `{"value": ...}` when it is not an object.
pub(crate) fn game_result(value: Value, related: Option<&Attention>) -> CallToolResult {
    let ToolResult {
        value,
        content: items,
        ..
    } = ToolResult::from_value(value);
    let mut content = Vec::new();
    match value.get("text").and_then(Value::as_str) {
        Some(text) => content.push(ContentBlock::text(text)),
        None => content.push(ContentBlock::text(value.to_string())),
    }
    for item in &items {
        content.push(match item.kind() {
            "audio" => ContentBlock::audio(item.data(), item.mime_type()),
            _ => ContentBlock::image(item.data(), item.mime_type()),
        });
    }
    if let Some(items) = value.get("content").and_then(Value::as_array) {
        for item in items {
            if item.get("type").and_then(Value::as_str) == Some("image") {
                if let (Some(data), Some(mime)) = (
                    item.get("data").and_then(Value::as_str),
                    item.get("mimeType").and_then(Value::as_str),
                ) {
                    content.push(ContentBlock::image(data, mime));
                }
            }
        }
    }
    if let Some(a) = related {
        content.push(ContentBlock::text(format!(
            "Note: attention item '{}' opened while this call ran: {}. Review it with games_get_attention.",
            a.attention_id, a.summary
        )));
    }
    let structured = match value {
        Value::Object(_) => value,
        other => json!({ "value": other }),
    };
    let mut result = CallToolResult::success(content);
    result.structured_content = Some(structured);
    result
}

/// `games_call_tool`: its time limit is the `timeout` argument, else the call's `_meta` (`meta_timeout`), else
/// `timeouts.toolCallSeconds`.
pub(crate) async fn call_tool(
    hub: &Hub,
    args: &Args<'_>,
    cancel: &CancellationToken,
    progress: ProgressTo,
    meta_timeout: Option<Duration>,
) -> Result<CallToolResult, Reply> {
    let name = args.required_str("tool")?;
    let arguments = args
        .object("arguments")?
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    let timeout = match args.integer("timeout")? {
        Some(t @ 1..=3600) => Duration::from_secs(t.unsigned_abs()),
        Some(_) => {
            return Err(Reply::error(
                "timeout_out_of_range",
                "Argument 'timeout' must be an integer between 1 and 3600 seconds",
                json!({ "path": "/timeout" }),
            ))
        }
        None => meta_timeout.unwrap_or_else(|| hub.config().tool_call_timeout()),
    };
    call_game_tool(
        hub,
        name,
        args.str("gameId")?,
        arguments,
        timeout,
        cancel,
        progress,
    )
    .await
}

fn connected<'h>(hub: &'h Hub, args: &Args<'_>) -> Result<&'h Game, Reply> {
    Ok(hub.game_or_connected(args.str("gameId")?)?)
}

pub(crate) async fn get_attention(hub: &Hub, args: &Args<'_>) -> Result<Reply, Reply> {
    let game = connected(hub, args)?;
    let id = game.id();
    match game.attention().await? {
        AttentionView::Unsupported => Ok(Reply::ok(
            format!("Game '{id}' does not advertise attention support."),
            json!({ "gameId": id, "supported": false, "attention": null }),
        )),
        AttentionView::Current(None) => Ok(Reply::ok(
            format!("Game '{id}' has no open attention item."),
            json!({ "gameId": id, "supported": true, "attention": null, "blocking": false }),
        )),
        AttentionView::Current(Some(a)) => Ok(Reply::ok(
            format!(
                "Game '{id}' has an open {} attention item '{}'. {}",
                json!(a.severity).as_str().unwrap_or("error"),
                a.attention_id,
                a.summary
            ),
            json!({ "gameId": id, "supported": true, "blocking": a.blocking, "attention": a }),
        )),
    }
}

pub(crate) async fn ack_attention(hub: &Hub, args: &Args<'_>) -> Result<Reply, Reply> {
    let game = connected(hub, args)?;
    let attention_id = args.required_str("attentionId")?;
    let id = game.id();
    let ack = game.ack_attention(attention_id).await?;
    let mut text = if ack.acknowledged {
        format!("Acknowledged attention '{attention_id}' for game '{id}'.")
    } else {
        format!("Attention '{attention_id}' was not acknowledged for game '{id}'.")
    };
    if let Some(current) = &ack.current_attention {
        text.pop();
        text.push_str(&format!(" Current attention: {}", current.summary));
    }
    let mut reply = Reply::ok(
        text,
        json!({
            "gameId": id, "supported": true, "acknowledged": ack.acknowledged,
            "attentionId": attention_id, "currentAttention": ack.current_attention,
        }),
    );
    reply.is_error = !ack.acknowledged;
    Ok(reply)
}

pub(crate) async fn subscribe(hub: &Hub, args: &Args<'_>) -> Result<Reply, Reply> {
    let game = connected(hub, args)?;
    let channels = args.strings("channels")?;
    if channels.is_empty() {
        return Err(Reply::error(
            "invalid_argument",
            "Argument 'channels' must name at least one channel",
            json!({ "path": "/channels" }),
        ));
    }
    let now = game.subscribe(&channels).await?;
    let missing: Vec<&String> = channels.iter().filter(|c| !now.contains(c)).collect();
    let mut text = format!(
        "Game '{}': subscribed to {}. Read the events with games_events.",
        game.id(),
        now.join(", ")
    );
    if !missing.is_empty() {
        text.push_str(&format!(
            " The game does not offer: {}.",
            missing
                .iter()
                .map(|c| c.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(Reply::ok(
        text,
        json!({ "gameId": game.id(), "channels": now, "refused": missing }),
    ))
}

pub(crate) fn unsubscribe(hub: &Hub, args: &Args<'_>) -> Result<Reply, Reply> {
    let game = connected(hub, args)?;
    let channels = args.strings("channels")?;
    let now = game.unsubscribe(&channels);
    Ok(Reply::ok(
        format!(
            "Game '{}': subscribed to {} channel(s) now.",
            game.id(),
            now.len()
        ),
        json!({ "gameId": game.id(), "channels": now }),
    ))
}

pub(crate) async fn events(hub: &Hub, args: &Args<'_>) -> Result<Reply, Reply> {
    let game = connected(hub, args)?;
    let wait = match args.integer("waitMs")? {
        None => Duration::ZERO,
        Some(ms @ 0..=30_000) => Duration::from_millis(ms.unsigned_abs()),
        Some(_) => {
            return Err(Reply::error(
                "invalid_argument",
                "Argument 'waitMs' must be an integer from 0 to 30000",
                json!({ "path": "/waitMs" }),
            ))
        }
    };
    let batch = game
        .events(args.str("cursor")?, wait)
        .await
        .map_err(|e| match e {
            HubError::BadCursor => Reply::error(
                "bad_cursor",
                format!("{e}; leave 'cursor' out to read from the oldest event kept"),
                json!({ "path": "/cursor" }),
            ),
            other => other.into(),
        })?;
    let mut text = format!(
        "Game '{}': {} event(s), cursor {}.",
        game.id(),
        batch.events.len(),
        batch.cursor
    );
    for gap in &batch.gaps {
        text.push_str(&format!(
            " Gap: {} event(s) lost ({}{}).",
            gap.missed,
            gap.reason,
            gap.channel
                .as_deref()
                .map(|c| format!(", {c}"))
                .unwrap_or_default()
        ));
    }
    if game.subscribed_channels().is_empty() {
        text.push_str(" No channel is subscribed: use games_subscribe first.");
    }
    Ok(Reply::ok(
        text,
        json!({ "gameId": game.id(), "events": batch.events, "gaps": batch.gaps, "cursor": batch.cursor }),
    ))
}
