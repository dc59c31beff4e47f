//! Bridge subscriptions: seq order, gaps reported as Lagged, out-of-order and duplicate events, slow
//! subscribers, end of connection, unsubscribing.

mod bridge_support;

use std::time::Duration;

use bridge_support::*;
use futures::{FutureExt, StreamExt};
use gabp_session::bridge::{Bridge, Subscription, SubscriptionItem};
use gabp_session::Error;
use serde_json::json;

/// The next item, described: `"3"` for an event with seq 3, `"lag2"`, `"reconnected"`, `"err"`, `"end"`.
async fn next(sub: &mut Subscription) -> String {
    match soon(sub.next()).await {
        Some(Ok(SubscriptionItem::Event(e))) => e.seq.to_string(),
        Some(Ok(SubscriptionItem::Lagged { missed, .. })) => format!("lag{missed}"),
        Some(Ok(SubscriptionItem::Reconnected)) => "reconnected".into(),
        Some(Ok(other)) => format!("{other:?}"),
        Some(Err(_)) => "err".into(),
        None => "end".into(),
    }
}

async fn take(sub: &mut Subscription, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(next(sub).await);
    }
    out
}

/// Subscribes to `channels`, the mock granting `grant`.
async fn subscribe(
    bridge: &Bridge,
    mock: &mut MockMod,
    channels: &[&str],
    grant: &[&str],
) -> Subscription {
    let (sub, _) = tokio::join!(
        bridge.subscribe(channels.iter().copied()),
        mock.grant_subscribe(grant)
    );
    sub.expect("subscribed")
}

/// A round trip: once it completes, every frame the mock wrote before has been read by the bridge.
async fn sync(bridge: &Bridge, mock: &mut MockMod) {
    let (pong, ()) = tokio::join!(bridge.ping(), async {
        let ping = mock.expect("session/ping").await;
        mock.reply(ping.id, json!({})).await;
    });
    pong.expect("pong");
}

#[tokio::test]
async fn subscribe_delivers_events_in_order_on_granted_channels() {
    let (bridge, mut mock) = connected().await;
    let (sub, asked) = tokio::join!(
        bridge.subscribe(["player/move", "nope/missing", "player/move"]),
        mock.grant_subscribe(&["player/move"])
    );
    assert_eq!(
        asked,
        ["player/move", "nope/missing"],
        "deduplicated, in order"
    );
    let mut sub = sub.unwrap();
    assert_eq!(sub.channels(), ["player/move"]);
    for seq in 0..3 {
        mock.event("player/move", seq, json!({"x": seq})).await;
    }
    mock.event("nope/missing", 0, json!({})).await;
    match soon(sub.next()).await {
        Some(Ok(SubscriptionItem::Event(e))) => {
            assert_eq!(e.channel.as_str(), "player/move");
            assert_eq!(e.payload, json!({"x": 0}));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(take(&mut sub, 2).await, ["1", "2"]);
    sync(&bridge, &mut mock).await;
    assert!(
        sub.next().now_or_never().is_none(),
        "an event of an ungranted channel got through"
    );
}

#[tokio::test]
async fn seq_gap_is_reported_as_lagged_at_once_with_a_zero_window() {
    let builder = Bridge::builder(token()).event_reordering(Duration::ZERO, 8);
    let (bridge, mut mock) = connected_with(builder, ALL_METHODS).await;
    let mut sub = subscribe(&bridge, &mut mock, &["player/move"], &["player/move"]).await;
    for seq in [0, 1, 4, 5, 9] {
        mock.event("player/move", seq, json!({})).await;
    }
    assert_eq!(
        take(&mut sub, 7).await,
        ["0", "1", "lag2", "4", "5", "lag3", "9"]
    );
}

#[tokio::test(start_paused = true)]
async fn seq_gap_is_reported_when_the_reorder_window_expires() {
    let (bridge, mut mock) = connected().await;
    let mut sub = subscribe(&bridge, &mut mock, &["player/move"], &["player/move"]).await;
    mock.event("player/move", 0, json!({})).await;
    mock.event("player/move", 3, json!({})).await;
    assert_eq!(next(&mut sub).await, "0");
    let waiting = tokio::time::Instant::now();
    assert_eq!(take(&mut sub, 2).await, ["lag2", "3"]);
    assert!(waiting.elapsed() >= gabp_session::bridge::DEFAULT_REORDER_WINDOW);
    mock.event("player/move", 4, json!({})).await;
    assert_eq!(next(&mut sub).await, "4");
}

/// The reorder deadline moves from one channel's gap to the next's on its own, with no frame in between.
#[tokio::test(start_paused = true)]
async fn gaps_on_two_channels_are_each_reported_when_their_window_expires() {
    let (bridge, mut mock) = connected().await;
    let channels = ["player/move", "world/block_change"];
    let mut sub = subscribe(&bridge, &mut mock, &channels, &channels).await;
    mock.event("player/move", 0, json!({})).await;
    mock.event("player/move", 2, json!({})).await;
    assert_eq!(next(&mut sub).await, "0");
    tokio::time::sleep(gabp_session::bridge::DEFAULT_REORDER_WINDOW / 2).await;
    mock.event("world/block_change", 0, json!({})).await;
    mock.event("world/block_change", 2, json!({})).await;
    assert_eq!(next(&mut sub).await, "0");
    let waiting = tokio::time::Instant::now();
    let first = take(&mut sub, 2).await;
    let first_at = waiting.elapsed();
    let second = take(&mut sub, 2).await;
    assert_eq!([first, second].concat(), ["lag1", "2", "lag1", "2"]);
    let window = gabp_session::bridge::DEFAULT_REORDER_WINDOW;
    assert!(first_at >= window / 2, "{first_at:?}");
    assert!(
        waiting.elapsed() >= window,
        "the second gap waited its own window"
    );
}

#[tokio::test]
async fn out_of_order_and_duplicate_events_are_put_in_order_once() {
    let (bridge, mut mock) = connected().await;
    let mut sub = subscribe(&bridge, &mut mock, &["player/move"], &["player/move"]).await;
    for seq in [0, 2, 1, 1, 3, 2, 0, 5, 4] {
        mock.event("player/move", seq, json!({"seq": seq})).await;
    }
    assert_eq!(take(&mut sub, 6).await, ["0", "1", "2", "3", "4", "5"]);
    sync(&bridge, &mut mock).await;
    assert!(
        sub.next().now_or_never().is_none(),
        "a duplicate got through"
    );
}

#[tokio::test]
async fn dotted_channels_and_seq_from_one_are_read_liberally() {
    let (bridge, mut mock) = connected().await;
    let mut sub = subscribe(&bridge, &mut mock, &["player.move"], &["player.move"]).await;
    for seq in 1..4 {
        mock.event("player.move", seq, json!({})).await;
    }
    assert_eq!(take(&mut sub, 3).await, ["1", "2", "3"]);
}

#[tokio::test]
async fn a_slow_subscriber_sees_how_many_events_it_lost() {
    let builder = Bridge::builder(token()).subscription_queue(4);
    let (bridge, mut mock) = connected_with(builder, ALL_METHODS).await;
    let mut sub = subscribe(&bridge, &mut mock, &["player/move"], &["player/move"]).await;
    for seq in 0..10 {
        mock.event("player/move", seq, json!({})).await;
    }
    sync(&bridge, &mut mock).await;
    assert_eq!(take(&mut sub, 5).await, ["0", "1", "2", "3", "lag6"]);
    mock.event("player/move", 10, json!({})).await;
    assert_eq!(next(&mut sub).await, "10");
}

#[tokio::test]
async fn every_subscription_gets_its_own_copy() {
    let (bridge, mut mock) = connected().await;
    let mut a = subscribe(
        &bridge,
        &mut mock,
        &["player/move", "world/block_change"],
        &["player/move", "world/block_change"],
    )
    .await;
    let mut b = subscribe(&bridge, &mut mock, &["player/move"], &["player/move"]).await;
    mock.event("world/block_change", 0, json!({})).await;
    mock.event("player/move", 0, json!({})).await;
    mock.event("player/move", 1, json!({})).await;
    assert_eq!(take(&mut a, 3).await, ["0", "0", "1"]);
    assert_eq!(take(&mut b, 2).await, ["0", "1"]);
}

#[tokio::test]
async fn the_end_of_the_connection_ends_the_stream_after_queued_events() {
    let (bridge, mut mock) = connected().await;
    let mut sub = subscribe(&bridge, &mut mock, &["player/move"], &["player/move"]).await;
    mock.event("player/move", 0, json!({})).await;
    mock.event("player/move", 1, json!({})).await;
    drop(mock);
    assert_eq!(take(&mut sub, 2).await, ["0", "1"]);
    match soon(sub.next()).await {
        Some(Err(Error::Disconnected)) => {}
        other => panic!("{other:?}"),
    }
    assert!(soon(sub.next()).await.is_none());
    // No subscribing any more.
    assert!(matches!(
        err(bridge.subscribe(["player/move"]).await),
        Error::Disconnected
    ));
}

#[tokio::test]
async fn closing_ends_subscriptions_with_closed() {
    let (bridge, mut mock) = connected().await;
    let mut sub = subscribe(&bridge, &mut mock, &["player/move"], &["player/move"]).await;
    bridge.close().await;
    assert!(matches!(soon(sub.next()).await, Some(Err(Error::Closed))));
    assert!(matches!(
        err(bridge.subscribe(["player/move"]).await),
        Error::Closed
    ));
}

#[tokio::test]
async fn dropping_the_last_subscription_of_a_channel_unsubscribes_it() {
    let (bridge, mut mock) = connected().await;
    let a = subscribe(
        &bridge,
        &mut mock,
        &["player/move", "world/block_change"],
        &["player/move", "world/block_change"],
    )
    .await;
    let b = subscribe(&bridge, &mut mock, &["player/move"], &["player/move"]).await;
    drop(a);
    let request = mock.expect("events/unsubscribe").await;
    assert_eq!(
        request.params.as_ref().unwrap().to_value()["channels"],
        json!(["world/block_change"])
    );
    mock.reply(request.id, json!({"unsubscribed": ["world/block_change"]}))
        .await;
    let (result, ()) = tokio::join!(b.unsubscribe(), async {
        let request = mock.expect("events/unsubscribe").await;
        assert_eq!(
            request.params.as_ref().unwrap().to_value()["channels"],
            json!(["player/move"])
        );
        mock.reply(request.id, json!({"unsubscribed": ["player/move"]}))
            .await;
    });
    result.unwrap();
}

/// A dropped subscription unsubscribes from a background task, with a call of the bridge's own: it counts as
/// pending from the drop until the mod answers, so "no call pending" only holds while subscriptions live.
#[tokio::test]
async fn the_unsubscribe_of_a_dropped_subscription_counts_as_pending() {
    let (bridge, mut mock) = connected().await;
    let sub = subscribe(&bridge, &mut mock, &["player/move"], &["player/move"]).await;
    assert_eq!(bridge.pending_calls(), 0);
    drop(sub);
    let request = mock.expect("events/unsubscribe").await;
    assert_eq!(bridge.pending_calls(), 1);
    mock.reply(request.id, json!({"unsubscribed": ["player/move"]}))
        .await;
    sync(&bridge, &mut mock).await;
    assert_eq!(bridge.pending_calls(), 0);
}

#[tokio::test]
async fn subscribing_fails_cleanly() {
    let (bridge, mut mock) = connected().await;
    assert!(matches!(
        err(bridge.subscribe(Vec::<String>::new()).await),
        Error::InvalidRequest { .. }
    ));
    assert!(matches!(
        err(bridge.subscribe([""]).await),
        Error::InvalidRequest { .. }
    ));
    let (result, ()) = tokio::join!(bridge.subscribe(["player/move"]), async {
        let request = mock.expect("events/subscribe").await;
        mock.reply_error(request.id, -32501, "Subscription failed", None)
            .await;
    });
    assert!(matches!(err(result), Error::Remote { .. }));
    // The failed subscription left nothing behind: an event for it goes nowhere, and a new one works.
    let mut sub = subscribe(&bridge, &mut mock, &["player/move"], &["player/move"]).await;
    mock.event("player/move", 7, json!({})).await;
    assert_eq!(next(&mut sub).await, "7");
}

#[tokio::test]
async fn unadvertised_subscribe_fails_locally() {
    let (bridge, mut mock) = connected_with(Bridge::builder(token()), &["tools/list"]).await;
    assert!(matches!(
        err(bridge.subscribe(["player/move"]).await),
        Error::NotAdvertised { .. }
    ));
    assert!(mock.try_recv(Duration::from_millis(50)).await.is_none());
}
