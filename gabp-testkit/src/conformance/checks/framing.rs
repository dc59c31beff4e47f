//! The framing checks: frames split and coalesced, bad bodies, bad envelopes, oversized frames and broken
//! headers (SPEC/1.0/transport.md §1, §7).

use std::time::Duration;

use gabp_types::{ErrorCode, MessageId};
use serde_json::{json, Value};

use super::{
    describe, expect_error, expect_result, kept_open, still_works, CheckResult, Ctx, Verdict,
};
use crate::conformance::wire::{seconds, Incoming, Wire, WireError};
use crate::proxy::padded_request;
use gabp_codec::encode_frame as frame;

pub(super) async fn framing_split_frames(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.session().await?;
    let id = MessageId::new_v4();
    let body = wire.request_body(id, ctx.probe(), Some(json!({})), true);
    let bytes = frame(&body);
    let mut at = 0;
    for size in [1, 2, 3, 5, 7, 11].into_iter().cycle() {
        if at >= bytes.len() {
            break;
        }
        let end = (at + size).min(bytes.len());
        wire.write(&bytes[at..end]).await?;
        at = end;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let what = "a frame written in pieces of 1 to 11 bytes";
    let r = wire
        .response_to(id, ctx.deadline(), ctx.answer())
        .await
        .map_err(|e| Verdict::Fail(format!("{what}: {e}")))?;
    expect_result(&r, what)?;
    Ok(())
}

pub(super) async fn framing_coalesced_frames(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.session().await?;
    let mut bytes = Vec::new();
    for _ in 0..3 {
        let body = wire.request_body(MessageId::new_v4(), ctx.probe(), Some(json!({})), true);
        bytes.extend_from_slice(&frame(&body));
    }
    wire.write(&bytes).await?;
    all_answered(&mut wire, ctx, 3, "frames").await
}

/// Waits for `count` answers to as many requests written at once (`what`, such as "frames").
async fn all_answered(wire: &mut Wire, ctx: &Ctx, count: usize, what: &str) -> CheckResult {
    let deadline = ctx.deadline();
    let mut answered = 0;
    while answered < count {
        match wire.next(deadline, ctx.answer()).await {
            Ok(Incoming::Response { response, .. }) if !response.id.is_nil() => answered += 1,
            Ok(Incoming::Event(event)) => wire.events.push(event),
            Ok(_) => {}
            Err(WireError::Timeout(t)) => fail!(
                "only {answered} of {count} {what} written at once were answered within {}",
                seconds(t)
            ),
            Err(e) => fail!("{count} {what} written at once: {e}"),
        }
    }
    Ok(())
}

pub(super) async fn framing_answers_whole(ctx: &mut Ctx) -> CheckResult {
    const REQUESTS: usize = 8;
    let mut wire = ctx.session().await?;
    let list = ctx.advertises("tools/list");
    let mut bytes = Vec::new();
    for n in 0..REQUESTS {
        // Answers of different sizes, as a mod's concurrent answers are.
        let method = if list && n % 2 == 1 {
            "tools/list"
        } else {
            ctx.probe()
        };
        let body = wire.request_body(MessageId::new_v4(), method, Some(json!({})), true);
        bytes.extend_from_slice(&frame(&body));
    }
    wire.write(&bytes).await?;
    all_answered(&mut wire, ctx, REQUESTS, "requests").await
}

pub(super) async fn framing_utf8_byte_length(ctx: &mut Ctx) -> CheckResult {
    const TEXT: &str = "h\u{e9}llo w\u{f6}rld \u{2713} \u{1f3ae} \u{fc}n\u{ef}c\u{f6}d\u{e9}";
    let mut wire = ctx.session().await?;
    let (method, params) = if ctx.advertises("tools/call") {
        let args = json!({ "name": "conformance/no_such_tool", "arguments": { "text": TEXT } });
        ("tools/call", args)
    } else {
        (ctx.probe(), json!({ "conformance": TEXT }))
    };
    let id = MessageId::new_v4();
    let body = wire.request_body(id, method, Some(params), true);
    let chars = String::from_utf8_lossy(&body).chars().count();
    wire.send_body(&body).await?;
    let what = format!(
        "a {method} whose body holds non-ASCII UTF-8 ({} bytes, {chars} characters)",
        body.len()
    );
    match wire.response_to(id, ctx.deadline(), ctx.answer()).await {
        Ok(_) => {}
        Err(WireError::Timeout(t)) => fail!(
            "{what} got no answer within {}: Content-Length counts bytes, and a mod that counts characters \
             waits for bytes that never come",
            seconds(t)
        ),
        Err(e) => return Err(kept_open(e, &what)),
    }
    still_works(&mut wire, ctx, &what).await
}

pub(super) async fn framing_unparseable_body(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.session().await?;
    let bodies: [(&str, &[u8]); 2] = [
        ("a body that is not JSON", br#"{"v":"gabp/1","id":"#),
        ("a body that is not UTF-8", &[0xff, 0xfe, b'{', b'}']),
    ];
    for (what, body) in bodies {
        wire.send_body(body).await?;
        let r = wire
            .unattributed_response(ctx.deadline(), ctx.answer())
            .await
            .map_err(|e| kept_open(e, what))?;
        if !r.id.is_nil() {
            fail!("{what} was answered with id {} instead of the nil id", r.id);
        }
        expect_error(&r, ErrorCode::PARSE_ERROR, what)?;
        still_works(&mut wire, ctx, what).await?;
    }
    Ok(())
}

pub(super) async fn framing_invalid_envelope(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.session().await?;
    let id = MessageId::new_v4();
    wire.register(id, "(a request without a method)", true);
    let body = format!(r#"{{"v":"gabp/1","id":"{id}","type":"request"}}"#);
    wire.send_body(body.as_bytes()).await?;
    let what = "a request without `method`";
    let r = match wire.response_to(id, ctx.deadline(), ctx.answer()).await {
        Ok(r) => r,
        Err(WireError::Timeout(t)) => match wire.stray.first() {
            Some(r) => fail!(
                "{what} was answered with id {} instead of the message's id {id}",
                r.id
            ),
            None => fail!("{what}: no answer within {}", seconds(t)),
        },
        Err(e) => return Err(kept_open(e, what)),
    };
    let allowed = [
        ErrorCode::INVALID_REQUEST,
        ErrorCode::MISSING_REQUIRED_FIELD,
        ErrorCode::INVALID_FIELD_VALUE,
    ];
    if !r.error_object().is_some_and(|e| allowed.contains(&e.code)) {
        fail!(
            "{what} was answered {} instead of error -32600, -32202 or -32203",
            describe(&r)
        );
    }
    still_works(&mut wire, ctx, what).await
}

pub(super) async fn framing_oversized_refused(ctx: &mut Ctx) -> CheckResult {
    let (limit, assumed) = ctx.message_limit()?;
    let size = usize::try_from(limit + 1).unwrap_or(usize::MAX);
    let mut wire = ctx.session().await?;
    let id = MessageId::new_v4();
    // Its answer, if the mod executes it, is recognised but not waited for.
    let probe = ctx.probe();
    wire.register(id, &format!("{probe} (oversized)"), false);
    let what = format!(
        "a frame of {} bytes, one over {} maxMessageSize of {limit}",
        limit + 1,
        if assumed {
            "the default"
        } else {
            "the advertised"
        }
    );
    wire.send_body(&padded_request(id, probe, size))
        .await
        .map_err(|e| {
            Verdict::Fail(format!(
                "{what}: {e} (the mod must skip the body and keep reading)"
            ))
        })?;
    let deadline = ctx.deadline();
    let refusal = loop {
        match wire.next(deadline, ctx.answer()).await {
            Ok(Incoming::Response {
                answers: Some(answered),
                ..
            }) if answered == id => fail!(
                "the mod executed {what} instead of refusing it with -32600 and skipping the body"
            ),
            Ok(Incoming::Response {
                response,
                answers: None,
            }) => break response,
            Ok(Incoming::Event(event)) => wire.events.push(event),
            Ok(_) => {}
            Err(e) => return Err(kept_open(e, &what)),
        }
    };
    if !refusal.id.is_nil() {
        fail!(
            "{what} was answered with id {} instead of the nil id",
            refusal.id
        );
    }
    let e = expect_error(&refusal, ErrorCode::INVALID_REQUEST, &what)?;
    let data_limit = e
        .data
        .as_ref()
        .and_then(|d| d.get("maxMessageSize"))
        .and_then(Value::as_u64);
    match data_limit {
        None => fail!("{what} was refused with -32600 but without data.maxMessageSize"),
        Some(stated) if !assumed && stated != limit => {
            fail!("the refusal says data.maxMessageSize = {stated}, the welcome advertises {limit}")
        }
        Some(_) => {}
    }
    still_works(&mut wire, ctx, "refusing an oversized frame").await
}

pub(super) async fn framing_no_content_length(ctx: &mut Ctx) -> CheckResult {
    let what = "a header block without Content-Length";
    let bytes = b"Content-Type: application/json\r\n\r\n{}";
    let mut wire = ctx.session().await?;
    let _ = wire.write(bytes).await;
    let stall = ctx.options.stall_timeout;
    match wire.wait_closed(stall).await {
        Ok(()) => Ok(()),
        // Upstream does not say the connection closes: a -32700 answer is enough there.
        Err(WireError::Timeout(_)) if !ctx.strict() && parse_error_answered(&wire.stray) => Ok(()),
        Err(WireError::Timeout(_)) => left_open(&wire.stray, what, stall, "answered -32700"),
        Err(e) => fail!("after {what}: {e}"),
    }
}

/// The failure of a mod that kept the connection open for `stall` after `what`, which it must close on
/// (`expected`: what it might have answered instead of stalling).
fn left_open(
    stray: &[gabp_types::Response],
    what: &str,
    stall: Duration,
    expected: &str,
) -> CheckResult {
    match stray.first() {
        Some(r) => fail!(
            "after {what} the mod answered {} but kept the connection open for {} \
             (the next frame cannot be found: it must close)",
            describe(r).trim_start_matches("with "),
            seconds(stall)
        ),
        None => fail!(
            "the mod stalled after {what}: it neither {expected} nor closed the connection within {}",
            seconds(stall)
        ),
    }
}

/// Whether one of `answers` is -32700 with the nil id.
fn parse_error_answered(answers: &[gabp_types::Response]) -> bool {
    answers.iter().any(|r| {
        r.id.is_nil()
            && r.error_object()
                .is_some_and(|e| e.code == ErrorCode::PARSE_ERROR)
    })
}

pub(super) async fn framing_bad_header_closed(ctx: &mut Ctx) -> CheckResult {
    let mut long_header = b"X-Padding: ".to_vec();
    long_header.resize(64 * 1024, b'a');
    long_header.extend_from_slice(b"\r\n\r\n{}");
    // A header block without Content-Length is framing.no_content_length's.
    let variants: [(&str, Vec<u8>); 3] = [
        (
            "a negative Content-Length",
            b"Content-Length: -5\r\n\r\n{}".to_vec(),
        ),
        (
            "a non-numeric Content-Length",
            b"Content-Length: ten\r\n\r\n{}".to_vec(),
        ),
        ("a 64 KiB header block", long_header),
    ];
    let stall = ctx.options.stall_timeout;
    for (what, bytes) in variants {
        let mut wire = ctx.session().await?;
        // The mod may close before it has read everything: a failed write is fine.
        let _ = wire.write(&bytes).await;
        match wire.wait_closed(stall).await {
            Ok(()) => {}
            Err(WireError::Timeout(_)) => left_open(&wire.stray, what, stall, "answered")?,
            Err(e) => fail!("after {what}: {e}"),
        }
        for r in &wire.stray {
            let parse_error = r
                .error_object()
                .is_some_and(|e| e.code == ErrorCode::PARSE_ERROR);
            if !(r.id.is_nil() && parse_error) {
                fail!(
                    "after {what} the mod answered {} with id {} (expected -32700 with the nil id, or nothing)",
                    describe(r).trim_start_matches("with "),
                    r.id
                );
            }
        }
    }
    Ok(())
}
