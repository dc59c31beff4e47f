//! `pair_with`: a user's own ModServer against a real Bridge in memory, with the recorder and faults of `pair()`.

use std::time::Duration;

use futures::StreamExt;
use gabp_session::bridge::SubscriptionItem;
use gabp_session::server::{CallError, CloseReason, ModServer, Tool};
use gabp_testkit::{pair_with, Direction, Fault, ServerPair};
use gabp_transport::Token;
use serde_json::{json, Value};

/// Fails the test instead of hanging when `fut` does not finish in 10 s.
async fn within<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), fut)
        .await
        .expect("timed out")
}

/// The game's own mod: one tool, one channel, a fresh token the test never sees.
fn my_mod() -> ModServer {
    ModServer::builder()
        .app("My Game", "2.0.0")
        .agent_id("my-game")
        .token(Token::generate().expect("token"))
        .channel("game/tick")
        .tool(
            Tool::new("game/double", |v: Value| async move {
                Ok::<_, CallError>(json!(v["n"].as_i64().unwrap_or(0) * 2))
            })
            .title("Double"),
        )
        .build()
        .expect("server")
}

#[tokio::test]
async fn the_bridge_authenticates_with_the_servers_own_token_and_calls_its_tools() {
    let pair = within(pair_with(my_mod())).await.expect("pair");
    assert_eq!(pair.bridge.welcome().agent_id.as_str(), "my-game");
    let tools = within(pair.bridge.list_tools()).await.expect("tools");
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].title, "Double");
    let doubled = within(pair.bridge.call_tool("game/double", json!({"n": 21})))
        .await
        .expect("call");
    assert_eq!(doubled, json!(42));
    assert_eq!(pair.recorder.tool_calls("game/double").len(), 1);
    assert_eq!(pair.recorder.requests("session/hello").len(), 1);
    pair.recorder.assert_sent_strictly_valid();
}

#[tokio::test]
async fn events_the_server_publishes_reach_the_bridge() {
    let pair = within(pair_with(my_mod())).await.expect("pair");
    let mut ticks = within(pair.bridge.subscribe(["game/tick"]))
        .await
        .expect("subscribed");
    pair.server
        .event_publisher()
        .publish("game/tick", json!({"n": 1}))
        .expect("published");
    match within(ticks.next()).await {
        Some(Ok(SubscriptionItem::Event(event))) => assert_eq!(event.payload, json!({"n": 1})),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_fault_armed_before_connecting_hits_the_handshake() {
    let refused = within(
        ServerPair::builder(my_mod())
            .fault(Fault::corrupt_next(Direction::ModToBridge))
            .bridge(|b| b.handshake_timeout(Duration::from_millis(300)))
            .connect(),
    )
    .await
    .expect_err("the welcome was corrupted on the wire");
    assert!(refused.to_string().contains("session/hello"), "{refused}");
}

#[tokio::test]
async fn bridge_options_and_faults_injected_later_apply() {
    let pair = within(
        ServerPair::builder(my_mod())
            .bridge(|b| b.client_info("my-test", "0.1"))
            .connect(),
    )
    .await
    .expect("pair");
    let hello = &pair.recorder.requests("session/hello")[0];
    assert_eq!(
        hello.params.as_ref().expect("params").to_value()["clientInfo"]["name"],
        "my-test"
    );
    let mut ticks = within(pair.bridge.subscribe(["game/tick"]))
        .await
        .expect("subscribed");
    let publish = |n: i64| {
        pair.server
            .event_publisher()
            .publish("game/tick", json!({ "n": n }))
            .expect("published")
    };
    publish(1);
    let Some(Ok(SubscriptionItem::Event(first))) = within(ticks.next()).await else {
        panic!("no first event")
    };
    pair.faults.inject(Fault::skip_event_seq());
    publish(2);
    match within(ticks.next()).await {
        Some(Ok(SubscriptionItem::Lagged { missed, .. })) => assert_eq!(missed, 1),
        other => panic!("{other:?}"),
    }
    match within(ticks.next()).await {
        Some(Ok(SubscriptionItem::Event(second))) => assert_eq!(second.seq, first.seq + 2),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn mod_closed_says_why_the_server_closed() {
    let mut pair = within(pair_with(my_mod())).await.expect("pair");
    within(pair.bridge.goodbye(Some("done")))
        .await
        .expect("goodbye");
    assert_eq!(within(pair.mod_closed()).await, Some(CloseReason::Goodbye));
    assert_eq!(within(pair.mod_closed()).await, None, "asked once");
}

#[tokio::test]
async fn a_wrong_token_is_refused_so_the_pair_really_uses_the_servers() {
    let server = my_mod();
    let other = Token::generate().expect("token");
    assert!(!server.token().verify(other.expose_secret()));
    // The same server, a bridge with another token: the handshake fails.
    let err = within(
        ServerPair::builder(server)
            .bridge(move |_| gabp_session::bridge::Bridge::builder(other))
            .connect(),
    )
    .await
    .expect_err("refused");
    assert!(err.to_string().contains("authentication"), "{err}");
}
