//! The extension checks (SPEC/1.0 extensions.md): each runs when the mod advertises its extension and is skipped
//! otherwise.

use std::time::Duration;

use gabp_types::decode::check_result;
use gabp_types::methods::{ToolResult, CONTENT_MEMBER};
use gabp_types::ErrorCode;
use serde_json::{json, Value};

use super::{describe, expect_error, expect_result, short, CheckResult, Ctx, Verdict};
use crate::conformance::wire::{Incoming, WireError};

/// How long a check listens for what must not come.
const QUIET: Duration = Duration::from_millis(300);

/// The capability object of `key`, or a skip.
fn extension(ctx: &Ctx, key: &str) -> Result<Value, Verdict> {
    match ctx
        .welcome
        .as_ref()
        .map(|w| &w["capabilities"]["extensions"][key])
    {
        Some(value @ Value::Object(_)) => Ok(value.clone()),
        _ => skip!("the mod does not advertise the {key} extension"),
    }
}

pub(super) async fn extensions_progress(ctx: &mut Ctx) -> CheckResult {
    let ext = extension(ctx, "progress")?;
    if ext["channel"] != "tools/progress" {
        fail!(
            "the progress extension names the channel {} instead of \"tools/progress\"",
            short(&ext["channel"])
        );
    }
    let mut wire = ctx.session().await?;
    let (fast, fast_args) = ctx
        .fast_call("1")
        .unwrap_or_else(|| ("demo/echo".to_owned(), json!({"value": 1})));
    let bad = json!({"name": fast, "arguments": fast_args, "_meta": {"progressToken": [1]}});
    let r = wire.call("tools/call", Some(bad), ctx.answer()).await?;
    expect_error(
        &r,
        ErrorCode::INVALID_PARAMS,
        "a progressToken that is an array",
    )?;
    let Some((slow, slow_args)) = ctx.slow_call(400) else {
        skip!("a wrong token is refused; no slow tool known (demo/sleep) to see progress events");
    };
    let params =
        json!({"name": slow, "arguments": slow_args, "_meta": {"progressToken": "conformance"}});
    let id = wire.send_request("tools/call", Some(params)).await?;
    let answer = wire.response_to(id, ctx.deadline(), ctx.answer()).await?;
    expect_result(&answer, &format!("{slow} with a progress token"))?;
    let before: Vec<_> = wire
        .events
        .drain(..)
        .filter(|e| e.channel.as_str() == "tools/progress")
        .collect();
    // Progress is advisory: a call may report nothing; what it reports must fit the rules.
    if let Some(e) = before
        .iter()
        .find(|e| e.payload["progressToken"] != "conformance")
    {
        fail!(
            "a progress event carries the token {} instead of \"conformance\"",
            short(&e.payload["progressToken"])
        );
    }
    match wire.next(tokio::time::Instant::now() + QUIET, QUIET).await {
        Ok(Incoming::Event(e)) if e.channel.as_str() == "tools/progress" => {
            fail!(
                "a progress event came after the call's answer (seq {})",
                e.seq
            )
        }
        Ok(_) | Err(WireError::Timeout(_)) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

pub(super) async fn extensions_cancel(ctx: &mut Ctx) -> CheckResult {
    extension(ctx, "cancel")?;
    let mut wire = ctx.session().await?;
    let unknown = json!({"id": gabp_types::MessageId::new_v4().as_str()});
    let r = wire
        .call("tools/cancel", Some(unknown), ctx.answer())
        .await?;
    let result = expect_result(&r, "tools/cancel of an unknown id")?;
    if result["cancelled"] != false {
        fail!(
            "tools/cancel of an unknown id was answered {} instead of cancelled: false",
            short(result)
        );
    }
    let Some((slow, slow_args)) = ctx.slow_call(30000) else {
        skip!("an unknown id is harmless; no slow tool known (demo/sleep) to cancel in flight");
    };
    if !ctx.journal.id_violations().is_empty() {
        skip!("an unknown id is harmless; with two requests in flight, answers under wrong ids cannot be told apart (see responses.ids_match)");
    }
    let params = json!({"name": slow, "arguments": slow_args});
    let call = wire.send_request("tools/call", Some(params)).await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let r = wire
        .call(
            "tools/cancel",
            Some(json!({"id": call.as_str()})),
            ctx.answer(),
        )
        .await?;
    let result = expect_result(&r, "tools/cancel of a running call")?;
    if result["cancelled"] != true {
        fail!(
            "tools/cancel of a running {slow} was answered {}",
            short(result)
        );
    }
    let answer = wire.response_to(call, ctx.deadline(), ctx.answer()).await?;
    expect_error(&answer, ErrorCode::TOOL_CANCELLED, "the cancelled call")?;
    // Exactly one answer: a second one would be recorded as an id violation (responses.ids_match).
    Ok(())
}

pub(super) async fn extensions_time_control(ctx: &mut Ctx) -> CheckResult {
    let ext = extension(ctx, "time-control")?;
    for method in ["time/status", "time/pause", "time/resume", "time/step"] {
        if !ctx.advertises(method) {
            fail!("the mod advertises time-control but not the method {method}");
        }
    }
    if ext["channel"] != "time/changed" || !ctx.channels().iter().any(|c| c == "time/changed") {
        fail!("time-control needs the channel time/changed, in the extension and in capabilities.events");
    }
    let mut wire = ctx.session().await?;
    let start = time_state(
        &wire.call("time/status", None, ctx.answer()).await?,
        "time/status",
    )?;
    let paused = time_state(
        &wire.call("time/pause", None, ctx.answer()).await?,
        "time/pause",
    )?;
    let again = time_state(
        &wire.call("time/pause", None, ctx.answer()).await?,
        "time/pause",
    )?;
    if paused["paused"] != true || again != paused {
        fail!(
            "time/pause answered {} and a second time/pause {} (both must be paused with the same tick)",
            short(&paused),
            short(&again)
        );
    }
    let zero = wire
        .call("time/step", Some(json!({"ticks": 0})), ctx.answer())
        .await?;
    expect_error(&zero, ErrorCode::INVALID_PARAMS, "time/step of 0 ticks")?;
    let step = json!({"ticks": 2});
    let stepped = time_state(
        &wire.call("time/step", Some(step), ctx.answer()).await?,
        "time/step",
    )?;
    let tick = paused["tick"].as_u64().unwrap_or_default();
    if stepped["paused"] != true || stepped["tick"].as_u64() != Some(tick + 2) {
        fail!(
            "time/step of 2 ticks from tick {tick} answered {} (expected paused at tick {})",
            short(&stepped),
            tick + 2
        );
    }
    if start["paused"] == false {
        let resumed = time_state(
            &wire.call("time/resume", None, ctx.answer()).await?,
            "time/resume",
        )?;
        if resumed["paused"] != false {
            fail!("time/resume answered {}", short(&resumed));
        }
    }
    Ok(())
}

/// The time state `method` answered, checked against its schema.
fn time_state(r: &gabp_types::Response, method: &str) -> Result<Value, Verdict> {
    let result = expect_result(r, method)?.clone();
    if let Err(e) = check_result(method, &result) {
        fail!("the answer of {method} does not match its schema: {e}");
    }
    Ok(result)
}

pub(super) async fn extensions_content(ctx: &mut Ctx) -> CheckResult {
    let ext = extension(ctx, "content")?;
    let Some(max) = ext["maxBytes"].as_u64() else {
        fail!(
            "the content extension has no integer maxBytes ({})",
            short(&ext)
        );
    };
    if !ctx.has_tool("world/render") {
        skip!("maxBytes is {max}; no tool known to return a picture (world/render)");
    }
    let mut wire = ctx.session().await?;
    let r = wire
        .call(
            "tools/call",
            Some(json!({"name": "world/render"})),
            ctx.answer(),
        )
        .await?;
    let result = expect_result(&r, "world/render")?.clone();
    if let Err(e) = check_result("tools/call", &result) {
        fail!("the content items of world/render are not valid: {e}");
    }
    let split = ToolResult::from_value(result);
    if split.content.is_empty() {
        fail!(
            "world/render answered {} without {CONTENT_MEMBER}",
            describe(&r)
        );
    }
    let bytes = split.content_bytes() as u64;
    if bytes > max {
        fail!("world/render sent {bytes} bytes of content, over the advertised maxBytes of {max}");
    }
    Ok(())
}
