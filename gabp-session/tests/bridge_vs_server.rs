//! End to end: our `Bridge` against our `ModServer`, over TCP loopback, a Unix socket and in-memory pairs.

// Test code: a failed unwrap is a failed test (clippy allows it only inside #[test] functions).
#![allow(clippy::unwrap_used)]

mod bridge_support;

use std::time::{Duration, Instant};

use bridge_support::{soon, token};
use futures::future::join_all;
use futures::StreamExt;
use gabp_session::bridge::{Bridge, ConnectionState, ReconnectPolicy, SubscriptionItem};
use gabp_session::server::{CallError, ModServer, Resource, Tool};
use gabp_session::Error;
use gabp_transport::{Connection, Endpoint, Listener, Token};
use gabp_types::methods::{ResourcesListParams, StateGetParams, StateSetParams, StateSetResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

#[derive(Deserialize, Serialize, JsonSchema)]
struct Echo {
    value: Value,
}

#[derive(Deserialize, JsonSchema)]
struct Sleep {
    ms: u64,
}

#[derive(Serialize, JsonSchema)]
struct Slept {
    #[serde(rename = "sleptMs")]
    slept_ms: u64,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Position {
    x: i64,
    y: i64,
    z: i64,
}

#[derive(Deserialize, JsonSchema)]
struct Fail {
    message: String,
}

fn server() -> ModServer {
    let builder = ModServer::builder()
        .app("Test Game", "1.0.0")
        .token(token())
        .channel("player/move");
    let events = builder.event_publisher();
    builder
        .tool(Tool::new("demo/echo", |e: Echo| async move {
            Ok::<_, CallError>(e)
        }))
        .tool(Tool::new("demo/sleep", |s: Sleep| async move {
            tokio::time::sleep(Duration::from_millis(s.ms)).await;
            Ok::<_, CallError>(Slept { slept_ms: s.ms })
        }))
        .tool(Tool::new("demo/fail", |f: Fail| async move {
            Err::<Echo, _>(CallError::new(f.message))
        }))
        .tool(Tool::new("player/teleport", move |p: Position| {
            let events = events.clone();
            async move {
                events
                    .publish("player/move", &p)
                    .map_err(|e| CallError::new(e.to_string()))?;
                Ok::<_, CallError>(p)
            }
        }))
        .resource(Resource::text("gabp://game/world", "World", || async {
            Ok("{\"size\":16}".to_owned())
        }))
        .resource(Resource::binary("gabp://mod/info", "Info", || async {
            Ok(vec![0u8, 1, 2, 255])
        }))
        .state(
            |_p: StateGetParams| async {
                let mut state = Map::new();
                state.insert("player".into(), json!({"x": 1}));
                Ok(state)
            },
            |p: StateSetParams| async move {
                Ok(StateSetResult {
                    applied: p.updates,
                    errors: None,
                    extra: Map::new(),
                })
            },
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn every_core_method_over_tcp() {
    let handle = server().serve(Listener::bind(&Endpoint::tcp_v4(0)).await.unwrap());
    let bridge = soon(Bridge::connect(handle.endpoint(), token()))
        .await
        .unwrap();
    assert_eq!(bridge.welcome().app.name.as_str(), "Test Game");

    let tools = bridge.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for name in ["demo/echo", "demo/sleep", "demo/fail", "player/teleport"] {
        assert!(names.contains(&name), "{names:?}");
    }
    assert_eq!(
        bridge
            .call_tool("demo/echo", json!({"value": [1, "two"]}))
            .await
            .unwrap(),
        json!({"value": [1, "two"]})
    );
    let echoed: Echo = bridge
        .call_tool_as("demo/echo", &Echo { value: json!(3) })
        .await
        .unwrap();
    assert_eq!(echoed.value, json!(3));

    match bridge.call_tool("demo/sleep", json!({"ms": "soon"})).await {
        Err(Error::InvalidParams { errors, .. }) => assert!(!errors.is_empty()),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        bridge.call_tool("demo/nothing", json!({})).await,
        Err(Error::ToolNotFound { tool, .. }) if tool == "demo/nothing"
    ));
    assert!(matches!(
        bridge
            .call_tool("demo/fail", json!({"message": "no"}))
            .await,
        Err(Error::ToolFailed { .. })
    ));
    assert!(matches!(
        bridge.current_attention().await,
        Err(Error::NotAdvertised { .. })
    ));

    let resources = bridge
        .list_resources(ResourcesListParams::default())
        .await
        .unwrap();
    assert_eq!(resources.len(), 2);
    assert_eq!(
        bridge
            .read_resource("gabp://game/world")
            .await
            .unwrap()
            .content,
        "{\"size\":16}"
    );
    assert!(matches!(
        bridge.read_resource("gabp://nope/x").await,
        Err(Error::ResourceNotFound { .. })
    ));
    let state = bridge.get_state(StateGetParams::default()).await.unwrap();
    assert_eq!(state.state["player"], json!({"x": 1}));
    let mut updates = Map::new();
    updates.insert("player".into(), json!({"x": 2}));
    let applied = bridge
        .set_state(StateSetParams {
            updates,
            player_id: None,
            validate: None,
        })
        .await
        .unwrap();
    assert_eq!(applied.applied["player"], json!({"x": 2}));
    bridge.ping().await.unwrap();

    // Events caused by a tool arrive in order.
    let mut moves = bridge
        .subscribe(["player/move", "not/offered"])
        .await
        .unwrap();
    assert_eq!(moves.channels(), ["player/move"]);
    for x in 0..5 {
        bridge
            .call_tool("player/teleport", json!({"x": x, "y": 0, "z": 0}))
            .await
            .unwrap();
    }
    for x in 0..5u64 {
        match soon(moves.next()).await {
            Some(Ok(SubscriptionItem::Event(e))) => {
                assert_eq!(e.seq, x);
                assert_eq!(e.payload["x"], x);
            }
            other => panic!("{other:?}"),
        }
    }

    bridge.goodbye(Some("bye")).await.unwrap();
    assert_eq!(bridge.state(), ConnectionState::Closed);
    soon(handle.shutdown()).await;
}

#[tokio::test]
async fn a_pattern_subscribes_to_the_channels_it_matches() {
    let handle = server().serve(Listener::bind(&Endpoint::tcp_v4(0)).await.unwrap());
    let bridge = Bridge::connect(handle.endpoint(), token()).await.unwrap();
    let mut moves = bridge.subscribe(["player/*"]).await.unwrap();
    assert_eq!(moves.channels(), ["player/move"]);
    bridge
        .call_tool("player/teleport", json!({"x": 7, "y": 0, "z": 0}))
        .await
        .unwrap();
    match soon(moves.next()).await {
        Some(Ok(SubscriptionItem::Event(e))) => {
            assert_eq!(e.channel.as_str(), "player/move");
            assert_eq!(e.payload["x"], 7);
        }
        other => panic!("{other:?}"),
    }
    moves.unsubscribe().await.unwrap();
    bridge.goodbye(None).await.unwrap();
}

#[tokio::test]
async fn wrong_token_is_refused_by_the_server() {
    let handle = server().serve(Listener::bind(&Endpoint::tcp_v4(0)).await.unwrap());
    let wrong = Token::new("f".repeat(64)).unwrap();
    let result = soon(Bridge::connect(handle.endpoint(), wrong)).await;
    assert!(
        matches!(result, Err(Error::AuthenticationFailed { .. })),
        "{result:?}"
    );
    soon(handle.shutdown()).await;
}

#[tokio::test]
async fn many_calls_in_flight_are_each_answered_with_their_own_result() {
    let handle = server().serve(Listener::bind(&Endpoint::tcp_v4(0)).await.unwrap());
    let bridge = soon(Bridge::connect(handle.endpoint(), token()))
        .await
        .unwrap();
    let calls = (0..500).map(|i| {
        let bridge = bridge.clone();
        async move {
            let result = bridge.call_tool("demo/echo", json!({"value": i})).await;
            (i, result)
        }
    });
    let results = soon(join_all(calls)).await;
    for (i, result) in results {
        assert_eq!(result.unwrap(), json!({"value": i}));
    }
    assert_eq!(bridge.pending_calls(), 0);
    bridge.close().await;
    soon(handle.shutdown()).await;
}

#[tokio::test]
async fn a_mod_killed_mid_call_fails_pending_calls_within_100ms() {
    let server = server();
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let served = tokio::spawn(server.serve_connection(Connection::new(theirs)));
    let bridge = soon(Bridge::over(Connection::new(ours), token()))
        .await
        .unwrap();
    let pending: Vec<_> = (0..8)
        .map(|_| {
            let bridge = bridge.clone();
            tokio::spawn(async move { bridge.call_tool("demo/sleep", json!({"ms": 30000})).await })
        })
        .collect();
    soon(async {
        while bridge.pending_calls() < 8 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    let killed = Instant::now();
    served.abort();
    for call in pending {
        assert!(matches!(
            soon(call).await.unwrap(),
            Err(Error::Disconnected)
        ));
    }
    let elapsed = killed.elapsed();
    assert!(elapsed < Duration::from_millis(100), "took {elapsed:?}");
}

#[cfg(unix)]
#[tokio::test]
async fn reconnect_restores_subscriptions_after_the_mod_restarts() {
    let endpoint = Endpoint::unix_unique_in(std::env::temp_dir()).unwrap();
    let first = server();
    let handle = first.serve(Listener::bind(&endpoint).await.unwrap());
    let bridge = soon(
        Bridge::builder(token())
            .reconnect(
                ReconnectPolicy::new()
                    .initial_delay(Duration::from_millis(20))
                    .max_delay(Duration::from_millis(200))
                    .max_attempts(Some(50)),
            )
            .connect(&endpoint),
    )
    .await
    .unwrap();
    let mut moves = bridge.subscribe(["player/move"]).await.unwrap();
    bridge
        .call_tool("player/teleport", json!({"x": 1, "y": 2, "z": 3}))
        .await
        .unwrap();
    assert!(matches!(soon(moves.next()).await, Some(Ok(SubscriptionItem::Event(e))) if e.seq == 0));

    // The mod goes away and comes back on the same endpoint.
    soon(handle.shutdown()).await;
    let restarted = server();
    let publisher = restarted.event_publisher();
    let handle = restarted.serve(Listener::bind(&endpoint).await.unwrap());
    let mut states = bridge.connection_state();
    soon(states.wait_for(|s| *s == ConnectionState::Connected { generation: 2 }))
        .await
        .unwrap();
    assert!(matches!(
        soon(moves.next()).await,
        Some(Ok(SubscriptionItem::Reconnected))
    ));
    // Restored before the bridge reported itself connected: the new mod already has a subscriber.
    assert_eq!(publisher.subscriber_count("player/move"), 1);
    bridge
        .call_tool("player/teleport", json!({"x": 4, "y": 5, "z": 6}))
        .await
        .unwrap();
    match soon(moves.next()).await {
        Some(Ok(SubscriptionItem::Event(e))) => {
            assert_eq!(e.seq, 0, "the restarted mod counts afresh");
            assert_eq!(e.payload["x"], 4);
        }
        other => panic!("{other:?}"),
    }
    bridge.close().await;
    soon(handle.shutdown()).await;
}

/// Limits as large as a `usize` allows stand for "no limit": both sides serve, call and publish with them.
#[tokio::test]
async fn limits_as_large_as_a_usize_serve_calls_and_events() {
    let limits = gabp_session::server::ServerLimits::default()
        .with_max_concurrent_requests(usize::MAX)
        .with_event_queue(usize::MAX)
        .with_event_queue_bytes(usize::MAX);
    let builder = ModServer::builder()
        .token(token())
        .limits(limits)
        .channel("player/move");
    let events = builder.event_publisher();
    let server = builder
        .tool(Tool::new("demo/echo", |e: Echo| async move {
            Ok::<_, CallError>(e)
        }))
        .build()
        .unwrap();
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    tokio::spawn(server.serve_connection(Connection::new(theirs)));
    let bridge = Bridge::builder(token())
        .max_in_flight(usize::MAX)
        .outgoing_queue(usize::MAX);
    let bridge = soon(bridge.over(Connection::new(ours))).await.unwrap();
    let mut moves = bridge.subscribe(["player/move"]).await.unwrap();
    let echoed = bridge
        .call_tool("demo/echo", json!({"value": 1}))
        .await
        .unwrap();
    assert_eq!(echoed, json!({"value": 1}));
    events.publish("player/move", json!({"x": 1})).unwrap();
    assert!(matches!(soon(moves.next()).await, Some(Ok(SubscriptionItem::Event(e))) if e.seq == 0));
}
