//! Races of the bridge gate, each with a deterministic ordering: a scripted mock mod writes the frames in the
//! order under test, and a `session/ping` round trip (whose answer comes after everything written before it)
//! proves the bridge has read what came earlier. No sleeps are used to synchronize.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use gabp_attention::{AttentionGate, BlockedByAttention, RelatedAttention};
use gabp_session::bridge::{Bridge, BridgeRequest, ReconnectPolicy};
use gabp_transport::Connection;
use serde_json::{json, Value};
use support::{cleared, item, pair, token, MockMod};
use tokio::sync::mpsc;

/// A bridge with the gate on its call path, over a fresh pair, handshake and first sync done (no item open).
async fn gated() -> (Bridge, AttentionGate, MockMod) {
    let (conn, mut mock) = pair();
    let builder = Bridge::builder(token());
    let gate = AttentionGate::new(&builder.service());
    let (bridge, ()) = tokio::join!(builder.layer(gate.layer()).over(conn), mock.handshake());
    let bridge = bridge.unwrap();
    mock.serve_sync(true, Value::Null).await;
    gate.sync().await;
    assert_eq!(gate.is_supported(), Some(true));
    assert!(gate.current().is_none());
    (bridge, gate, mock)
}

fn place(
    bridge: &Bridge,
) -> tokio::task::JoinHandle<Result<gabp_session::bridge::BridgeResponse, gabp_session::Error>> {
    let bridge = bridge.clone();
    tokio::spawn(async move {
        bridge
            .send(BridgeRequest::tool_call("world/place_block", json!({"x": 1})).unwrap())
            .await
    })
}

/// Proves the bridge read everything the mock wrote before this point.
async fn flush(bridge: &Bridge, mock: &mut MockMod) {
    let bridge = bridge.clone();
    let ping = tokio::spawn(async move { bridge.ping().await });
    mock.answer_ping().await;
    ping.await.unwrap().unwrap();
}

/// A gated call is refused without being sent: after it, the next frame the mock reads is a ping.
async fn assert_blocked_by(bridge: &Bridge, mock: &mut MockMod, id: &str) {
    let error = place(bridge).await.unwrap().unwrap_err();
    let blocked = BlockedByAttention::from_error(&error)
        .unwrap_or_else(|| panic!("not blocked by attention: {error}"));
    assert!(!blocked.executed());
    assert_eq!(blocked.attention.attention_id.as_str(), id);
    assert_eq!(blocked.tool.as_deref(), Some("world/place_block"));
    assert!(error.to_string().contains("was not executed"), "{error}");
    flush(bridge, mock).await;
}

/// A gated call goes through: the mock receives it and answers; returns the response.
async fn assert_passes(
    bridge: &Bridge,
    mock: &mut MockMod,
) -> gabp_session::bridge::BridgeResponse {
    let call = place(bridge);
    let request = mock.expect("tools/call").await;
    mock.reply(request.id, json!({"success": true})).await;
    call.await.unwrap().unwrap()
}

#[tokio::test]
async fn item_opens_while_a_call_is_in_flight() {
    let (bridge, gate, mut mock) = gated().await;
    let call = place(&bridge);
    let request = mock.expect("tools/call").await; // in flight at the mod
    mock.event("attention/opened", item("att-1", true)).await;
    mock.reply(request.id, json!({"success": true, "blockPlaced": "stone"}))
        .await;

    // The call ran: its real result, with the item that opened meanwhile.
    let response = call.await.unwrap().unwrap();
    assert_eq!(response.result()["blockPlaced"], "stone");
    let related = response.extensions().get::<RelatedAttention>().unwrap();
    assert_eq!(related.attention.attention_id.as_str(), "att-1");

    // The next game-bound call is blocked, and never sent.
    assert_blocked_by(&bridge, &mut mock, "att-1").await;
    assert_eq!(gate.blocking().unwrap().attention_id.as_str(), "att-1");
}

#[tokio::test]
async fn item_opens_and_clears_between_two_calls() {
    let (bridge, gate, mut mock) = gated().await;
    let first = assert_passes(&bridge, &mut mock).await;
    assert!(first.extensions().get::<RelatedAttention>().is_none());

    mock.event("attention/opened", item("att-2", true)).await;
    mock.event("attention/cleared", cleared("att-2")).await;
    flush(&bridge, &mut mock).await;

    // Opened and cleared before the second call started: it runs, and nothing is related to it.
    let second = assert_passes(&bridge, &mut mock).await;
    assert!(second.extensions().get::<RelatedAttention>().is_none());
    assert!(gate.current().is_none());

    // Opened (and not cleared) between two calls: the second is blocked.
    mock.event("attention/opened", item("att-3", true)).await;
    flush(&bridge, &mut mock).await;
    assert_blocked_by(&bridge, &mut mock, "att-3").await;
}

/// Opens `id` and waits until the gate has it.
async fn open(bridge: &Bridge, mock: &mut MockMod, id: &str) {
    mock.event("attention/opened", item(id, true)).await;
    flush(bridge, mock).await;
}

#[tokio::test]
async fn ack_racing_a_new_error_answer_first() {
    let (bridge, gate, mut mock) = gated().await;
    open(&bridge, &mut mock, "att-3").await;
    let ack = tokio::spawn({
        let gate = gate.clone();
        async move { gate.ack().await }
    });
    let request = mock.expect("attention/ack").await;
    assert_eq!(
        request.params.as_ref().unwrap().to_value()["attentionId"],
        "att-3"
    );
    // The mod clears att-3, answers, then a new error opens att-4.
    mock.reply(
        request.id,
        json!({"acknowledged": true, "attentionId": "att-3", "currentAttention": null}),
    )
    .await;
    assert!(ack.await.unwrap().unwrap().acknowledged);
    mock.event("attention/cleared", cleared("att-3")).await;
    mock.event("attention/opened", item("att-4", true)).await;
    flush(&bridge, &mut mock).await;
    assert_blocked_by(&bridge, &mut mock, "att-4").await;
}

#[tokio::test]
async fn ack_racing_a_new_error_events_first() {
    let (bridge, gate, mut mock) = gated().await;
    open(&bridge, &mut mock, "att-3").await;
    let ack = tokio::spawn({
        let gate = gate.clone();
        async move { gate.ack().await }
    });
    let request = mock.expect("attention/ack").await;
    // The events of the clear and of the new item reach the bridge before the answer, whose
    // `currentAttention: null` was true when the mod computed it and is stale now.
    mock.event("attention/cleared", cleared("att-3")).await;
    mock.event("attention/opened", item("att-4", true)).await;
    mock.reply(
        request.id,
        json!({"acknowledged": true, "attentionId": "att-3", "currentAttention": null}),
    )
    .await;
    assert!(ack.await.unwrap().unwrap().acknowledged);
    assert_eq!(gate.current().unwrap().attention_id.as_str(), "att-4");
    assert_blocked_by(&bridge, &mut mock, "att-4").await;
}

#[tokio::test]
async fn ack_racing_an_error_folded_into_the_acknowledged_item() {
    let (bridge, gate, mut mock) = gated().await;
    open(&bridge, &mut mock, "att-5").await;
    let ack = tokio::spawn({
        let gate = gate.clone();
        async move { gate.ack().await }
    });
    let request = mock.expect("attention/ack").await;
    // An error folded into att-5 just before the ack: the mod writes its answer first (answers go before
    // events), then the late `updated` of att-5, then `cleared`.
    mock.reply(
        request.id,
        json!({"acknowledged": true, "attentionId": "att-5", "currentAttention": null}),
    )
    .await;
    assert!(ack.await.unwrap().unwrap().acknowledged);
    assert!(
        gate.current().is_none(),
        "the ack reopened the gate at once"
    );
    let mut late = item("att-5", true);
    late["totalUrgentEntries"] = json!(2);
    mock.event("attention/updated", late).await;
    flush(&bridge, &mut mock).await;
    assert!(
        gate.current().is_none(),
        "a late update of a cleared item does not reopen it"
    );
    mock.event("attention/cleared", cleared("att-5")).await;
    let response = assert_passes(&bridge, &mut mock).await;
    assert_eq!(response.result()["success"], true);
}

#[tokio::test]
async fn ack_of_a_stale_item_learns_the_current_one() {
    let (bridge, gate, mut mock) = gated().await;
    open(&bridge, &mut mock, "att-6").await;
    let ack = tokio::spawn({
        let gate = gate.clone();
        async move { gate.ack().await }
    });
    let request = mock.expect("attention/ack").await;
    // The mod says att-6 is not the open item: att-7 is.
    mock.reply(
        request.id,
        json!({"acknowledged": false, "attentionId": "att-6", "currentAttention": item("att-7", true)}),
    )
    .await;
    assert!(!ack.await.unwrap().unwrap().acknowledged);
    assert_blocked_by(&bridge, &mut mock, "att-7").await;
}

#[tokio::test]
async fn allowlisted_and_ungated_calls_pass_while_blocked() {
    let (bridge, gate, mut mock) = gated().await;
    open(&bridge, &mut mock, "att-8").await;
    // Tagged `status` in tools/list: allowed.
    let status = tokio::spawn({
        let bridge = bridge.clone();
        async move { bridge.call_tool("game/status", Value::Null).await }
    });
    let request = mock.expect("tools/call").await;
    assert_eq!(
        request.params.as_ref().unwrap().to_value()["name"],
        "game/status"
    );
    mock.reply(request.id, json!({"ok": true})).await;
    assert_eq!(status.await.unwrap().unwrap()["ok"], true);
    // tools/list and attention/current are never gated.
    let list = tokio::spawn({
        let bridge = bridge.clone();
        async move { bridge.list_tools().await }
    });
    let request = mock.expect("tools/list").await;
    mock.reply(request.id, support::tools()).await;
    assert_eq!(list.await.unwrap().unwrap().len(), 2);
    assert_blocked_by(&bridge, &mut mock, "att-8").await;
    // An acknowledgement sent through the layered call path reopens the gate too.
    let ack = tokio::spawn({
        let bridge = bridge.clone();
        async move { bridge.ack_attention("att-8").await }
    });
    let request = mock.expect("attention/ack").await;
    mock.reply(
        request.id,
        json!({"acknowledged": true, "attentionId": "att-8", "currentAttention": null}),
    )
    .await;
    assert!(ack.await.unwrap().unwrap().acknowledged);
    assert!(gate.current().is_none());
    assert_passes(&bridge, &mut mock).await;
}

#[tokio::test]
async fn a_lagged_gap_refreshes_the_item_before_the_next_gated_call() {
    let (conn, mut mock) = pair();
    // Gaps are reported at once (no reorder window).
    let builder = Bridge::builder(token()).event_reordering(Duration::ZERO, 1);
    let gate = AttentionGate::new(&builder.service());
    let (bridge, ()) = tokio::join!(builder.layer(gate.layer()).over(conn), mock.handshake());
    let bridge = bridge.unwrap();
    mock.serve_sync(true, Value::Null).await;
    gate.sync().await;

    mock.event_at("attention/opened", 0, item("att-9", false))
        .await;
    // seq 1 and 2 are lost (an item the gate never saw); seq 3 is a non-blocking item.
    mock.event_at("attention/opened", 3, item("att-10", false))
        .await;
    // The gap makes the gate refresh: attention/current (and tools/list) may come before or after the ping
    // that proves the bridge read the events; the mod says a blocking item is open.
    let refreshed = json!({"attention": item("att-11", true)});
    let ping = tokio::spawn({
        let bridge = bridge.clone();
        async move { bridge.ping().await }
    });
    let mut refresh_answers = 0;
    loop {
        let request = mock.recv().await;
        match request.method.as_str() {
            "session/ping" => {
                mock.reply(request.id, json!({})).await;
                break;
            }
            "attention/current" => {
                refresh_answers += 1;
                mock.reply(request.id, refreshed.clone()).await;
            }
            "tools/list" => mock.reply(request.id, support::tools()).await,
            other => panic!("unexpected {other}"),
        }
    }
    ping.await.unwrap().unwrap();

    // The next gated call waits for that refresh (if it is not done yet), and is blocked by its answer; it
    // never reaches the mod.
    let mut call = place(&bridge);
    let error = loop {
        tokio::select! {
            result = &mut call => break result.unwrap().unwrap_err(),
            request = mock.recv() => match request.method.as_str() {
                "attention/current" => {
                    refresh_answers += 1;
                    mock.reply(request.id, refreshed.clone()).await;
                }
                "tools/list" => mock.reply(request.id, support::tools()).await,
                other => panic!("{other} reached the mod before the refresh"),
            },
        }
    };
    assert_eq!(refresh_answers, 1, "one refresh for one gap");
    let blocked = BlockedByAttention::from_error(&error).unwrap_or_else(|| panic!("{error:?}"));
    assert_eq!(blocked.attention.attention_id.as_str(), "att-11");
    flush(&bridge, &mut mock).await;
}

#[tokio::test]
async fn a_mod_side_refusal_teaches_the_gate() {
    let (bridge, gate, mut mock) = gated().await;
    let call = place(&bridge);
    let request = mock.expect("tools/call").await;
    mock.reply_error(
        request.id,
        json!({"code": -32401, "message": "blocked by attention att-12; acknowledge it with attention/ack",
               "data": {"executed": false, "reason": "blocked_by_attention", "attention": item("att-12", true)}}),
    )
    .await;
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(
        error.code().unwrap().code(),
        -32401,
        "the mod's own refusal stays as it is"
    );
    assert_eq!(gate.current().unwrap().attention_id.as_str(), "att-12");
    assert_blocked_by(&bridge, &mut mock, "att-12").await;
}

#[tokio::test]
async fn reconnect_while_an_item_is_open() {
    let (mocks_tx, mut mocks) = mpsc::unbounded_channel::<MockMod>();
    let connector = move || {
        let mocks_tx = mocks_tx.clone();
        async move {
            let (conn, mock): (Connection, MockMod) = pair();
            let _ = mocks_tx.send(mock);
            Ok(conn)
        }
    };
    let builder = Bridge::builder(token()).reconnect(
        ReconnectPolicy::new()
            .initial_delay(Duration::from_millis(1))
            .max_delay(Duration::from_millis(5)),
    );
    let gate = AttentionGate::new(&builder.service());
    let connecting = tokio::spawn(builder.layer(gate.layer()).connect_with(connector));
    let mut mock = mocks.recv().await.unwrap();
    mock.handshake().await;
    let bridge = connecting.await.unwrap().unwrap();
    mock.serve_sync(true, Value::Null).await;
    gate.sync().await;
    open(&bridge, &mut mock, "att-20").await;
    assert_blocked_by(&bridge, &mut mock, "att-20").await;

    let mut states = bridge.connection_state();
    // 1. The connection drops; the mod comes back with the item still open.
    mock.close().await;
    let mut mock = mocks.recv().await.unwrap();
    mock.handshake().await;
    let restore = mock.expect("events/subscribe").await;
    let channels = restore.params.as_ref().unwrap().to_value()["channels"].clone();
    mock.reply(restore.id, json!({"subscribed": channels}))
        .await;
    states
        .wait_for(|s| s.generation() == Some(2))
        .await
        .unwrap();
    // Until the refresh, the gate keeps what it knew; the refresh confirms the item.
    assert_eq!(gate.current().unwrap().attention_id.as_str(), "att-20");
    let call = place(&bridge);
    mock.serve_sync(false, item("att-20", true)).await;
    let blocked = call.await.unwrap().unwrap_err();
    assert_eq!(
        BlockedByAttention::from_error(&blocked)
            .unwrap()
            .attention
            .attention_id
            .as_str(),
        "att-20"
    );
    flush(&bridge, &mut mock).await;

    // 2. The connection drops again; the mod restarted, nothing is open. A call made before the refresh
    // waits for it (serve_sync fails on any other request), then goes through.
    mock.close().await;
    let mut mock = mocks.recv().await.unwrap();
    mock.handshake().await;
    let restore = mock.expect("events/subscribe").await;
    let channels = restore.params.as_ref().unwrap().to_value()["channels"].clone();
    mock.reply(restore.id, json!({"subscribed": channels}))
        .await;
    states
        .wait_for(|s| s.generation() == Some(3))
        .await
        .unwrap();
    let call = place(&bridge);
    mock.serve_sync(false, Value::Null).await;
    let request = mock.expect("tools/call").await;
    mock.reply(request.id, json!({"success": true})).await;
    call.await.unwrap().unwrap();
    assert!(gate.current().is_none());

    // 3. Ids repeat across mod restarts: att-20 may open again on the new mod and must block.
    open(&bridge, &mut mock, "att-20").await;
    assert_blocked_by(&bridge, &mut mock, "att-20").await;
}
