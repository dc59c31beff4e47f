//! The limit checks: the advertised `maxMessageSize`, and concurrent requests (SPEC/1.0/transport.md §8).

use gabp_types::MessageId;
use serde_json::json;
use tokio::time::Instant;

use super::{expect_result, CheckResult, Ctx, Verdict, DEFAULT_MAX_MESSAGE_SIZE};
use crate::conformance::wire::{seconds, Incoming, WireError};
use crate::proxy::padded_request;

pub(super) async fn limits_advertised(ctx: &mut Ctx) -> CheckResult {
    let advertised = ctx
        .welcome
        .as_ref()
        .and_then(|w| w["capabilities"]["limits"]["maxMessageSize"].as_u64());
    match advertised {
        Some(limit) => {
            ctx.limit = Some(limit);
            Ok(())
        }
        None if !ctx.strict() => skip!(
            "capabilities.limits is optional upstream; the size checks assume the default of \
             {DEFAULT_MAX_MESSAGE_SIZE} bytes"
        ),
        None => fail!(
            "capabilities.limits.maxMessageSize is not advertised (a mod advertises the limits it enforces; \
             the size checks assume the default of {DEFAULT_MAX_MESSAGE_SIZE} bytes)"
        ),
    }
}

pub(super) async fn limits_max_message_size_accepted(ctx: &mut Ctx) -> CheckResult {
    let (limit, assumed) = ctx.message_limit()?;
    let size = usize::try_from(limit).unwrap_or(usize::MAX);
    let which = if assumed {
        "the default maxMessageSize"
    } else {
        "the advertised maxMessageSize"
    };
    let mut wire = ctx.session().await?;
    let id = MessageId::new_v4();
    let probe = ctx.probe();
    wire.register(id, probe, true);
    let what = format!("a {probe} of exactly {limit} bytes, {which}");
    wire.send_body(&padded_request(id, probe, size))
        .await
        .map_err(|e| Verdict::Fail(format!("{what}: {e}")))?;
    match wire.response_to(id, ctx.deadline(), ctx.answer()).await {
        Ok(r) => {
            expect_result(&r, &what)?;
            Ok(())
        }
        Err(WireError::Timeout(_)) if wire.stray.iter().any(|r| r.id.is_nil()) => fail!(
            "{what} was refused as oversized: the mod enforces a smaller limit than it advertises"
        ),
        Err(e) => fail!("{what}: {e}"),
    }
}

pub(super) async fn concurrency_no_head_of_line_blocking(ctx: &mut Ctx) -> CheckResult {
    let slow = ctx.options.slow_call;
    let nonce = MessageId::new_v4().to_string();
    let (Some((fast_tool, fast)), Some((slow_tool, sleep))) =
        (ctx.fast_call(&nonce), ctx.slow_call(slow.as_millis()))
    else {
        skip!("needs a slow and a fast tool: the mod lists no demo/sleep and demo/echo, and none is given");
    };
    let mut wire = ctx.session().await?;
    let sleep_args = json!({ "name": slow_tool, "arguments": sleep });
    let echo_args = json!({ "name": fast_tool, "arguments": fast });
    let sleep_id = wire.send_request("tools/call", Some(sleep_args)).await?;
    let echo_id = wire.send_request("tools/call", Some(echo_args)).await?;
    let waited = slow + ctx.answer();
    let deadline = Instant::now() + waited;
    let (mut echo, mut sleep) = (false, false);
    while !(echo && sleep) {
        let (response, answers) = match wire.next(deadline, waited).await {
            Ok(Incoming::Response { response, answers }) => (response, answers),
            Ok(Incoming::Event(event)) => {
                wire.events.push(event);
                continue;
            }
            Ok(Incoming::Other) => continue,
            Err(WireError::Timeout(t)) => {
                let missing = if echo { &slow_tool } else { &fast_tool };
                fail!("no answer to {missing} within {}", seconds(t));
            }
            Err(e) => return Err(e.into()),
        };
        // By id; when the ids are wrong (another check's business), by content.
        let is_echo = match answers {
            Some(id) if id == echo_id => true,
            Some(id) if id == sleep_id => false,
            _ if response.id.is_nil() => continue,
            _ => response
                .result()
                .is_some_and(|v| v.to_string().contains(&nonce)),
        };
        let tool = if is_echo { &fast_tool } else { &slow_tool };
        expect_result(&response, tool)?;
        if is_echo {
            if sleep {
                fail!("{fast_tool} was answered only after {slow_tool}: a slow call held up a fast one");
            }
            echo = true;
        } else {
            sleep = true;
        }
    }
    Ok(())
}
