//! The bridge gate fed the attention fixtures by a scripted mock mod: the upstream GABP 1.1.0 examples and
//! conformance cases, and our own CONFORMANCE/1.0 and EXAMPLES/1.0/attention. Valid messages move the gate
//! through its lifecycle; invalid attention events are dropped by the bridge and change nothing.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;

use gabp_attention::{AttentionGate, BlockedByAttention};
use gabp_session::bridge::{Bridge, BridgeRequest};
use gabp_types::MessageId;
use serde_json::{json, Value};
use support::{files, fixture, ours, pair, token, upstream, MockMod};

async fn gated(current: Value) -> (Bridge, AttentionGate, MockMod) {
    let (conn, mut mock) = pair();
    let builder = Bridge::builder(token());
    let gate = AttentionGate::new(&builder.service());
    let (bridge, ()) = tokio::join!(builder.layer(gate.layer()).over(conn), mock.handshake());
    let bridge = bridge.unwrap();
    mock.serve_sync(true, current).await;
    gate.sync().await;
    (bridge, gate, mock)
}

/// Proves the bridge read everything written before.
async fn flush(bridge: &Bridge, mock: &mut MockMod) {
    let ping = tokio::spawn({
        let bridge = bridge.clone();
        async move { bridge.ping().await }
    });
    mock.answer_ping().await;
    ping.await.unwrap().unwrap();
}

/// Whether a gated call is refused (without being sent: the next frame the mock reads is a ping) or goes
/// through.
async fn blocked(bridge: &Bridge, mock: &mut MockMod) -> Option<String> {
    let mut call = tokio::spawn({
        let bridge = bridge.clone();
        async move {
            bridge
                .send(BridgeRequest::tool_call("world/place_block", json!({})).unwrap())
                .await
        }
    });
    tokio::select! {
        result = &mut call => {
            let error = result.unwrap().unwrap_err();
            let blocked = BlockedByAttention::from_error(&error)
                .unwrap_or_else(|| panic!("not blocked by attention: {error}"));
            flush(bridge, mock).await;
            Some(blocked.attention.attention_id.as_str().to_owned())
        }
        request = mock.recv() => {
            assert_eq!(request.method.as_str(), "tools/call");
            mock.reply(request.id, json!({"success": true})).await;
            call.await.unwrap().unwrap();
            None
        }
    }
}

/// Replays a fixture response to the gate's `attention/ack`.
async fn ack_with(gate: &AttentionGate, mock: &mut MockMod, response: &Value) -> bool {
    let ack = tokio::spawn({
        let gate = gate.clone();
        async move { gate.ack().await }
    });
    let request = mock.expect("attention/ack").await;
    let mut response = response.clone();
    response["id"] = json!(request.id);
    mock.send(response).await;
    ack.await.unwrap().unwrap().acknowledged
}

fn path(dir: &Path, name: &str) -> Value {
    fixture(dir.join(name))
}

#[tokio::test]
async fn upstream_examples_walk_the_lifecycle() {
    let Some(upstream) = upstream() else {
        eprintln!("../shared/reference/gabp-1.1.0 is absent: upstream fixtures not run");
        return;
    };
    let examples = upstream.join("EXAMPLES/1.0/attention");
    // 041: the refresh finds attn_42 open and blocking.
    let current = path(&examples, "041_attention-current.res.json")["result"]["attention"].clone();
    let (bridge, gate, mut mock) = gated(current.clone()).await;
    assert_eq!(
        serde_json::to_value(gate.current().unwrap()).unwrap(),
        current
    );
    assert_eq!(
        blocked(&bridge, &mut mock).await.as_deref(),
        Some("attn_42")
    );

    // 042: the opened event of the same item.
    mock.send(path(&examples, "042_attention-opened.msg.json"))
        .await;
    flush(&bridge, &mut mock).await;
    assert_eq!(
        blocked(&bridge, &mut mock).await.as_deref(),
        Some("attn_42")
    );

    // 043/044: the ack (the gate sends 043's request) and its answer.
    let acknowledged = ack_with(
        &gate,
        &mut mock,
        &path(&examples, "044_attention-ack.res.json"),
    )
    .await;
    assert!(acknowledged);
    assert!(gate.current().is_none());
    assert_eq!(blocked(&bridge, &mut mock).await, None);

    // 045: the cleared event, after the ack: nothing changes.
    mock.send(path(&examples, "045_attention-cleared.msg.json"))
        .await;
    flush(&bridge, &mut mock).await;
    assert!(gate.current().is_none());
    assert_eq!(blocked(&bridge, &mut mock).await, None);

    // A late 042 (seq 7 again) is a duplicate for the bridge, and attn_42 is cleared for the gate.
    mock.send(path(&examples, "042_attention-opened.msg.json"))
        .await;
    flush(&bridge, &mut mock).await;
    assert!(gate.current().is_none());
}

#[tokio::test]
async fn upstream_conformance_cases() {
    let Some(upstream) = upstream() else {
        eprintln!("../shared/reference/gabp-1.1.0 is absent: upstream fixtures not run");
        return;
    };
    let valid = upstream.join("CONFORMANCE/1.0/valid");
    let invalid = upstream.join("CONFORMANCE/1.0/invalid");
    // 007: a non-blocking advisory item is open: nothing is gated.
    let current =
        path(&valid, "007_attention_current_response.json")["result"]["attention"].clone();
    let (bridge, gate, mut mock) = gated(current).await;
    assert_eq!(gate.current().unwrap().attention_id.as_str(), "attn_7");
    assert_eq!(blocked(&bridge, &mut mock).await, None);

    // Invalid 008 (no `blocking`): dropped, nothing changes.
    mock.send(path(&invalid, "008_attention_event_missing_blocking.json"))
        .await;
    flush(&bridge, &mut mock).await;
    assert_eq!(gate.current().unwrap().attention_id.as_str(), "attn_7");

    // 008: a blocking item opens.
    mock.send(path(&valid, "008_attention_opened_event.json"))
        .await;
    flush(&bridge, &mut mock).await;
    assert_eq!(blocked(&bridge, &mut mock).await.as_deref(), Some("attn_8"));

    // 009: the ack answers that another item, attn_9, is still open.
    let acknowledged = ack_with(
        &gate,
        &mut mock,
        &path(&valid, "009_attention_ack_response.json"),
    )
    .await;
    assert!(!acknowledged);
    assert_eq!(blocked(&bridge, &mut mock).await.as_deref(), Some("attn_9"));

    // Invalid 007 (ack without attentionId) is refused by the bridge before sending.
    let bad = path(&invalid, "007_attention_ack_missing_attention_id.json");
    let error = bridge
        .request("attention/ack", bad["params"].clone())
        .await
        .unwrap_err();
    assert!(
        matches!(error, gabp_session::Error::InvalidRequest { .. }),
        "{error}"
    );
}

#[tokio::test]
async fn our_corpus_walks_the_lifecycle_and_invalid_events_change_nothing() {
    let valid = ours().join("CONFORMANCE/1.0/valid");
    let invalid = ours().join("CONFORMANCE/1.0/invalid");
    let (bridge, gate, mut mock) = gated(Value::Null).await;

    // 057 opened, 058 updated: blocking; 059 cleared: open again.
    mock.send(path(&valid, "057_event_attention_opened.json"))
        .await;
    flush(&bridge, &mut mock).await;
    assert_eq!(
        blocked(&bridge, &mut mock).await.as_deref(),
        Some("att-chunk-save-2")
    );
    mock.send(path(&valid, "058_event_attention_updated.json"))
        .await;
    flush(&bridge, &mut mock).await;
    assert_eq!(gate.current().unwrap().total_urgent_entries, 6);

    // Every invalid attention event is dropped: the gate still knows att-chunk-save-2 as 058 left it. Those
    // invalid only for an unknown member are read liberally instead (SPEC/1.0 gabp.md §3.5): see
    // `an_attention_event_with_unknown_members_is_read_liberally`.
    let mut dropped = 0;
    for file in files(&invalid, "attention") {
        if file.to_string_lossy().ends_with("_unknown_field.json") {
            continue;
        }
        let message = fixture(&file);
        if message["type"] != "event" {
            continue;
        }
        let mut message = message;
        message["id"] = json!(MessageId::new_v4());
        mock.send(message).await;
        dropped += 1;
    }
    assert!(dropped >= 15, "invalid attention events: {dropped}");
    flush(&bridge, &mut mock).await;
    let current = gate.current().unwrap();
    assert_eq!(current.attention_id.as_str(), "att-chunk-save-2");
    assert_eq!(current.total_urgent_entries, 6);
    assert!(current.blocking);

    mock.send(path(&valid, "059_event_attention_cleared.json"))
        .await;
    flush(&bridge, &mut mock).await;
    assert!(gate.current().is_none());
    assert_eq!(blocked(&bridge, &mut mock).await, None);

    // 060: a non-blocking item opens (its seq moved next to 057's, so that no gap is reported).
    let mut minimal = path(&valid, "060_event_attention_minimal_payload.json");
    minimal["seq"] = json!(1);
    mock.send(minimal).await;
    flush(&bridge, &mut mock).await;
    assert_eq!(
        gate.current().unwrap().attention_id.as_str(),
        "att-chunk-save-1"
    );
    assert_eq!(
        blocked(&bridge, &mut mock).await,
        None,
        "a non-blocking item gates nothing"
    );
}

#[tokio::test]
async fn our_examples_walk_the_lifecycle() {
    let examples = ours().join("EXAMPLES/1.0/attention");
    let (bridge, gate, mut mock) = gated(Value::Null).await;

    // 060 opened, 061 updated: blocked.
    mock.send(path(&examples, "060_attention-opened.event.json"))
        .await;
    mock.send(path(&examples, "061_attention-updated.event.json"))
        .await;
    flush(&bridge, &mut mock).await;
    assert_eq!(
        blocked(&bridge, &mut mock).await.as_deref(),
        Some("att-chunk-save-2")
    );
    assert_eq!(gate.current().unwrap().total_urgent_entries, 4);

    // 062/063: a refresh through the gate's plain API answers the same item.
    let current = path(&examples, "063_attention-current.res.json");
    let refresh = tokio::spawn({
        let gate = gate.clone();
        async move { gate.refresh().await }
    });
    let request = mock.expect("attention/current").await;
    let mut response = current.clone();
    response["id"] = json!(request.id);
    mock.send(response).await;
    let item = refresh.await.unwrap().unwrap().unwrap();
    assert_eq!(
        serde_json::to_value(item).unwrap(),
        current["result"]["attention"]
    );

    // 064/065: the ack, answered acknowledged; the gate reopens at once.
    assert!(
        ack_with(
            &gate,
            &mut mock,
            &path(&examples, "065_attention-ack.res.json")
        )
        .await
    );
    assert!(gate.current().is_none());
    assert_eq!(blocked(&bridge, &mut mock).await, None);

    // 066: the cleared event changes nothing more.
    mock.send(path(&examples, "066_attention-cleared.event.json"))
        .await;
    flush(&bridge, &mut mock).await;
    assert!(gate.current().is_none());
    assert_eq!(blocked(&bridge, &mut mock).await, None);
}

#[tokio::test]
async fn an_attention_event_with_unknown_members_is_read_liberally() {
    // SPEC/1.0 gabp.md §3.5: 075 is strictly invalid only for its `clearedBy`; a bridge still reads it, so the
    // item it clears does not block forever.
    let valid = ours().join("CONFORMANCE/1.0/valid");
    let invalid = ours().join("CONFORMANCE/1.0/invalid");
    let (bridge, gate, mut mock) = gated(Value::Null).await;
    mock.send(path(&valid, "057_event_attention_opened.json"))
        .await;
    flush(&bridge, &mut mock).await;
    assert!(gate.current().is_some());
    mock.send(path(&invalid, "075_attention_cleared_unknown_field.json"))
        .await;
    flush(&bridge, &mut mock).await;
    assert!(gate.current().is_none());
    assert_eq!(blocked(&bridge, &mut mock).await, None);
}
