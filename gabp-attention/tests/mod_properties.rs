//! Properties of the attention manager for any sequence of records, acks, clears and time steps, on an injected
//! clock: the sample never exceeds its bound, repeat counts add up to `totalUrgentEntries`, `severity` is the
//! highest level folded into the item, at most one `attention/updated` per coalescing window, and every payload
//! passes the strict validator.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use gabp_attention::{AttentionManager, Entry, LifecycleEvent, LifecycleKind, ManualClock};
use gabp_types::decode::decode_strict;
use gabp_types::{
    Attention, AttentionState, ChannelName, Event, Message, NonEmptyString, Severity,
};
use parking_lot::Mutex;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Record {
        level: Severity,
        kind: u8,
        blocking: Option<bool>,
    },
    Advance(u64),
    Flush,
    AckCurrent,
    AckOther,
    Clear,
}

fn level() -> impl Strategy<Value = Severity> {
    prop_oneof![
        Just(Severity::Info),
        Just(Severity::Warning),
        Just(Severity::Error),
        Just(Severity::Fatal),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (level(), 0u8..12, proptest::option::of(any::<bool>()))
            .prop_map(|(level, kind, blocking)| Op::Record { level, kind, blocking }),
        4 => (0u64..160).prop_map(Op::Advance),
        1 => Just(Op::Flush),
        1 => Just(Op::AckCurrent),
        1 => Just(Op::AckOther),
        1 => Just(Op::Clear),
    ]
}

fn check_item(a: &Attention, limit: usize, max_seen: Severity) {
    let sample = a.sample.as_ref().unwrap();
    assert!(
        sample.len() <= limit,
        "sample of {} > {limit}",
        sample.len()
    );
    let sum: u64 = sample.iter().map(|s| s.repeat_count.get()).sum();
    assert_eq!(sum, a.total_urgent_entries, "repeat counts vs total");
    assert_eq!(a.severity, max_seen, "severity is the maximum folded in");
    assert!(sample.iter().all(|s| s.level <= a.severity));
    assert!(a.opened_at_sequence <= a.latest_sequence);
    assert!(sample
        .iter()
        .all(|s| s.latest_sequence <= a.latest_sequence));
}

fn check_strict(event: &LifecycleEvent, seq: u64) {
    let channel = ChannelName::new(event.kind.channel()).unwrap();
    let payload = serde_json::to_value(&event.attention).unwrap();
    let body = Message::Event(Event::new(channel, seq, payload)).to_vec();
    match decode_strict(&body) {
        Ok(Message::Event(_)) => {}
        other => panic!("not strictly valid: {other:?}"),
    }
}

fn run(ops: &[Op], limit: usize, window_ms: u64) {
    let clock = ManualClock::new();
    let events: Arc<Mutex<Vec<LifecycleEvent>>> = Arc::default();
    let log = events.clone();
    let manager = AttentionManager::builder()
        .clock(clock.clone())
        .sample_limit(limit)
        .update_window(Duration::from_millis(window_ms))
        .on_lifecycle(move |e| log.lock().push(e.clone()))
        .build();
    let window = Duration::from_millis(window_ms);
    // The model: the levels folded into the open item.
    let mut max_seen: Option<Severity> = None;
    let mut total = 0u64;
    for op in ops {
        match op {
            Op::Record {
                level,
                kind,
                blocking,
            } => {
                let mut entry =
                    Entry::new(*level, format!("entry kind {kind}")).signature(format!("k{kind}"));
                if let Some(b) = blocking {
                    entry = entry.blocking(*b);
                }
                let recorded = manager.record_entry(entry);
                if recorded.opened {
                    max_seen = Some(*level);
                    total = 1;
                } else if recorded.attention_id.is_some() {
                    max_seen = max_seen.max(Some(*level));
                    total += 1;
                }
            }
            Op::Advance(ms) => clock.advance(Duration::from_millis(*ms)),
            Op::Flush => manager.flush_due(),
            Op::AckCurrent => {
                if let Some(current) = manager.current() {
                    let result = manager.ack(&current.attention_id);
                    assert!(result.acknowledged && result.current_attention.is_none());
                    max_seen = None;
                    total = 0;
                }
            }
            Op::AckOther => {
                let result = manager.ack(&NonEmptyString::new("att-not-this-one").unwrap());
                assert!(!result.acknowledged);
                assert_eq!(result.current_attention, manager.current());
            }
            Op::Clear => {
                if manager.clear().is_some() {
                    max_seen = None;
                    total = 0;
                }
            }
        }
        match (manager.current(), max_seen) {
            (Some(a), Some(max)) => {
                check_item(&a, limit, max);
                assert_eq!(a.total_urgent_entries, total);
            }
            (None, None) => {}
            (current, model) => panic!("item {current:?} vs model {model:?}"),
        }
    }

    // The emitted events: valid, in lifecycle order, at most one updated per window.
    let events = events.lock();
    let mut seqs = std::collections::HashMap::new();
    let mut open: Option<(String, Duration)> = None; // the item and the time of its last opened/updated
    for event in events.iter() {
        let seq = seqs.entry(event.kind).or_insert(0u64);
        check_strict(event, *seq);
        *seq += 1;
        let id = event.attention.attention_id.as_str().to_owned();
        match event.kind {
            LifecycleKind::Opened => {
                assert!(open.is_none(), "opened while another item is open");
                assert_eq!(event.attention.state, AttentionState::Open);
                open = Some((id, event.at));
            }
            LifecycleKind::Updated => {
                let (open_id, last) = open.as_ref().expect("updated without an open item");
                assert_eq!(open_id, &id);
                assert!(
                    event.at >= *last + window,
                    "updated at {:?}, {:?} after the previous event of the item",
                    event.at,
                    event.at - *last
                );
                let sample = event.attention.sample.as_ref().unwrap();
                assert!(sample.len() <= limit);
                let sum: u64 = sample.iter().map(|s| s.repeat_count.get()).sum();
                assert_eq!(sum, event.attention.total_urgent_entries);
                open = Some((id, event.at));
            }
            LifecycleKind::Cleared => {
                let (open_id, _) = open.take().expect("cleared without an open item");
                assert_eq!(open_id, id);
                assert_eq!(event.attention.state, AttentionState::Cleared);
                assert!(!event.attention.blocking);
            }
            _ => unreachable!("no other kind"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_sequence_of_records_keeps_the_invariants(
        ops in proptest::collection::vec(op(), 0..120),
        limit in 1usize..7,
        window_ms in prop_oneof![Just(0u64), Just(100u64), 1u64..300],
    ) {
        run(&ops, limit, window_ms);
    }
}

#[test]
fn a_burst_of_a_thousand_errors_is_a_handful_of_events() {
    let clock = ManualClock::new();
    let events: Arc<Mutex<Vec<LifecycleEvent>>> = Arc::default();
    let log = events.clone();
    let manager = AttentionManager::builder()
        .clock(clock.clone())
        .on_lifecycle(move |e| log.lock().push(e.clone()))
        .build();
    // A thousand errors over 250 ms of game time.
    for i in 0..1000u64 {
        manager.record(Severity::Error, format!("error {}", i % 9));
        if i % 4 == 0 {
            clock.advance(Duration::from_millis(1));
        }
        manager.flush_due();
    }
    clock.advance(Duration::from_millis(100));
    manager.flush_due();
    let events = events.lock();
    assert!(events.len() <= 5, "{} events", events.len());
    let last = events.last().unwrap();
    assert_eq!(
        last.attention.total_urgent_entries, 1000,
        "latest state wins"
    );
    assert_eq!(last.attention.sample.as_ref().unwrap().len(), 5);
}
