//! The ordering policy, the queues and the router.

use std::time::Duration;

use tokio::time::Instant;

use gabp_types::{ChannelName, Event};

use super::item::SubscriptionItem;
use super::order::SeqOrder;
use super::queue::SubQueue;
use super::router::Router;
use crate::bridge::settings::Reorder;
use serde_json::json;

fn ev(channel: &str, seq: u64) -> Event {
    Event::new(
        ChannelName::new_lenient(channel).unwrap(),
        seq,
        json!({ "seq": seq }),
    )
}

fn cfg(window_ms: u64, capacity: usize) -> Reorder {
    Reorder {
        window: Duration::from_millis(window_ms),
        capacity,
        max_bytes: 1 << 20,
    }
}

fn describe(items: &[SubscriptionItem]) -> Vec<String> {
    items
        .iter()
        .map(|i| match i {
            SubscriptionItem::Event(e) => format!("{}", e.seq),
            SubscriptionItem::Lagged { missed, .. } => format!("lag{missed}"),
            SubscriptionItem::Reconnected => "reconnected".into(),
        })
        .collect()
}

/// The items of `out`, without their sizes.
fn items(out: &[(SubscriptionItem, usize)]) -> Vec<SubscriptionItem> {
    out.iter().map(|(item, _)| item.clone()).collect()
}

/// Each event counts as 9 bytes, the length of `{"seq":N}`.
fn run(order: &mut SeqOrder, seqs: &[u64], c: Reorder) -> Vec<String> {
    let now = Instant::now();
    let mut out = Vec::new();
    for &s in seqs {
        order.accept(ev("a/b", s), 9, now, c, &mut out);
    }
    describe(&items(&out))
}

#[test]
fn in_order_and_baseline() {
    let mut o = SeqOrder::default();
    assert_eq!(run(&mut o, &[1, 2, 3], cfg(50, 8)), ["1", "2", "3"]);
}

#[test]
fn reorders_within_the_window() {
    let mut o = SeqOrder::default();
    assert_eq!(
        run(&mut o, &[0, 2, 3, 1, 4], cfg(50, 8)),
        ["0", "1", "2", "3", "4"]
    );
    assert!(o.held.is_empty() && o.since.is_none());
}

#[test]
fn duplicates_and_stale_events_are_dropped() {
    let mut o = SeqOrder::default();
    assert_eq!(
        run(&mut o, &[0, 1, 1, 0, 3, 3, 2], cfg(50, 8)),
        ["0", "1", "2", "3"]
    );
}

#[test]
fn zero_window_reports_gaps_at_once() {
    let mut o = SeqOrder::default();
    assert_eq!(
        run(&mut o, &[0, 3, 1, 4, 7], cfg(0, 8)),
        ["0", "lag2", "3", "4", "lag2", "7"]
    );
}

#[test]
fn full_buffer_gives_up_the_first_gap() {
    let mut o = SeqOrder::default();
    assert_eq!(
        run(&mut o, &[0, 2, 3, 5], cfg(1000, 2)),
        ["0", "lag1", "2", "3"]
    );
    assert_eq!(o.held.len(), 1);
}

#[test]
fn held_back_bytes_give_up_the_first_gap() {
    let mut o = SeqOrder::default();
    // `{"seq":N}` is 9 bytes: two held fit in 20, a third does not.
    let c = Reorder {
        max_bytes: 20,
        ..cfg(1000, 64)
    };
    assert_eq!(run(&mut o, &[0, 2, 3], c), ["0"]);
    assert_eq!(o.held_bytes, 18);
    assert_eq!(run(&mut o, &[5], c), ["lag1", "2", "3"]);
    assert_eq!(o.held.len(), 1);
    assert_eq!(o.held_bytes, 9);
}

#[test]
fn expired_window_releases_in_order() {
    let mut o = SeqOrder::default();
    let c = cfg(50, 8);
    let t0 = Instant::now();
    let mut out = Vec::new();
    for s in [0, 3, 4, 7] {
        o.accept(ev("a/b", s), 9, t0, c, &mut out);
    }
    assert_eq!(describe(&items(&out)), ["0"]);
    out.clear();
    assert_eq!(o.deadline(c), Some(t0 + Duration::from_millis(50)));
    o.release_expired(t0 + Duration::from_millis(10), c, &mut out);
    assert!(out.is_empty());
    o.release_expired(t0 + Duration::from_millis(50), c, &mut out);
    assert_eq!(describe(&items(&out)), ["lag2", "3", "4"]);
    out.clear();
    o.release_expired(t0 + Duration::from_millis(100), c, &mut out);
    assert_eq!(describe(&items(&out)), ["lag2", "7"]);
    assert!(o.deadline(c).is_none());
}

#[test]
fn full_queue_counts_and_reports_lag() {
    let q = SubQueue::new(2, 1 << 20, vec!["a/b".into()]);
    for s in 0..5 {
        q.push(SubscriptionItem::Event(ev("a/b", s)), 9);
    }
    let mut inner = q.inner.lock();
    assert_eq!(inner.len(), 2);
    assert_eq!(inner.dropped[0].1, 3);
    inner.pop_front();
    drop(inner);
    q.push(SubscriptionItem::Event(ev("a/b", 5)), 9);
    let inner = q.inner.lock();
    assert_eq!(describe(&inner.items()), ["1", "lag3", "5"]);
}

#[test]
fn a_queue_full_of_bytes_counts_and_reports_lag() {
    let big = |seq: u64| {
        Event::new(
            ChannelName::new_lenient("a/b").unwrap(),
            seq,
            json!("x".repeat(1000)),
        )
    };
    // 1,002 bytes each: the first always fits, a second would pass 1,500.
    let q = SubQueue::new(1024, 1500, vec!["a/b".into()]);
    for s in 0..4 {
        q.push(SubscriptionItem::Event(big(s)), 1002);
    }
    let mut inner = q.inner.lock();
    assert_eq!(inner.len(), 1);
    assert_eq!(inner.dropped[0].1, 3);
    inner.pop_front();
    drop(inner);
    q.push(SubscriptionItem::Event(ev("a/b", 4)), 9);
    assert_eq!(describe(&q.inner.lock().items()), ["lag3", "4"]);
}

#[test]
fn router_routes_by_channel_and_tracks_subscribers() {
    let mut r = Router::new(cfg(50, 8));
    let (a, qa) = r.add(vec!["x/a".into(), "x/b".into()], 16, 1 << 20);
    let (b, qb) = r.add(vec!["x/b".into()], 16, 1 << 20);
    let now = Instant::now();
    r.dispatch(ev("x/a", 0), 9, now);
    r.dispatch(ev("x/b", 0), 9, now);
    r.dispatch(ev("x/c", 0), 9, now);
    assert_eq!(qa.inner.lock().len(), 2);
    assert_eq!(qb.inner.lock().len(), 1);
    assert_eq!(r.channels(), ["x/a", "x/b"]);
    assert_eq!(r.remove(a), ["x/a"]);
    assert_eq!(r.remove(b), ["x/b"]);
    assert!(r.channels().is_empty());
}
