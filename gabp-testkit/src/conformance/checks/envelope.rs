//! The checks over the whole run: every request answered once with its own id, and every message strictly
//! valid (SPEC/1.0/gabp.md §3).

use gabp_types::MessageId;
use serde_json::json;

use super::{CheckResult, Ctx, Verdict};
use crate::conformance::wire::{seconds, Incoming, WireError};
use gabp_codec::encode_frame as frame;

pub(super) async fn responses_ids_match(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.session().await?;
    let upper = MessageId::parse(&MessageId::new_v4().as_str().to_uppercase())
        .unwrap_or_else(|_| MessageId::new_v4());
    let list = if ctx.advertises("tools/list") {
        "tools/list"
    } else {
        "session/ping"
    };
    let probe = ctx.probe();
    let requests = [
        (MessageId::new_v4(), probe),
        (upper, probe),
        (MessageId::new_v4(), list),
        (MessageId::new_v4(), probe),
    ];
    let mut bytes = Vec::new();
    for (id, method) in requests {
        let params = (method == "tools/list").then(|| json!({}));
        bytes.extend_from_slice(&frame(&wire.request_body(id, method, params, true)));
    }
    wire.write(&bytes).await?;
    let deadline = ctx.deadline();
    let mut answered = Vec::new();
    let mut responses = 0;
    while responses < requests.len() {
        match wire.next(deadline, ctx.answer()).await {
            Ok(Incoming::Response { response, answers }) if !response.id.is_nil() => {
                responses += 1;
                answered.extend(answers);
            }
            Ok(Incoming::Event(event)) => wire.events.push(event),
            Ok(_) => {}
            Err(WireError::Timeout(_)) => break,
            Err(e) => return Err(e.into()),
        }
    }
    let mut problems = ctx.journal.id_violations();
    for (id, method) in requests {
        if !answered.contains(&id) {
            problems.push(format!(
                "did not answer {method} (id {id}) within {}",
                seconds(ctx.answer())
            ));
        }
    }
    match problems.first() {
        None => Ok(()),
        Some(first) if problems.len() == 1 => fail!("the mod {first}"),
        Some(first) => fail!(
            "the mod {first}; {} more id problems in this run",
            problems.len() - 1
        ),
    }
}

pub(super) async fn responses_one_of_result_error(ctx: &mut Ctx) -> CheckResult {
    let both = ctx.journal.both_members_seen();
    match both.first() {
        None => Ok(()),
        Some(first) => fail!(
            "{} of the mod's responses carry both result and error (one of them null), where exactly one of \
             them is allowed; read liberally (SPEC/1.0 gabp.md §3.5) and checked on; first, {first}",
            both.len()
        ),
    }
}

pub(super) async fn envelope_strictly_valid(ctx: &mut Ctx) -> CheckResult {
    let violations = ctx.journal.strict_violations();
    match violations.first() {
        None => Ok(()),
        Some(first) => fail!(
            "{} of the mod's messages break the strict rules; first, {first}",
            violations.len()
        ),
    }
}
