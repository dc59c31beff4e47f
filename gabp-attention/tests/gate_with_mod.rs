//! The bridge gate against a real `ModServer` with an `AttentionManager`, over in-memory pairs: no request per
//! call, the related item of a call that ran, reconnects to the same and to a restarted mod, the plain API, and
//! a mod without attention.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use gabp_attention::{
    AttentionGate, AttentionManager, BlockedByAttention, GateError, RelatedAttention,
};
use gabp_session::bridge::{Bridge, BridgeRequest, ReconnectPolicy, SubscriptionItem};
use gabp_session::server::layer::InterceptLayer;
use gabp_session::server::{CallError, ModServer, ServerRequest, Tool};
use gabp_transport::Connection;
use gabp_types::Severity;
use parking_lot::Mutex;
use serde_json::{json, Value};
use support::token;
use tokio::sync::oneshot;

/// Counts requests by method as they reach the mod.
#[derive(Clone, Default)]
struct Requests(Arc<Mutex<Vec<String>>>);

impl Requests {
    fn count(&self, method: &str) -> usize {
        self.0.lock().iter().filter(|m| *m == method).count()
    }
}

struct Game {
    attention: AttentionManager,
    requests: Requests,
    tool_calls: Arc<AtomicU64>,
    server: ModServer,
}

/// A game with attention, a counted `world/place_block`, and `world/fragile`, which records an error and then
/// waits for the test's go-ahead before answering.
fn game(fragile: Option<oneshot::Receiver<()>>) -> Game {
    let attention = AttentionManager::new();
    let requests = Requests::default();
    let tool_calls = Arc::new(AtomicU64::new(0));
    let seen = requests.clone();
    let fragile = Arc::new(Mutex::new(fragile));
    let calls = tool_calls.clone();
    let fragile_attention = attention.clone();
    let server = attention
        .install(ModServer::builder().token(token()))
        .layer(InterceptLayer::new(move |req: &ServerRequest| {
            seen.0.lock().push(req.method().to_owned());
            None
        }))
        .tool(
            Tool::new("world/place_block", move |_: Value| {
                calls.fetch_add(1, Ordering::SeqCst);
                async { Ok::<_, CallError>(json!({"success": true})) }
            })
            .tags(["world", "write"]),
        )
        .tool(Tool::new("world/fragile", move |_: Value| {
            fragile_attention.record(Severity::Error, "the fragile block shattered");
            let go = fragile.lock().take();
            async move {
                if let Some(go) = go {
                    let _ = go.await;
                }
                Ok::<_, CallError>(json!({"placed": true}))
            }
        }))
        .build()
        .unwrap();
    Game {
        attention,
        requests,
        tool_calls,
        server,
    }
}

async fn gated_bridge(server: &ModServer) -> (Bridge, AttentionGate) {
    let (mod_side, bridge_side) = tokio::io::duplex(1 << 20);
    tokio::spawn(server.serve_connection(Connection::new(mod_side)));
    let builder = Bridge::builder(token());
    let gate = AttentionGate::new(&builder.service());
    let bridge = builder
        .layer(gate.layer())
        .over(Connection::new(bridge_side))
        .await
        .unwrap();
    gate.sync().await;
    (bridge, gate)
}

/// Waits for the next event on `channel` of the test's own subscription (the gate's subscription receives
/// it in the same pass of the bridge's reader).
async fn next_on(subscription: &mut gabp_session::bridge::Subscription, channel: &str) -> Value {
    loop {
        let item = tokio::time::timeout(support::PATIENCE, subscription.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let SubscriptionItem::Event(event) = item {
            if event.channel.as_str() == channel {
                return event.payload;
            }
        }
    }
}

#[tokio::test]
async fn no_request_per_call_and_blocked_calls_never_reach_the_mod() {
    let game = game(None);
    let (bridge, gate) = gated_bridge(&game.server).await;
    let mut watch = bridge
        .subscribe(["attention/opened", "attention/cleared"])
        .await
        .unwrap();

    for _ in 0..200 {
        bridge
            .call_tool("world/place_block", json!({}))
            .await
            .unwrap();
    }
    assert_eq!(game.tool_calls.load(Ordering::SeqCst), 200);
    assert_eq!(
        game.requests.count("attention/current"),
        1,
        "one refresh at connect, none per call"
    );
    assert_eq!(game.requests.count("tools/list"), 1);

    let recorded = game
        .attention
        .record(Severity::Error, "chunk 0,0 failed to save");
    let opened = next_on(&mut watch, "attention/opened").await;
    assert_eq!(
        opened["attentionId"].as_str(),
        recorded.attention_id.as_deref()
    );
    for _ in 0..10 {
        let error = bridge
            .call_tool("world/place_block", json!({}))
            .await
            .unwrap_err();
        let blocked = BlockedByAttention::from_error(&error).unwrap();
        assert_eq!(
            Some(blocked.attention.attention_id.as_str()),
            recorded.attention_id.as_deref()
        );
    }
    assert_eq!(
        game.tool_calls.load(Ordering::SeqCst),
        200,
        "no blocked call reached the tool"
    );
    assert_eq!(game.requests.count("tools/call"), 200);
    assert_eq!(game.requests.count("attention/current"), 1);

    gate.ack().await.unwrap();
    assert!(game.attention.current().is_none());
    next_on(&mut watch, "attention/cleared").await;
    bridge
        .call_tool("world/place_block", json!({}))
        .await
        .unwrap();
    assert_eq!(game.tool_calls.load(Ordering::SeqCst), 201);
}

#[tokio::test]
async fn a_call_that_ran_returns_the_item_it_raised() {
    let (go, wait) = oneshot::channel();
    let game = game(Some(wait));
    let (bridge, _gate) = gated_bridge(&game.server).await;
    let mut watch = bridge.subscribe(["attention/opened"]).await.unwrap();

    let call = tokio::spawn({
        let bridge = bridge.clone();
        async move {
            bridge
                .send(BridgeRequest::tool_call("world/fragile", json!({})).unwrap())
                .await
        }
    });
    // The tool recorded an error while running; the opened event reaches the bridge before its answer.
    let opened = next_on(&mut watch, "attention/opened").await;
    go.send(()).unwrap();
    let response = call.await.unwrap().unwrap();
    assert_eq!(response.result()["placed"], true, "it ran: its real result");
    let related = response.extensions().get::<RelatedAttention>().unwrap();
    assert_eq!(
        serde_json::to_value(&related.attention).unwrap()["attentionId"],
        opened["attentionId"]
    );
    // The next game-bound call is blocked.
    let error = bridge
        .call_tool("world/place_block", json!({}))
        .await
        .unwrap_err();
    assert!(BlockedByAttention::from_error(&error).is_some());
    assert_eq!(game.tool_calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn reconnects_to_the_same_mod_and_to_a_restarted_one() {
    let first = game(None);
    let current: Arc<Mutex<ModServer>> = Arc::new(Mutex::new(first.server.clone()));
    let serving: Arc<Mutex<Option<tokio::task::JoinHandle<()>>>> = Arc::default();
    let connector = {
        let current = current.clone();
        let serving = serving.clone();
        move || {
            let server = current.lock().clone();
            let serving = serving.clone();
            async move {
                let (mod_side, bridge_side) = tokio::io::duplex(1 << 20);
                let task = tokio::spawn(async move {
                    server.serve_connection(Connection::new(mod_side)).await;
                });
                *serving.lock() = Some(task);
                Ok(Connection::new(bridge_side))
            }
        }
    };
    let builder = Bridge::builder(token()).reconnect(
        ReconnectPolicy::new()
            .initial_delay(Duration::from_millis(1))
            .max_delay(Duration::from_millis(5)),
    );
    let gate = AttentionGate::new(&builder.service());
    let bridge = builder
        .layer(gate.layer())
        .connect_with(connector)
        .await
        .unwrap();
    gate.sync().await;
    let mut states = bridge.connection_state();

    let recorded = first
        .attention
        .record(Severity::Error, "the save file is corrupt");
    let item = gate.refresh().await.unwrap().unwrap();
    assert_eq!(
        Some(item.attention_id.as_str()),
        recorded.attention_id.as_deref()
    );

    // The connection drops; the same mod (the item still open) answers the reconnect.
    serving.lock().take().unwrap().abort();
    states
        .wait_for(|s| s.generation() == Some(2))
        .await
        .unwrap();
    let error = bridge
        .call_tool("world/place_block", json!({}))
        .await
        .unwrap_err();
    assert!(BlockedByAttention::from_error(&error).is_some());
    assert_eq!(
        first.requests.count("attention/current"),
        3,
        "connect, refresh, reconnect"
    );

    // The mod restarts without the item: after the reconnect's refresh, calls go through.
    let second = game(None);
    *current.lock() = second.server.clone();
    serving.lock().take().unwrap().abort();
    states
        .wait_for(|s| s.generation() == Some(3))
        .await
        .unwrap();
    bridge
        .call_tool("world/place_block", json!({}))
        .await
        .unwrap();
    assert_eq!(second.tool_calls.load(Ordering::SeqCst), 1);
    assert!(gate.current().is_none());
    assert_eq!(first.tool_calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn plain_api_without_the_layer() {
    let (go, wait) = oneshot::channel();
    let game = game(Some(wait));
    let (mod_side, bridge_side) = tokio::io::duplex(1 << 20);
    tokio::spawn(game.server.serve_connection(Connection::new(mod_side)));
    let bridge = Bridge::over(Connection::new(bridge_side), token())
        .await
        .unwrap();
    let gate = AttentionGate::builder()
        .gate_method("state/set")
        .build(&bridge.service());
    gate.sync().await;
    assert_eq!(gate.is_supported(), Some(true));
    assert!(matches!(gate.ack().await, Err(GateError::NothingOpen)));

    let placed = gate
        .call_tool("world/place_block", json!({}))
        .await
        .unwrap();
    assert_eq!(placed.value["success"], true);
    assert!(placed.attention.is_none());

    let mut watch = bridge.subscribe(["attention/opened"]).await.unwrap();
    let fragile = tokio::spawn({
        let gate = gate.clone();
        async move { gate.call_tool("world/fragile", json!({})).await }
    });
    next_on(&mut watch, "attention/opened").await;
    go.send(()).unwrap();
    let fragile = fragile.await.unwrap().unwrap();
    assert_eq!(fragile.value["placed"], true);
    let item = fragile.attention.unwrap();
    assert!(item.blocking);

    let error = gate
        .call_tool("world/place_block", json!({}))
        .await
        .unwrap_err();
    let blocked = BlockedByAttention::from_error(&error).unwrap();
    assert_eq!(blocked.attention.attention_id, item.attention_id);
    // A gated custom method is blocked too (state/set is not even served: it is refused before that).
    let error = gate
        .send(BridgeRequest::from_json("state/set", json!({"updates": {}})).unwrap())
        .await
        .unwrap_err();
    assert_eq!(
        BlockedByAttention::from_error(&error).unwrap().method,
        "state/set"
    );
    // The bare bridge is not gated: the mod (no mod-side gate here) runs the tool.
    bridge
        .call_tool("world/place_block", json!({}))
        .await
        .unwrap();
    assert_eq!(game.tool_calls.load(Ordering::SeqCst), 2);

    let ack = gate.ack().await.unwrap();
    assert!(ack.acknowledged && ack.current_attention.is_none());
    assert!(gate.blocking().is_none() && game.attention.current().is_none());
    gate.call_tool("world/place_block", json!({}))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_mod_without_attention_is_not_gated() {
    let calls = Arc::new(AtomicU64::new(0));
    let counted = calls.clone();
    let server = ModServer::builder()
        .token(token())
        .tool(Tool::new("world/place_block", move |_: Value| {
            counted.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, CallError>(json!({})) }
        }))
        .build()
        .unwrap();
    let (bridge, gate) = gated_bridge(&server).await;
    assert_eq!(gate.is_supported(), Some(false));
    bridge
        .call_tool("world/place_block", json!({}))
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(matches!(gate.ack().await, Err(GateError::NotSupported)));
    assert!(matches!(gate.refresh().await, Err(GateError::NotSupported)));
    assert!(format!("{gate:?}").contains("supported: Some(false)"));
}
