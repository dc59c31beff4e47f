//! The event check: `seq` per channel, contiguous (SPEC/1.0/gabp.md §3.4, §6).

use std::collections::HashMap;

use gabp_types::decode::check_result;
use gabp_types::Event;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::{describe, expect_result, short, CheckResult, Ctx, Verdict};
use crate::conformance::wire::{seconds, Incoming, WireError};
use crate::conformance::EventTrigger;

pub(super) fn default_trigger() -> EventTrigger {
    EventTrigger::new(
        "player/teleport",
        "player/move",
        (1..=3).map(|x| json!({ "x": x, "y": 1, "z": 1 })),
    )
}

pub(super) async fn events_seq_contiguous(ctx: &mut Ctx) -> CheckResult {
    let channels = ctx.channels();
    if channels.is_empty() {
        skip!("the mod advertises no event channels");
    }
    if !ctx.advertises("events/subscribe") {
        skip!("the mod advertises channels but not events/subscribe");
    }
    let trigger = match &ctx.options.event_trigger {
        Some(trigger) => Some(trigger.clone()),
        None => {
            let trigger = default_trigger();
            (ctx.has_tool(&trigger.tool) && channels.contains(&trigger.channel)).then_some(trigger)
        }
    };
    let mut wire = ctx.session().await?;
    let r = wire
        .call(
            "events/subscribe",
            Some(json!({ "channels": channels })),
            ctx.answer(),
        )
        .await?;
    let result = expect_result(&r, "events/subscribe of the advertised channels")?;
    if let Err(e) = check_result("events/subscribe", result) {
        fail!("the events/subscribe result does not match its schema: {e}");
    }

    let deadline = match &trigger {
        Some(trigger) => {
            for args in &trigger.arguments {
                let params = json!({ "name": trigger.tool, "arguments": args });
                let r = wire.call("tools/call", Some(params), ctx.answer()).await?;
                if r.result().is_none() {
                    skip!(
                        "the trigger {} refused {} ({}); name another trigger in the options",
                        trigger.tool,
                        short(&Value::Object(args.clone())),
                        describe(&r).trim_start_matches("with ")
                    );
                }
            }
            ctx.deadline()
        }
        None => Instant::now() + ctx.options.event_listen,
    };
    let wanted = trigger.as_ref().map_or(0, |t| t.arguments.len());
    let on_trigger = |events: &[Event]| {
        trigger.as_ref().map_or(0, |t| {
            events
                .iter()
                .filter(|e| e.channel.as_str() == t.channel)
                .count()
        })
    };
    while on_trigger(&wire.events) < wanted || trigger.is_none() {
        match wire.next(deadline, ctx.answer()).await {
            Ok(Incoming::Event(event)) => wire.events.push(event),
            Ok(_) => {}
            Err(WireError::Timeout(t)) => {
                if let Some(trigger) = &trigger {
                    fail!(
                        "only {} of {wanted} events on {} arrived within {} of calling {}",
                        on_trigger(&wire.events),
                        trigger.channel,
                        seconds(t),
                        trigger.tool
                    );
                }
                break;
            }
            Err(e) => return Err(e.into()),
        }
    }

    let mut by_channel: HashMap<&str, Vec<u64>> = HashMap::new();
    for event in &wire.events {
        by_channel
            .entry(event.channel.as_str())
            .or_default()
            .push(event.seq);
    }
    if trigger.is_none() && by_channel.values().all(|s| s.len() < 2) {
        skip!(
            "no events to check: no known tool publishes (player/teleport) and the mod published fewer than \
             two events on a channel within {}; name a trigger in the options",
            seconds(ctx.options.event_listen)
        );
    }
    let mut names: Vec<&&str> = by_channel.keys().collect();
    names.sort();
    for channel in names {
        let seqs = &by_channel[*channel];
        for pair in seqs.windows(2) {
            if pair[1] != pair[0] + 1 {
                fail!(
                    "{channel}: seq {} followed seq {} (expected {}; seq counts the events of a channel without gaps)",
                    pair[1],
                    pair[0],
                    pair[0] + 1
                );
            }
        }
    }
    Ok(())
}
