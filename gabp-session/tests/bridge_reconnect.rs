//! Bridge reconnect: backoff, handshake again, subscriptions restored, state reported; giving up; no
//! reconnect after goodbye or a refused token.

// Test code: a failed unwrap is a failed test (clippy allows it only inside #[test] functions).
#![allow(clippy::unwrap_used)]

mod bridge_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bridge_support::*;
use futures::StreamExt;
use gabp_session::bridge::{
    Bridge, BridgeBuilder, ConnectionState, DisconnectReason, ReconnectPolicy, SubscriptionItem,
};
use gabp_session::Error;
use gabp_transport::{Connection, TransportError};
use serde_json::json;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// A connector fed by the test: each attempt takes the next scripted outcome (refused when none is queued),
/// and records when it was made.
struct Script {
    outcomes: mpsc::UnboundedSender<Result<Connection, TransportError>>,
    attempts: Arc<Mutex<Vec<Instant>>>,
}

fn refused() -> TransportError {
    TransportError::Io {
        op: "connect to",
        target: "mock".into(),
        source: std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
    }
}

impl Script {
    fn new() -> (Script, impl gabp_session::bridge::Connector) {
        let (tx, rx) = mpsc::unbounded_channel();
        let rx = Arc::new(tokio::sync::Mutex::new(rx));
        let attempts = Arc::new(Mutex::new(Vec::new()));
        let log = attempts.clone();
        let connector = move || {
            let rx = rx.clone();
            let log = log.clone();
            async move {
                log.lock().unwrap().push(Instant::now());
                match rx.lock().await.try_recv() {
                    Ok(outcome) => outcome,
                    Err(_) => Err(refused()),
                }
            }
        };
        (
            Script {
                outcomes: tx,
                attempts,
            },
            connector,
        )
    }

    /// Queues a fresh pair for the next attempt and returns the mock end.
    fn next_mod(&self) -> MockMod {
        let (conn, mock) = pair();
        self.outcomes.send(Ok(conn)).unwrap();
        mock
    }

    fn refuse(&self) {
        self.outcomes.send(Err(refused())).unwrap();
    }

    fn attempts(&self) -> Vec<Instant> {
        self.attempts.lock().unwrap().clone()
    }
}

fn policy() -> ReconnectPolicy {
    ReconnectPolicy::new()
        .initial_delay(Duration::from_millis(100))
        .multiplier(2.0)
        .max_delay(Duration::from_secs(1))
        .jitter(0.0)
        .max_attempts(Some(5))
}

async fn start(
    builder: BridgeBuilder,
    script: &Script,
    connector: impl gabp_session::bridge::Connector,
) -> (Bridge, MockMod) {
    let mut mock = script.next_mod();
    let (bridge, _) = tokio::join!(builder.connect_with(connector), mock.handshake(ALL_METHODS));
    (bridge.expect("first handshake"), mock)
}

async fn wait_for(bridge: &Bridge, wanted: impl Fn(&ConnectionState) -> bool) -> ConnectionState {
    let mut states = bridge.connection_state();
    let state = soon(states.wait_for(|s| wanted(s)))
        .await
        .expect("bridge alive");
    state.clone()
}

#[tokio::test(start_paused = true)]
async fn reconnects_with_backoff_and_restores_subscriptions() {
    let (script, connector) = Script::new();
    let builder = Bridge::builder(token()).reconnect(policy());
    let (bridge, mut mock) = start(builder, &script, connector).await;

    let (sub, _) = tokio::join!(
        bridge.subscribe(["player/move", "world/block_change"]),
        mock.grant_subscribe(&["player/move", "world/block_change"])
    );
    let mut sub = sub.unwrap();
    mock.event("player/move", 0, json!({})).await;
    mock.event("player/move", 1, json!({})).await;

    // A call pending when the mod dies fails at once, reconnect or not.
    let pending = tokio::spawn({
        let bridge = bridge.clone();
        async move { bridge.call_tool("demo/echo", json!({})).await }
    });
    mock.expect("tools/call").await;
    let lost_at = Instant::now();
    drop(mock);
    assert!(matches!(
        soon(pending).await.unwrap(),
        Err(Error::Disconnected)
    ));
    let state = wait_for(&bridge, |s| {
        matches!(s, ConnectionState::Reconnecting { .. })
    })
    .await;
    assert!(
        matches!(
            state,
            ConnectionState::Reconnecting {
                attempt: 1,
                reason: DisconnectReason::PeerClosed
            }
        ),
        "{state:?}"
    );
    assert!(matches!(err(bridge.ping().await), Error::Disconnected));

    // Attempt 1 is refused; attempt 2 reaches a restarted mod.
    script.refuse();
    let mut mock = script.next_mod();
    let hello = mock.handshake(ALL_METHODS).await;
    let asked = mock
        .grant_subscribe(&["player/move", "world/block_change"])
        .await;
    assert_eq!(asked, ["player/move", "world/block_change"]);
    assert!(hello.params.is_some());

    let state = wait_for(&bridge, ConnectionState::is_connected).await;
    assert_eq!(state, ConnectionState::Connected { generation: 2 });
    let attempts = script.attempts();
    assert_eq!(attempts.len(), 3, "first connection plus two attempts");
    assert_eq!(attempts[1] - lost_at, Duration::from_millis(100));
    assert_eq!(attempts[2] - attempts[1], Duration::from_millis(200));

    // The stream: the events before the loss, the marker, then the new mod's events counted afresh.
    mock.event("player/move", 0, json!({"after": true})).await;
    let mut seen = Vec::new();
    for _ in 0..4 {
        match soon(sub.next()).await {
            Some(Ok(SubscriptionItem::Event(e))) => seen.push(format!("{}", e.seq)),
            Some(Ok(SubscriptionItem::Reconnected)) => seen.push("reconnected".into()),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(seen, ["0", "1", "reconnected", "0"]);

    // Calls work again on the new connection.
    let (pong, ()) = tokio::join!(bridge.ping(), async {
        let ping = mock.expect("session/ping").await;
        mock.reply(ping.id, json!({})).await;
    });
    pong.unwrap();
    // The same launch id across reconnects.
    assert_eq!(bridge.welcome().agent_id.as_str(), "mock-mod");
}

#[tokio::test(start_paused = true)]
async fn channels_the_restarted_mod_lacks_are_dropped() {
    let (script, connector) = Script::new();
    let builder = Bridge::builder(token()).reconnect(policy());
    let (bridge, mut mock) = start(builder, &script, connector).await;
    let (sub, _) = tokio::join!(
        bridge.subscribe(["player/move", "world/block_change"]),
        mock.grant_subscribe(&["player/move", "world/block_change"])
    );
    let sub = sub.unwrap();
    drop(mock);
    let mut mock = script.next_mod();
    mock.handshake(ALL_METHODS).await;
    mock.grant_subscribe(&["player/move"]).await;
    wait_for(&bridge, ConnectionState::is_connected).await;
    assert_eq!(sub.channels(), ["player/move"]);
}

#[tokio::test(start_paused = true)]
async fn gives_up_after_the_last_attempt() {
    let (script, connector) = Script::new();
    let builder = Bridge::builder(token()).reconnect(policy().max_attempts(Some(3)));
    let (bridge, mut mock) = start(builder, &script, connector).await;
    let (sub, _) = tokio::join!(
        bridge.subscribe(["player/move"]),
        mock.grant_subscribe(&["player/move"])
    );
    let mut sub = sub.unwrap();
    drop(mock);
    let state = soon(bridge.closed()).await;
    match state {
        ConnectionState::Disconnected {
            reason:
                DisconnectReason::GaveUp {
                    attempts,
                    last_error,
                },
        } => {
            assert_eq!(attempts, 3);
            assert!(last_error.contains("refused"), "{last_error}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(script.attempts().len(), 4);
    assert!(matches!(
        soon(sub.next()).await,
        Some(Err(Error::Disconnected))
    ));
    assert!(soon(sub.next()).await.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_refused_token_stops_reconnecting() {
    let (script, connector) = Script::new();
    let builder = Bridge::builder(token()).reconnect(policy());
    let (bridge, mock) = start(builder, &script, connector).await;
    drop(mock);
    let mut mock = script.next_mod();
    let hello = mock.expect("session/hello").await;
    mock.reply_error(hello.id, -31000, "Invalid token", None)
        .await;
    let state = soon(bridge.closed()).await;
    assert_eq!(
        state,
        ConnectionState::Disconnected {
            reason: DisconnectReason::AuthenticationFailed
        }
    );
    assert_eq!(script.attempts().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn goodbye_never_reconnects() {
    let (script, connector) = Script::new();
    let builder = Bridge::builder(token()).reconnect(policy());
    let (bridge, mut mock) = start(builder, &script, connector).await;
    let _spare = script.next_mod();
    let (bye, ()) = tokio::join!(bridge.goodbye(None), async {
        let request = mock.expect("session/goodbye").await;
        mock.reply(request.id, json!({})).await;
        drop(mock);
    });
    bye.unwrap();
    assert_eq!(bridge.state(), ConnectionState::Closed);
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(script.attempts().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn subscriptions_made_while_reconnecting_are_asked_in_the_handshake() {
    let (script, connector) = Script::new();
    let builder = Bridge::builder(token()).reconnect(policy());
    let (bridge, mock) = start(builder, &script, connector).await;
    drop(mock);
    wait_for(&bridge, |s| {
        matches!(s, ConnectionState::Reconnecting { .. })
    })
    .await;
    let mut sub = soon(bridge.service().subscribe(["player/move"]))
        .await
        .unwrap();
    assert_eq!(sub.channels(), ["player/move"]);
    let mut mock = script.next_mod();
    mock.handshake(ALL_METHODS).await;
    mock.grant_subscribe(&["player/move"]).await;
    wait_for(&bridge, ConnectionState::is_connected).await;
    mock.event("player/move", 5, json!({})).await;
    assert!(matches!(
        soon(sub.next()).await,
        Some(Ok(SubscriptionItem::Reconnected))
    ));
    assert!(matches!(soon(sub.next()).await, Some(Ok(SubscriptionItem::Event(e))) if e.seq == 5));
}

#[tokio::test]
async fn without_a_connector_the_policy_does_nothing() {
    let builder = Bridge::builder(token()).reconnect(policy());
    let (bridge, mock) = connected_with(builder, ALL_METHODS).await;
    drop(mock);
    let state = soon(bridge.closed()).await;
    assert_eq!(
        state,
        ConnectionState::Disconnected {
            reason: DisconnectReason::PeerClosed
        }
    );
}

#[tokio::test(start_paused = true)]
async fn a_restarted_mod_without_events_drops_subscriptions_without_asking() {
    let (script, connector) = Script::new();
    let builder = Bridge::builder(token()).reconnect(policy());
    let (bridge, mut mock) = start(builder, &script, connector).await;
    let (sub, _) = tokio::join!(
        bridge.subscribe(["player/move"]),
        mock.grant_subscribe(&["player/move"])
    );
    let sub = sub.unwrap();
    drop(mock);
    let mut mock = script.next_mod();
    mock.handshake(&["tools/call", "session/ping"]).await;
    wait_for(&bridge, ConnectionState::is_connected).await;
    assert!(sub.channels().is_empty());
    // Dropping it sends nothing either: the next frame the mod sees is the ping.
    drop(sub);
    let (pong, ()) = tokio::join!(bridge.ping(), async {
        let first = mock.recv().await;
        assert_eq!(first.method.as_str(), "session/ping");
        mock.reply(first.id, json!({})).await;
    });
    pong.unwrap();
}
