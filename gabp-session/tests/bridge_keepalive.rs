//! Bridge keepalive: a silent mod is declared dead; a responsive one is kept.

mod bridge_support;

use std::time::Duration;

use bridge_support::*;
use gabp_session::bridge::{Bridge, ConnectionState, DisconnectReason, Keepalive};
use gabp_session::Error;
use gabp_types::Message;
use serde_json::json;
use tokio::time::Instant;

#[tokio::test(start_paused = true)]
async fn a_silent_mod_is_declared_dead() {
    let builder = Bridge::builder(token())
        .keepalive(Keepalive::new(Duration::from_secs(1)).with_timeout(Duration::from_secs(3)));
    let (bridge, mut mock) = connected_with(builder, ALL_METHODS).await;
    let connected_at = Instant::now();
    let pending = tokio::spawn({
        let bridge = bridge.clone();
        async move { bridge.call_tool("demo/sleep", json!({"ms": 60000})).await }
    });
    // The mod reads everything and answers nothing.
    let reader = tokio::spawn(async move {
        let mut pings = 0;
        while let Some(message) = mock.try_recv(Duration::from_secs(60)).await {
            if let Message::Request(r) = message {
                if r.method.as_str() == "session/ping" {
                    pings += 1;
                }
            }
        }
        pings
    });
    let state = soon(bridge.closed()).await;
    let dead_after = connected_at.elapsed();
    assert_eq!(
        state,
        ConnectionState::Disconnected {
            reason: DisconnectReason::KeepaliveTimeout
        }
    );
    assert!(
        dead_after >= Duration::from_secs(3) && dead_after < Duration::from_secs(4),
        "{dead_after:?}"
    );
    assert!(matches!(
        soon(pending).await.unwrap(),
        Err(Error::Disconnected)
    ));
    let pings = soon(reader).await.unwrap();
    assert!(pings >= 1, "no ping was sent");
}

#[tokio::test(start_paused = true)]
async fn a_responsive_mod_is_kept_alive() {
    let builder = Bridge::builder(token()).keepalive(Keepalive::new(Duration::from_secs(1)));
    let (bridge, mut mock) = connected_with(builder, ALL_METHODS).await;
    let answering = tokio::spawn(async move {
        let mut pings = 0u32;
        while let Some(message) = mock.try_recv(Duration::from_secs(60)).await {
            if let Message::Request(r) = message {
                assert_eq!(r.method.as_str(), "session/ping");
                pings += 1;
                mock.reply(r.id, json!({})).await;
                if pings == 5 {
                    break;
                }
            }
        }
        (pings, mock)
    });
    let (pings, _mock) = soon(answering).await.unwrap();
    assert_eq!(pings, 5);
    assert!(bridge.state().is_connected());
}

#[tokio::test(start_paused = true)]
async fn a_busy_connection_needs_no_pings() {
    let builder = Bridge::builder(token()).keepalive(Keepalive::new(Duration::from_secs(1)));
    let (bridge, mut mock) = connected_with(builder, ALL_METHODS).await;
    let (sub, _) = tokio::join!(
        bridge.subscribe(["player/move"]),
        mock.grant_subscribe(&["player/move"])
    );
    let _sub = sub.unwrap();
    for seq in 0..10 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        mock.event("player/move", seq, json!({})).await;
    }
    assert!(
        mock.try_recv(Duration::from_millis(900)).await.is_none(),
        "pinged a chatty mod"
    );
    assert!(bridge.state().is_connected());
}

#[tokio::test(start_paused = true)]
async fn pings_do_not_wait_for_a_free_call_slot() {
    let builder = Bridge::builder(token())
        .max_in_flight(1)
        .keepalive(Keepalive::new(Duration::from_secs(1)).with_timeout(Duration::from_secs(3)));
    let (bridge, mut mock) = connected_with(builder, ALL_METHODS).await;
    let long = tokio::spawn({
        let bridge = bridge.clone();
        async move { bridge.call_tool("demo/sleep", json!({"ms": 60000})).await }
    });
    mock.expect("tools/call").await;
    // The only slot is taken; the mod answers pings only.
    let mut pings = 0;
    while pings < 8 {
        let ping = mock.expect("session/ping").await;
        mock.reply(ping.id, json!({})).await;
        pings += 1;
    }
    assert!(bridge.state().is_connected());
    assert!(!long.is_finished());
    long.abort();
}
