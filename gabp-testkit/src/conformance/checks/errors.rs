//! The error checks: unknown methods, invalid params, and what is never answered (SPEC/1.0/gabp.md §8).

use std::collections::HashMap;

use gabp_types::{ErrorCode, MessageId};
use serde_json::{json, Value};

use super::{
    describe, expect_error, expect_error_list, kept_open, short, still_works, CheckResult, Ctx,
    Verdict,
};

pub(super) async fn errors_method_not_found(ctx: &mut Ctx) -> CheckResult {
    const METHOD: &str = "conformance/no_such_method";
    let mut wire = ctx.session().await?;
    let what = "an unknown method";
    let r = wire
        .call(METHOD, Some(json!({})), ctx.answer())
        .await
        .map_err(|e| kept_open(e, what))?;
    let e = expect_error(&r, ErrorCode::METHOD_NOT_FOUND, what)?;
    let named = e.data.as_ref().and_then(|d| d.get("method"));
    if ctx.strict() && named.and_then(Value::as_str) != Some(METHOD) {
        fail!(
            "-32601 must carry data.method = {METHOD:?}, got data {}",
            e.data.as_ref().map_or_else(|| "none".to_owned(), short)
        );
    }
    Ok(())
}

pub(super) async fn errors_invalid_params(ctx: &mut Ctx) -> CheckResult {
    let (method, params, what) = if ctx.advertises("tools/call") {
        (
            "tools/call",
            json!({ "name": 42 }),
            "tools/call with a number as the tool name",
        )
    } else {
        (
            "session/ping",
            json!({ "unexpected": true }),
            "session/ping with an unknown param",
        )
    };
    let mut wire = ctx.session().await?;
    let r = wire
        .call(method, Some(params), ctx.answer())
        .await
        .map_err(|e| kept_open(e, what))?;
    let e = expect_error(&r, ErrorCode::INVALID_PARAMS, what)?;
    expect_error_list(ctx, e, what)
}

pub(super) async fn errors_responses_not_answered(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.session().await?;
    let probes = [
        ("a valid response", r#""type":"response","result":{}"#),
        (
            "a response with neither result nor error",
            r#""type":"response""#,
        ),
        (
            "an event",
            r#""type":"event","channel":"conformance/probe","seq":0,"payload":{}"#,
        ),
    ];
    let mut sent = HashMap::new();
    for (what, rest) in probes {
        let id = MessageId::new_v4();
        wire.register(id, what, false);
        sent.insert(id, what);
        let body = format!(r#"{{"v":"gabp/1","id":"{id}",{rest}}}"#);
        wire.send_body(body.as_bytes()).await?;
    }
    // Two round trips: whatever the mod answers to the probes arrives before the second ping's answer.
    for _ in 0..2 {
        still_works(&mut wire, ctx, "a response and an event from the bridge").await?;
    }
    if let Some(r) = wire.stray.first() {
        let answered = sent.get(&r.id).copied().unwrap_or("a response or an event");
        fail!(
            "the mod answered {answered} from the bridge ({}); it must never answer responses or events",
            describe(r).trim_start_matches("with ")
        );
    }
    Ok(())
}
