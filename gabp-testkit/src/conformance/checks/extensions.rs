//! The extension checks (SPEC/1.0 extensions.md): each runs when the mod advertises its extension and is skipped
//! otherwise.

use std::time::Duration;

use gabp_types::decode::check_result;
use gabp_types::methods::{Space, ToolResult, CONTENT_MEMBER};
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

pub(super) async fn extensions_input(ctx: &mut Ctx) -> CheckResult {
    let ext = extension(ctx, "input")?;
    if ext["keyNames"] != "KeyboardEvent.code" || !ext["maxTextChars"].is_u64() {
        fail!(
            "the input extension needs keyNames \"KeyboardEvent.code\" and an integer maxTextChars ({})",
            short(&ext)
        );
    }
    if !ctx.advertises("input/key") {
        fail!("the mod advertises input but not the method input/key");
    }
    let mut wire = ctx.session().await?;
    // Releasing a key nobody holds changes nothing in any game.
    let release = json!({"key": "ShiftLeft", "action": "release"});
    let r = wire.call("input/key", Some(release), ctx.answer()).await?;
    let result = expect_result(&r, "input/key of a release of ShiftLeft")?;
    if let Err(e) = check_result("input/key", result) {
        fail!("the answer of input/key does not match its schema: {e}");
    }
    for (params, what) in [
        (
            json!({"key": "Spacebar", "action": "tap"}),
            "input/key of the key name Spacebar (KeyboardEvent.code calls it Space)",
        ),
        (
            json!({"key": "ShiftLeft", "action": "hold"}),
            "input/key with the action hold",
        ),
    ] {
        let r = wire.call("input/key", Some(params), ctx.answer()).await?;
        expect_error(&r, ErrorCode::INVALID_PARAMS, what)?;
    }
    if ctx.advertises("input/text") {
        let r = wire
            .call("input/text", Some(json!({"text": ""})), ctx.answer())
            .await?;
        expect_error(&r, ErrorCode::INVALID_PARAMS, "input/text of no text")?;
    }
    Ok(())
}

/// The result of an `env/*` answer, checked against its schema.
fn env_result(r: &gabp_types::Response, method: &str) -> Result<Value, Verdict> {
    let result = expect_result(r, method)?.clone();
    if let Err(e) = check_result(method, &result) {
        fail!("the answer of {method} does not match its schema: {e}");
    }
    Ok(result)
}

/// `value` in `space`, or a failure naming `what`.
fn in_space(space: &Space, value: &Value, what: &str) -> CheckResult {
    match space.contains(value) {
        Ok(()) => Ok(()),
        Err(e) => fail!("{what} ({}) is outside its space: {e}", short(value)),
    }
}

pub(super) async fn extensions_env(ctx: &mut Ctx) -> CheckResult {
    let ext = extension(ctx, "env")?;
    if !ext["ticksPerStep"].is_u64() {
        fail!(
            "the env extension has no integer ticksPerStep ({})",
            short(&ext)
        );
    }
    for method in ["env/spaces", "env/reset", "env/step"] {
        if !ctx.advertises(method) {
            fail!("the mod advertises env but not the method {method}");
        }
    }
    let mut wire = ctx.session().await?;
    let spaces = env_result(
        &wire.call("env/spaces", None, ctx.answer()).await?,
        "env/spaces",
    )?;
    let (Ok(observation), Ok(action)) = (
        serde_json::from_value::<Space>(spaces["observation"].clone()),
        serde_json::from_value::<Space>(spaces["action"].clone()),
    ) else {
        fail!(
            "env/spaces answered spaces that break their rules: {}",
            short(&spaces)
        );
    };
    let seeded = json!({"seed": 7});
    let first = env_result(
        &wire
            .call("env/reset", Some(seeded.clone()), ctx.answer())
            .await?,
        "env/reset",
    )?;
    in_space(
        &observation,
        &first["observation"],
        "the observation of env/reset",
    )?;
    let outside = json!({"action": "conformance: no space holds a string"});
    let r = wire.call("env/step", Some(outside), ctx.answer()).await?;
    let e = expect_error(
        &r,
        ErrorCode::INVALID_PARAMS,
        "env/step of an action outside the space",
    )?;
    let path = e
        .data
        .as_ref()
        .and_then(|d| d["errors"][0]["path"].as_str())
        .unwrap_or_default();
    if ctx.strict() && !path.starts_with("/params/action") {
        fail!("env/step of an action outside the space was refused without the path /params/action (data: {})",
            e.data.as_ref().map_or_else(|| "none".to_owned(), short));
    }
    let mut state = 7_u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        state >> 11
    };
    let mut ended = false;
    for _ in 0..3 {
        let params = json!({"action": action.sample(&mut next)});
        let step = env_result(
            &wire.call("env/step", Some(params), ctx.answer()).await?,
            "env/step",
        )?;
        in_space(
            &observation,
            &step["observation"],
            "the observation of env/step",
        )?;
        if step["terminated"] == true || step["truncated"] == true {
            ended = true;
            break;
        }
    }
    if ended {
        let r = wire
            .call(
                "env/step",
                Some(json!({"action": action.sample(&mut next)})),
                ctx.answer(),
            )
            .await?;
        expect_error(
            &r,
            ErrorCode::TOOL_UNAVAILABLE,
            "env/step after the episode ended",
        )?;
    }
    let again = env_result(
        &wire.call("env/reset", Some(seeded), ctx.answer()).await?,
        "env/reset",
    )?;
    if again["observation"] != first["observation"] {
        fail!(
            "env/reset with the same seed started another episode: {} then {}",
            short(&first["observation"]),
            short(&again["observation"])
        );
    }
    Ok(())
}
