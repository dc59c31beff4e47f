//! Every fault of the FaultProxy, between a real gabp-session Bridge and the mock mod (in memory and over TCP).

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use gabp_session::bridge::{Bridge, SubscriptionItem};
use gabp_session::Error;
use gabp_testkit::{Direction, Fault, FaultProxy, MockMod};
use gabp_transport::{Connection, Frame};
use gabp_types::{ErrorCode, Message};
use serde_json::json;

/// Fails the test instead of hanging when `fut` does not finish in 10 s.
async fn within<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), fut)
        .await
        .expect("timed out")
}

/// A short time limit for calls whose answer a fault swallows.
const SHORT: Duration = Duration::from_millis(300);

#[tokio::test]
async fn delay_slows_one_direction() {
    let pair = within(gabp_testkit::pair()).await.expect("pair");
    pair.faults.inject(Fault::delay(
        Direction::ModToBridge,
        Duration::from_millis(150),
    ));
    let started = Instant::now();
    within(pair.bridge.ping()).await.expect("ping");
    assert!(started.elapsed() >= Duration::from_millis(150));
    pair.faults.clear();
    assert!(pair.faults.active().is_empty());
    within(pair.bridge.ping()).await.expect("ping");
}

#[tokio::test]
async fn drop_after_n_messages() {
    let pair = within(gabp_testkit::pair()).await.expect("pair");
    // The ping and its answer pass; then the connection is gone.
    pair.faults.inject(Fault::drop_after(2));
    within(pair.bridge.ping()).await.expect("the answer passes");
    let lost = within(pair.bridge.ping()).await.unwrap_err();
    assert!(matches!(lost, Error::Disconnected), "{lost:?}");

    let pair = within(gabp_testkit::pair()).await.expect("pair");
    pair.faults.inject(Fault::drop_after(0));
    let lost = within(pair.bridge.ping()).await.unwrap_err();
    assert!(matches!(lost, Error::Disconnected), "{lost:?}");
    assert!(pair
        .recorder
        .response(pair.recorder.requests("session/ping")[0].id)
        .is_none());
}

#[tokio::test]
async fn corrupt_next_frame_in_either_direction() {
    let pair = within(gabp_testkit::pair()).await.expect("pair");
    // Towards the mod: it answers -32700 with the nil id, which the bridge cannot match to the call.
    pair.faults
        .inject(Fault::corrupt_next(Direction::BridgeToMod));
    let lost = within(pair.bridge.with_timeout(SHORT).ping())
        .await
        .unwrap_err();
    assert!(matches!(lost, Error::Timeout { .. }), "{lost:?}");
    let answered = pair.recorder.wait_until(Duration::from_secs(5), |frames| {
        frames.iter().any(|f| {
            matches!(f.message(), Some(Message::Response(r))
                if r.id.is_nil() && r.error_object().is_some_and(|e| e.code == ErrorCode::PARSE_ERROR))
        })
    });
    assert!(
        answered.await,
        "the mod answered the corrupted frame with -32700"
    );

    // Towards the bridge: the answer is unreadable, the call times out, the connection goes on.
    pair.faults
        .inject(Fault::corrupt_next(Direction::ModToBridge));
    let lost = within(pair.bridge.with_timeout(SHORT).ping())
        .await
        .unwrap_err();
    assert!(matches!(lost, Error::Timeout { .. }), "{lost:?}");
    within(pair.bridge.ping())
        .await
        .expect("the fault applied once");
}

#[tokio::test]
async fn wrong_response_id_and_unsolicited_response() {
    let pair = within(gabp_testkit::pair()).await.expect("pair");
    pair.faults.inject(Fault::wrong_response_id());
    let lost = within(pair.bridge.with_timeout(SHORT).ping())
        .await
        .unwrap_err();
    assert!(matches!(lost, Error::Timeout { .. }), "{lost:?}");
    within(pair.bridge.ping())
        .await
        .expect("the fault applied once");

    pair.faults.inject(Fault::unsolicited_response());
    let injected = pair
        .recorder
        .wait_until(Duration::from_secs(5), |frames| {
            frames.iter().any(|f| f.injected)
        })
        .await;
    assert!(injected);
    // The bridge discards it quietly.
    within(pair.bridge.ping()).await.expect("ping");
    pair.recorder.assert_sent_strictly_valid();
}

#[tokio::test]
async fn skip_event_seq_shows_as_a_gap() {
    let pair = within(gabp_testkit::pair()).await.expect("pair");
    let mut moves = within(pair.bridge.subscribe(["player/move"]))
        .await
        .expect("subscribe");
    pair.mock
        .publish("player/move", json!({"n": 0}))
        .expect("publish");
    let Some(Ok(SubscriptionItem::Event(first))) = within(moves.next()).await else {
        panic!("expected an event");
    };
    pair.faults.inject(Fault::skip_event_seq());
    pair.mock
        .publish("player/move", json!({"n": 1}))
        .expect("publish");
    let Some(Ok(SubscriptionItem::Lagged { missed, .. })) = within(moves.next()).await else {
        panic!("expected a gap");
    };
    let Some(Ok(SubscriptionItem::Event(second))) = within(moves.next()).await else {
        panic!("expected an event");
    };
    assert_eq!(missed, 1);
    assert_eq!(second.seq, first.seq + 2);
    // The recorder shows what the mod really sent.
    let sent: Vec<u64> = pair
        .recorder
        .events("player/move")
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(sent, [first.seq, first.seq + 1]);
}

#[tokio::test]
async fn stop_reading_makes_a_slow_consumer() {
    let pair = within(gabp_testkit::pair()).await.expect("pair");
    pair.faults
        .inject(Fault::stop_reading(Direction::ModToBridge));
    let lost = within(pair.bridge.with_timeout(SHORT).ping())
        .await
        .unwrap_err();
    assert!(matches!(lost, Error::Timeout { .. }), "{lost:?}");
    // The mod's answer is still waiting on the wire, unread.
    assert!(pair.recorder.responses_to("session/ping").is_empty());
    pair.faults.resume_reading();
    within(pair.bridge.ping()).await.expect("reading resumed");
    assert_eq!(pair.recorder.responses_to("session/ping").len(), 2);
}

#[tokio::test]
async fn oversized_frames_in_both_directions() {
    let pair = within(gabp_testkit::pair()).await.expect("pair");
    let limit = pair.mock.server().limits().max_message_size;
    // Towards the mod: refused with -32600 and the nil id; the connection goes on.
    pair.faults
        .inject(Fault::oversized_frame(Direction::BridgeToMod, limit + 1));
    let refused = pair.recorder.wait_until(Duration::from_secs(5), |frames| {
        frames.iter().any(|f| {
            matches!(f.message(), Some(Message::Response(r)) if r.id.is_nil()
                && r.error_object().is_some_and(|e| e.code == ErrorCode::INVALID_REQUEST
                    && e.data.as_ref().is_some_and(|d| d["maxMessageSize"] == limit)))
        })
    });
    assert!(refused.await, "the mod refused the oversized frame");
    within(pair.bridge.ping()).await.expect("ping");

    // Towards the bridge: its codec skips the body, and it goes on.
    pair.faults.inject(Fault::oversized_frame(
        Direction::ModToBridge,
        2 * 1024 * 1024,
    ));
    within(pair.bridge.ping()).await.expect("ping");
    assert_eq!(
        pair.recorder.frames().iter().filter(|f| f.injected).count(),
        2
    );
}

#[tokio::test]
async fn accept_any_token_and_answer_before_hello() {
    let mock = MockMod::demo().expect("mock");
    let wrong = gabp_transport::Token::generate().expect("token");

    let linked = mock
        .pair()
        .fault(Fault::accept_any_token(mock.token().clone()))
        .connection();
    let bridge = within(Bridge::over(linked.connection, wrong.clone()))
        .await
        .expect("the wrong token is accepted");
    within(bridge.ping()).await.expect("ping");

    let linked = mock
        .pair()
        .fault(Fault::answer_before_hello(mock.token().clone()))
        .connection();
    let mut conn = linked.connection;
    let early = json!({"v": "gabp/1", "id": "6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11", "type": "request",
        "method": "tools/list", "params": {}});
    conn.send(Bytes::from(serde_json::to_vec(&early).expect("json")))
        .await
        .expect("send");
    let Some(Ok(Frame::Body(body))) = within(conn.next()).await else {
        panic!("expected an answer");
    };
    let answer: serde_json::Value = serde_json::from_slice(&body).expect("json");
    assert!(
        answer["result"]["tools"].is_array(),
        "served before hello: {answer}"
    );
    // The bridge's own hello is still checked: a wrong token is refused.
    let refused = within(Bridge::over(conn, wrong)).await.unwrap_err();
    assert!(
        matches!(refused, Error::AuthenticationFailed { .. }),
        "{refused:?}"
    );
}

#[tokio::test]
async fn unknown_envelope_field_is_read_leniently_by_the_bridge() {
    let pair = within(
        MockMod::demo()
            .expect("mock")
            .pair()
            .fault(Fault::unknown_envelope_field())
            .connect(),
    )
    .await
    .expect("the bridge reads the welcome leniently");
    within(pair.bridge.ping()).await.expect("ping");
    assert_eq!(pair.faults.active().len(), 1);
    // The recorder keeps what the mod sent, before the fault.
    pair.recorder.assert_mod_sent_strictly_valid();
}

#[tokio::test]
async fn a_proxy_on_tcp_between_a_real_bridge_and_a_real_mod() {
    let mock = MockMod::demo().expect("mock");
    let served = mock.serve_tcp().await.expect("serve");
    let proxy = FaultProxy::new();
    let handle = proxy
        .listen(served.endpoint().clone())
        .await
        .expect("listen");
    let bridge = within(Bridge::connect(handle.endpoint(), mock.token().clone()))
        .await
        .expect("connect through the proxy");
    within(bridge.call_tool("demo/echo", json!({"value": 1})))
        .await
        .expect("echo");
    assert_eq!(proxy.recorder().tool_calls("demo/echo").len(), 1);
    assert_eq!(proxy.connection_count(), 1);

    proxy.faults().inject(Fault::drop_after(0));
    let lost = within(bridge.ping()).await.unwrap_err();
    assert!(matches!(lost, Error::Disconnected), "{lost:?}");
    handle.shutdown().await;
    served.shutdown().await;
}

#[tokio::test]
async fn interpose_between_two_streams() {
    let mock = MockMod::demo().expect("mock");
    let proxy = FaultProxy::new();
    let (bridge_end, proxy_end) = tokio::io::duplex(4096);
    let (mod_side, _served) = mock.serve_in_memory();
    let link = tokio::spawn(proxy.interpose(proxy_end, mod_side));
    let bridge = within(Bridge::over(
        Connection::new(bridge_end),
        mock.token().clone(),
    ))
    .await
    .expect("handshake");
    within(bridge.goodbye(None)).await.expect("goodbye");
    drop(bridge);
    within(link)
        .await
        .expect("the link ends when both sides are closed");
}
