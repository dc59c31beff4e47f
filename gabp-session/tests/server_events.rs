//! Events over the wire: `seq` per channel, mod-wide, from 0, contiguous for subscribers that keep up; a
//! subscriber that never reads loses events (bounded by its queue) and sees the gap; nobody else waits.

mod server_support;

use std::time::{Duration, Instant};

use gabp_session::server::{ModServer, ServerLimits};
use gabp_types::Message;
use serde_json::json;
use server_support::{
    close_reason, connect_hello, connect_hello_served, connect_with_buffer, fixture, result,
    RawClient,
};

fn server_with(limits: ServerLimits) -> ModServer {
    fixture::register(server_support::builder())
        .limits(limits)
        .build()
        .expect("build")
}

async fn subscribe(client: &mut RawClient, channels: &[&str]) -> serde_json::Value {
    result(
        &client
            .call("events/subscribe", Some(json!({ "channels": channels })))
            .await,
    )
}

async fn next_event(client: &mut RawClient) -> gabp_types::Event {
    match client.recv().await {
        Message::Event(e) => e,
        other => panic!("expected an event, got {other:?}"),
    }
}

#[tokio::test]
async fn a_subscriber_that_keeps_up_gets_every_event_in_order_from_zero() {
    let server = server_with(ServerLimits::default());
    let mut client = connect_hello(&server).await;
    subscribe(&mut client, &["player/move"]).await;
    let events = server.event_publisher();
    let publisher = tokio::spawn(async move {
        for i in 0..500u64 {
            let p = events.publish("player/move", json!({ "i": i })).unwrap();
            assert_eq!(p.seq, i);
            if i % 50 == 0 {
                tokio::task::yield_now().await;
            }
        }
    });
    for i in 0..500u64 {
        let e = next_event(&mut client).await;
        assert_eq!(e.channel.as_str(), "player/move");
        assert_eq!(e.seq, i, "contiguous from 0");
        assert_eq!(e.payload, json!({ "i": i }));
        assert!(e.timestamp.is_some());
    }
    publisher.await.unwrap();
}

#[tokio::test]
async fn seq_is_per_channel_and_mod_wide() {
    let server = server_with(ServerLimits::default());
    let events = server.event_publisher();
    // Published before anyone listens: the numbers are used anyway.
    for _ in 0..3 {
        events.publish("player/move", json!({})).unwrap();
    }
    let mut a = connect_hello(&server).await;
    let mut b = connect_hello(&server).await;
    subscribe(&mut a, &["player/move", "world/block_change"]).await;
    subscribe(&mut b, &["player/move"]).await;
    events.publish("player/move", json!({"n": 1})).unwrap();
    events
        .publish("world/block_change", json!({"x": 0}))
        .unwrap();
    let e = next_event(&mut a).await;
    assert_eq!((e.channel.as_str(), e.seq), ("player/move", 3));
    let e = next_event(&mut a).await;
    assert_eq!((e.channel.as_str(), e.seq), ("world/block_change", 0));
    let e = next_event(&mut b).await;
    assert_eq!((e.channel.as_str(), e.seq), ("player/move", 3));
}

#[tokio::test]
async fn a_subscriber_that_never_reads_is_bounded_and_sees_the_gap() {
    let limits = ServerLimits::default().with_event_queue(16);
    let server = server_with(limits);
    let mut slow = connect_with_buffer(&server, 4096);
    slow.hello(server_support::TOKEN).await;
    subscribe(&mut slow, &["player/move"]).await;
    let mut other = connect_hello(&server).await;

    // The slow bridge reads nothing while 10,000 events are published.
    let events = server.event_publisher();
    let total = 10_000u64;
    let (mut delivered, mut dropped) = (0usize, 0usize);
    let started = Instant::now();
    for i in 0..total {
        let p = events
            .publish("player/move", json!({ "i": i, "pad": "x".repeat(200) }))
            .unwrap();
        delivered += p.delivered;
        dropped += p.dropped;
        if i % 100 == 0 {
            // Let the connection's driver run: whatever it can write, it writes.
            tokio::task::yield_now().await;
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "publishing must never wait"
    );
    assert_eq!(delivered + dropped, usize::try_from(total).unwrap());
    // Held for the slow bridge at most: its queue (16), the transport's write buffer (64 KiB, about 250
    // events of 260 bytes) and the pipe (4 KiB).
    assert!(
        delivered < 400,
        "delivered {delivered}: not bounded by the queue"
    );
    assert!(dropped > 9000, "dropped {dropped}");

    // The other connection is served meanwhile.
    assert!(other.call("session/ping", None).await.result().is_some());

    // The slow bridge finally reads: from 0, in order, then a marker after a visible gap.
    let reader = tokio::spawn(async move {
        let mut seqs = Vec::new();
        loop {
            let e = next_event(&mut slow).await;
            seqs.push(e.seq);
            if e.payload.get("marker").is_some() {
                return seqs;
            }
        }
    });
    // The queue may still be full for a moment: publish the marker until it gets in.
    let marker_seq = loop {
        let p = events
            .publish("player/move", json!({"marker": true}))
            .unwrap();
        if p.delivered == 1 {
            break p.seq;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(marker_seq >= total);
    let seqs = tokio::time::timeout(server_support::PATIENCE, reader)
        .await
        .expect("the marker never arrived")
        .unwrap();
    assert_eq!(seqs[0], 0);
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order");
    assert_eq!(*seqs.last().unwrap(), marker_seq);
    assert!(seqs.len() < 400, "{} events held", seqs.len());
    let gap = seqs.windows(2).any(|w| w[1] > w[0] + 1);
    assert!(gap, "the loss shows as a gap in seq");
}

#[tokio::test]
async fn unsubscribe_stops_delivery_and_patterns_expand() {
    let server = server_with(ServerLimits::default());
    let events = server.event_publisher();
    let mut client = connect_hello(&server).await;
    assert_eq!(
        subscribe(&mut client, &["player/*"]).await,
        json!({"subscribed": ["player/chat", "player/move"]})
    );
    events.publish("world/block_change", json!({})).unwrap();
    events
        .publish("player/chat", json!({"text": "hi"}))
        .unwrap();
    let e = next_event(&mut client).await;
    assert_eq!(e.channel.as_str(), "player/chat");
    let r = client
        .call(
            "events/unsubscribe",
            Some(json!({"channels": ["player/*"]})),
        )
        .await;
    assert_eq!(
        result(&r),
        json!({"unsubscribed": ["player/chat", "player/move"]})
    );
    events.publish("player/chat", json!({})).unwrap();
    // The next frame is the ping's answer, not an event.
    let (id, ping) = server_support::request("session/ping", None);
    client.send_value(&ping).await;
    let Message::Response(r) = client.recv().await else {
        panic!("an event arrived after unsubscribing")
    };
    assert_eq!(r.id, id);
}

#[tokio::test]
async fn patterns_can_be_switched_off() {
    let server = fixture::register(server_support::builder())
        .channel_patterns(false)
        .build()
        .unwrap();
    assert!(server
        .welcome()
        .capabilities
        .extensions
        .as_ref()
        .is_none_or(|e| e.get("channel-patterns").is_none()));
    let mut client = connect_hello(&server).await;
    assert_eq!(
        subscribe(&mut client, &["player/*"]).await,
        json!({"subscribed": []})
    );
}

#[tokio::test]
async fn closing_a_connection_removes_its_subscriptions() {
    let server = server_with(ServerLimits::default());
    let events = server.event_publisher();
    let (mut client, served) = connect_hello_served(&server).await;
    subscribe(&mut client, &["player/move", "player/chat"]).await;
    assert_eq!(events.subscriber_count("player/move"), 1);
    client.shutdown_write().await;
    client.until_closed().await;
    close_reason(served).await;
    assert_eq!(events.subscriber_count("player/move"), 0);
    assert_eq!(events.subscriber_count("player/chat"), 0);
    assert_eq!(
        events.publish("player/move", json!({})).unwrap().delivered,
        0
    );
}
