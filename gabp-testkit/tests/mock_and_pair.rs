//! MockMod, pair() and the Recorder, through a real gabp-session Bridge.

use std::time::Duration;

use futures::StreamExt;
use gabp_session::bridge::{Bridge, SubscriptionItem};
use gabp_session::server::{CallError, CloseReason, Tool};
use gabp_session::Error;
use gabp_testkit::{Direction, MockMod, MockTool};
use gabp_types::methods::{StateGetParams, StateSetParams};
use gabp_types::ErrorCode;
use serde_json::{json, Map, Value};

/// Fails the test instead of hanging when `fut` does not finish in 10 s.
async fn within<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), fut)
        .await
        .expect("timed out")
}

fn object(value: Value) -> Map<String, Value> {
    value.as_object().cloned().expect("an object")
}

#[tokio::test]
async fn scripted_tools_answer_as_scripted() {
    let mock = MockMod::builder()
        .tool(MockTool::returning("game/version", json!("1.2.3")))
        .tool(MockTool::failing(
            "game/save",
            CallError::new("disk full").retryable(true),
        ))
        .tool(MockTool::failing(
            "game/locked",
            CallError::new("locked").with_code(ErrorCode::TOOL_UNAVAILABLE),
        ))
        .tool(
            MockTool::with("math/add", |args| {
                Ok(json!(
                    args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)
                ))
            })
            .input_schema(json!({
                "type": "object",
                "properties": { "a": { "type": "integer" }, "b": { "type": "integer" } },
                "required": ["a", "b"]
            }))
            .title("Add")
            .description("Adds two integers.")
            .tags(["math", "read-only"]),
        )
        .tool(MockTool::with_async("math/twice", |args| async move {
            Ok(json!(args["n"].as_i64().unwrap_or(0) * 2))
        }))
        .session_tool(Tool::new("typed/hello", |_: Value| async {
            Ok::<_, CallError>("hello")
        }))
        .build()
        .expect("mock");
    let pair = within(mock.pair().connect()).await.expect("pair");
    let bridge = &pair.bridge;

    assert_eq!(
        bridge
            .call_tool("game/version", json!({}))
            .await
            .expect("version"),
        json!("1.2.3")
    );
    let failed = bridge.call_tool("game/save", json!({})).await.unwrap_err();
    assert!(matches!(failed, Error::ToolFailed { .. }), "{failed:?}");
    assert!(failed.is_retryable());
    let locked = bridge
        .call_tool("game/locked", json!({}))
        .await
        .unwrap_err();
    assert!(
        matches!(locked, Error::ToolUnavailable { .. }),
        "{locked:?}"
    );
    assert_eq!(
        bridge
            .call_tool("math/add", json!({"a": 2, "b": 3}))
            .await
            .expect("add"),
        json!(5)
    );
    let invalid = bridge
        .call_tool("math/add", json!({"a": 2}))
        .await
        .unwrap_err();
    assert!(
        matches!(invalid, Error::InvalidParams { .. }),
        "{invalid:?}"
    );
    assert_eq!(
        bridge
            .call_tool("math/twice", json!({"n": 21}))
            .await
            .expect("twice"),
        json!(42)
    );
    assert_eq!(
        bridge
            .call_tool("typed/hello", json!({}))
            .await
            .expect("typed"),
        json!("hello")
    );

    let tools = bridge.list_tools().await.expect("tools");
    let add = tools
        .iter()
        .find(|t| t.name == "math/add")
        .expect("math/add listed");
    assert_eq!(add.title.as_str(), "Add");
    assert!(add.has_tag("read-only"));

    // Only calls that reached a MockTool are logged (not the refused one, not the session tool).
    let calls = mock.calls();
    assert_eq!(calls.len(), 5, "{calls:?}");
    assert_eq!(mock.calls_to("math/add").len(), 1);
    assert_eq!(
        mock.calls_to("math/add")[0].arguments,
        object(json!({"a": 2, "b": 3}))
    );
    pair.recorder.assert_sent_strictly_valid();
}

#[tokio::test]
async fn a_delayed_tool_does_not_hold_up_a_fast_one() {
    let mock = MockMod::builder()
        .tool(MockTool::returning("slow/thing", json!("slow")).delay(Duration::from_secs(1)))
        .tool(MockTool::returning("fast/thing", json!("fast")))
        .build()
        .expect("mock");
    let pair = within(mock.pair().connect()).await.expect("pair");
    let slow_bridge = pair.bridge.clone();
    let slow = tokio::spawn(async move { slow_bridge.call_tool("slow/thing", json!({})).await });
    // The slow call is on its way before the fast one starts.
    let sent = pair
        .recorder
        .wait_for_request("tools/call", Duration::from_secs(5))
        .await;
    assert!(sent.is_some());
    assert_eq!(
        pair.bridge
            .call_tool("fast/thing", json!({}))
            .await
            .expect("fast"),
        json!("fast")
    );
    assert!(!slow.is_finished(), "the fast call waited for the slow one");
    assert_eq!(
        within(slow).await.expect("join").expect("slow"),
        json!("slow")
    );
}

#[tokio::test]
async fn state_resources_and_events() {
    let mock = MockMod::demo().expect("mock");
    let mut pair = within(mock.pair().connect()).await.expect("pair");
    let bridge = &pair.bridge;

    let state = bridge
        .get_state(StateGetParams::default())
        .await
        .expect("state");
    assert_eq!(state.state["tick"], 0);
    let set: StateSetParams =
        serde_json::from_value(json!({"updates": {"tick": 5, "weather": "rain"}})).expect("params");
    let applied = bridge.set_state(set).await.expect("set");
    assert_eq!(applied.applied["weather"], "rain");
    assert_eq!(mock.state()["tick"], 5);

    let readme = bridge
        .read_resource("gabp://mock/readme")
        .await
        .expect("resource");
    assert_eq!(readme.content, json!("A mock mod."));

    let mut moves = bridge.subscribe(["player/move"]).await.expect("subscribe");
    bridge
        .call_tool("player/teleport", json!({"x": 1, "y": 2, "z": 3}))
        .await
        .expect("teleport");
    let Some(Ok(SubscriptionItem::Event(moved))) = within(moves.next()).await else {
        panic!("expected the player/move event");
    };
    assert_eq!(moved.payload["position"], json!({"x": 1, "y": 2, "z": 3}));
    assert_eq!(pair.recorder.events("player/move").len(), 1);
    assert_eq!(pair.recorder.responses_to("tools/call").len(), 1);
    assert_eq!(pair.recorder.tool_calls("player/teleport").len(), 1);

    // The mod's side: after goodbye it closes the connection and says why.
    drop(moves);
    pair.bridge.goodbye(Some("done")).await.expect("goodbye");
    assert_eq!(within(pair.mod_closed()).await, Some(CloseReason::Goodbye));
}

#[tokio::test]
async fn the_recorder_sees_both_directions_and_waits() {
    let pair = within(gabp_testkit::pair()).await.expect("pair");
    let hello = &pair.recorder.requests("session/hello")[0];
    assert!(hello
        .params
        .as_ref()
        .is_some_and(|p| p.member("token").is_some()));
    assert_eq!(pair.recorder.responses_to("session/hello").len(), 1);

    let bridge = pair.bridge.clone();
    let ping = tokio::spawn(async move { bridge.ping().await });
    let seen = pair
        .recorder
        .wait_for_request("session/ping", Duration::from_secs(5))
        .await
        .expect("the ping is recorded");
    within(ping).await.expect("join").expect("ping");
    assert!(pair.recorder.response(seen.id).is_some());
    assert!(pair
        .recorder
        .frames_in(Direction::BridgeToMod)
        .iter()
        .all(|f| f.direction == Direction::BridgeToMod && !f.injected));
    assert!(
        !pair
            .recorder
            .wait_until(Duration::from_millis(50), |f| f.len() > 1000)
            .await
    );
    pair.recorder.clear();
    assert!(pair.recorder.is_empty());
}

#[tokio::test]
async fn strict_violations_name_the_frame() {
    // GABS sends `parameters` instead of `arguments`: the mod accepts it, the strict check does not.
    let linked = MockMod::demo().expect("mock").pair().connection();
    let token = linked.mock.token().clone();
    let recorder = linked.recorder.clone();
    let mut conn = linked.connection;
    use futures::SinkExt;
    let hello = json!({"v": "gabp/1", "id": "6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11", "type": "request",
        "method": "session/hello", "params": {"token": token.expose_secret(), "bridgeVersion": "1.0",
        "platform": "linux", "launchId": "6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a12"}});
    let call = json!({"v": "gabp/1", "id": "6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a13", "type": "request",
        "method": "tools/call", "params": {"name": "demo/echo", "parameters": {"value": 1}}});
    for message in [hello, call] {
        conn.send(serde_json::to_vec(&message).expect("json").into())
            .await
            .expect("send");
    }
    for _ in 0..2 {
        within(conn.next())
            .await
            .expect("a frame")
            .expect("readable");
    }
    let violations = recorder.strict_violations(Direction::BridgeToMod);
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(
        violations[0].to_string().contains("/params"),
        "{}",
        violations[0]
    );
    recorder.assert_mod_sent_strictly_valid();
    let caught = std::panic::catch_unwind(|| recorder.assert_sent_strictly_valid());
    assert!(caught.is_err(), "the assertion must fail");
}

#[tokio::test]
async fn a_configured_bridge_and_token() {
    let token = gabp_transport::Token::new("0123456789abcdef0123456789abcdef").expect("token");
    let mock = MockMod::builder()
        .token(token.clone())
        .app("Test Game", "9.9")
        .agent_id("test-agent")
        .build()
        .expect("mock");
    assert_eq!(mock.token(), &token);
    let pair = within(
        mock.pair()
            .bridge(|b| {
                b.client_info("suite", "1.0")
                    .request_timeout(Duration::from_secs(3))
            })
            .connect(),
    )
    .await
    .expect("pair");
    assert_eq!(pair.bridge.welcome().app.name.as_str(), "Test Game");
    assert_eq!(pair.bridge.welcome().agent_id.as_str(), "test-agent");

    // A bridge with the wrong token is refused.
    let linked = mock.pair().connection();
    let wrong = gabp_transport::Token::generate().expect("token");
    let refused = within(Bridge::over(linked.connection, wrong))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, Error::AuthenticationFailed { .. }),
        "{refused:?}"
    );
    assert_eq!(
        within(linked.served).await.expect("join"),
        CloseReason::AuthenticationFailed
    );
}

#[tokio::test]
async fn serving_on_tcp() {
    let mock = MockMod::demo().expect("mock");
    let served = mock.serve_tcp().await.expect("serve");
    let bridge = within(Bridge::connect(served.endpoint(), mock.token().clone()))
        .await
        .expect("connect");
    assert_eq!(
        bridge
            .call_tool("demo/echo", json!({"value": [1, 2]}))
            .await
            .expect("echo"),
        json!({"value": [1, 2]})
    );
    bridge.close().await;
    served.shutdown().await;
}

#[tokio::test]
async fn a_raw_client_that_cannot_connect_says_where_it_tried() {
    // Bound but not listening: the port stays ours and every connection to it is refused.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.bind("127.0.0.1:0".parse().unwrap()).expect("bind");
    let endpoint = gabp_transport::Endpoint::Tcp(socket.local_addr().expect("addr"));
    let error = match gabp_testkit::wire::RawClient::connect(&endpoint).await {
        Err(error) => error,
        Ok(_) => panic!("connected to a closed port"),
    };
    assert!(
        matches!(error, gabp_testkit::TestkitError::Transport(_)),
        "{error:?}"
    );
    assert!(error.to_string().contains(&endpoint.to_string()), "{error}");
}
