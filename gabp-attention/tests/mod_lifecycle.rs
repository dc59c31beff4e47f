//! The mod side over the wire: a `ModServer` with an `AttentionManager`, driven by a raw client that decodes
//! every frame strictly. Lifecycle, coalescing, `attention/current` and `attention/ack` (with the upstream
//! attention fixtures and our CONFORMANCE cases), the tracing layer, and the mod-side gate.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use gabp_attention::{Allowlist, AttentionManager, AttentionPolicy, Entry, BLOCKED_REASON};
use gabp_session::server::{CallError, ModServer, Tool};
use gabp_testkit::wire::RawClient;
use gabp_types::{AttentionState, ErrorCode, Severity};
use serde_json::{json, Value};
use support::{connect, files, fixture, ours, upstream, with_attention};
#[cfg(feature = "tracing-layer")]
use tracing_subscriber::layer::SubscriberExt;

fn server(attention: &AttentionManager) -> ModServer {
    attention
        .install(ModServer::builder().token(support::token()))
        .build()
        .unwrap()
}

async fn subscribed(server: &ModServer) -> RawClient {
    let mut client = connect(server).await;
    let result = client
        .ok(
            "events/subscribe",
            Some(
                json!({"channels": ["attention/opened", "attention/updated", "attention/cleared"]}),
            ),
        )
        .await;
    assert_eq!(result["subscribed"].as_array().unwrap().len(), 3);
    client
}

#[test]
fn welcome_advertises_the_attention_surface_only_when_installed() {
    let with = server(&AttentionManager::new());
    let caps = &with.welcome().capabilities;
    for method in ["attention/current", "attention/ack"] {
        assert!(caps.has_method(method), "{method}");
    }
    for channel in ["attention/opened", "attention/updated", "attention/cleared"] {
        assert!(caps.has_event(channel), "{channel}");
    }
    let without = ModServer::builder()
        .token(support::token())
        .build()
        .unwrap();
    assert!(!without
        .welcome()
        .capabilities
        .has_method("attention/current"));
    assert!(!without.welcome().capabilities.has_event("attention/opened"));
}

#[tokio::test(start_paused = true)]
async fn opened_once_updates_coalesced_cleared_on_ack() {
    let attention = AttentionManager::new();
    let server = server(&attention);
    let mut client = subscribed(&server).await;

    // No item yet.
    let current = client.ok("attention/current", None).await;
    assert_eq!(current, json!({"attention": null}));

    // A burst of a thousand errors, all within one window: opened, then one updated with the latest state.
    let first = attention.record(Severity::Error, "I/O error while writing chunk 0,0");
    for i in 1..1000 {
        attention.record_entry(
            Entry::new(
                Severity::Error,
                format!("I/O error while writing chunk {i},0"),
            )
            .signature("chunk-save"),
        );
    }
    let id = first.attention_id.clone().unwrap();
    let (event, opened) = with_attention(client.next_event().await);
    assert_eq!(event.channel.as_str(), "attention/opened");
    assert_eq!(event.seq, 0);
    assert_eq!(opened.attention_id.as_str(), id);
    assert_eq!(opened.state, AttentionState::Open);
    assert_eq!(opened.total_urgent_entries, 1);
    assert!(opened.blocking && opened.state_invalidated);
    assert_eq!(opened.opened_at_sequence, first.sequence);

    let (event, updated) = with_attention(client.next_event().await);
    assert_eq!(event.channel.as_str(), "attention/updated");
    assert_eq!(updated.attention_id.as_str(), id, "the id is stable");
    assert_eq!(updated.total_urgent_entries, 1000);
    assert_eq!(updated.latest_sequence, first.sequence + 999);
    let sample = updated.sample.clone().unwrap();
    assert_eq!(sample.len(), 2, "{sample:?}");
    assert_eq!(
        sample.iter().map(|s| s.repeat_count.get()).sum::<u64>(),
        1000
    );
    assert!(
        client.try_event(Duration::from_secs(1)).await.is_none(),
        "a thousand errors are two events"
    );

    // A slower burst over 350 ms: still only a handful of events.
    for _ in 0..350 {
        attention.record(Severity::Error, "tick overrun");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let mut updates = 0;
    while let Some((event, a)) = client
        .try_event(Duration::from_millis(500))
        .await
        .map(with_attention)
    {
        assert_eq!(event.channel.as_str(), "attention/updated");
        assert_eq!(a.attention_id.as_str(), id);
        updates += 1;
    }
    assert!((1..=5).contains(&updates), "{updates} updated events");
    assert_eq!(attention.current().unwrap().total_urgent_entries, 1350);

    // The current item answers attention/current.
    let current = client.ok("attention/current", None).await;
    assert_eq!(current["attention"]["attentionId"], id.as_str());

    // Acknowledging it clears it: the answer, then the cleared event.
    let ack = client
        .ok("attention/ack", Some(json!({"attentionId": id})))
        .await;
    assert_eq!(
        ack,
        json!({"acknowledged": true, "attentionId": id, "currentAttention": null})
    );
    let (event, cleared) = with_attention(client.next_event().await);
    assert_eq!(event.channel.as_str(), "attention/cleared");
    assert_eq!(cleared.state, AttentionState::Cleared);
    assert!(!cleared.blocking, "a cleared item blocks nothing");
    assert_eq!(cleared.total_urgent_entries, 1350);
    assert_eq!(
        client.ok("attention/current", None).await,
        json!({"attention": null})
    );

    // The next error opens a new item with a new id.
    let next = attention.record(Severity::Error, "again");
    assert_ne!(next.attention_id.as_deref(), Some(id.as_str()));
    let (event, _) = with_attention(client.next_event().await);
    assert_eq!((event.channel.as_str(), event.seq), ("attention/opened", 1));

    // An explicit clear publishes cleared too.
    attention.clear().unwrap();
    let (event, a) = with_attention(client.next_event().await);
    assert_eq!(event.channel.as_str(), "attention/cleared");
    assert_eq!(Some(a.attention_id.as_str()), next.attention_id.as_deref());
}

#[tokio::test]
async fn ack_of_another_id_changes_nothing() {
    let attention = AttentionManager::new();
    let server = server(&attention);
    let mut client = connect(&server).await;

    let none = client
        .ok(
            "attention/ack",
            Some(json!({"attentionId": "att-unknown-9"})),
        )
        .await;
    assert_eq!(
        none,
        json!({"acknowledged": false, "attentionId": "att-unknown-9", "currentAttention": null})
    );

    let open = attention.record(Severity::Error, "boom");
    let other = client
        .ok(
            "attention/ack",
            Some(json!({"attentionId": "att-unknown-9"})),
        )
        .await;
    assert_eq!(other["acknowledged"], false);
    assert_eq!(other["attentionId"], "att-unknown-9");
    assert_eq!(
        other["currentAttention"]["attentionId"],
        open.attention_id.unwrap().as_str()
    );
    assert!(attention.current().is_some(), "still open");
}

#[tokio::test]
async fn upstream_attention_fixtures_against_our_mod() {
    let Some(upstream) = upstream() else {
        eprintln!("../shared/reference/gabp-1.1.0 is absent: upstream fixtures not run");
        return;
    };
    let attention = AttentionManager::new();
    let server = server(&attention);
    let mut client = connect(&server).await;
    let examples = upstream.join("EXAMPLES/1.0/attention");

    // 040: attention/current with {} params; answered like 041 (strictly valid), null while nothing is open.
    let request = fixture(examples.join("040_attention-current.req.json"));
    let response = client.send_request(&request).await;
    assert_eq!(response.result().unwrap(), &json!({"attention": null}));

    let recorded = attention.record_entry(
        Entry::new(Severity::Error, "NullReferenceException in selection flow")
            .causal_method("rimworld/select_pawn")
            .causal_operation_id("op_abc123"),
    );
    attention.record(Severity::Warning, "Target no longer exists");
    let response = client.send_request(&request).await;
    let ours = response.result().unwrap()["attention"].clone();
    let theirs =
        fixture(examples.join("041_attention-current.res.json"))["result"]["attention"].clone();
    // Same members as upstream's example, minus the diagnostics cursor (this mod offers no diagnostics log).
    let keys = |v: &Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.retain(|k| k != "diagnosticsCursor");
        k.sort();
        k
    };
    assert_eq!(keys(&ours), keys(&theirs));
    assert_eq!(ours["causalMethod"], "rimworld/select_pawn");
    assert_eq!(ours["sample"].as_array().unwrap().len(), 2);

    // 043: acknowledging upstream's attn_42, which is not our item: nothing changes.
    let response = client
        .send_request(&fixture(examples.join("043_attention-ack.req.json")))
        .await;
    let result = response.result().unwrap();
    assert_eq!(result["acknowledged"], false);
    assert_eq!(result["attentionId"], "attn_42");
    assert_eq!(
        result["currentAttention"]["attentionId"],
        recorded.attention_id.clone().unwrap().as_str()
    );

    // The same request with our id: answered as 044 is.
    let mut ack = fixture(examples.join("043_attention-ack.req.json"));
    ack["params"]["attentionId"] = json!(recorded.attention_id.clone().unwrap());
    let response = client.send_request(&ack).await;
    let expected = fixture(examples.join("044_attention-ack.res.json"))["result"].clone();
    let result = response.result().unwrap();
    assert_eq!(result["acknowledged"], expected["acknowledged"]);
    assert_eq!(result["currentAttention"], expected["currentAttention"]);

    // Upstream's invalid ack (no attentionId) is refused -32602 and acknowledges nothing.
    let open = attention.record(Severity::Error, "again");
    let invalid = fixture(
        upstream.join("CONFORMANCE/1.0/invalid/007_attention_ack_missing_attention_id.json"),
    );
    let response = client.send_request(&invalid).await;
    assert_eq!(
        response.error_object().unwrap().code,
        ErrorCode::INVALID_PARAMS
    );
    assert_eq!(
        attention.current().unwrap().attention_id.as_str(),
        open.attention_id.unwrap()
    );
}

#[tokio::test]
async fn our_conformance_requests_against_our_mod() {
    let attention = AttentionManager::new();
    let server = server(&attention);
    let mut client = connect(&server).await;
    let valid = ours().join("CONFORMANCE/1.0/valid");
    let invalid = ours().join("CONFORMANCE/1.0/invalid");

    let requests: Vec<_> = files(&valid, "attention")
        .into_iter()
        .map(fixture)
        .filter(|v| v["type"] == "request")
        .collect();
    assert!(
        requests.len() >= 3,
        "valid attention requests: {}",
        requests.len()
    );
    for request in &requests {
        let response = client.send_request(request).await;
        assert!(
            response.result().is_some(),
            "{request} refused: {response:?}"
        );
    }

    let mut refused = 0;
    for path in files(&invalid, "attention") {
        let request = fixture(&path);
        if request["type"] != "request" {
            continue;
        }
        let response = client.send_request(&request).await;
        let code = response
            .error_object()
            .unwrap_or_else(|| panic!("{} accepted", path.display()))
            .code;
        assert_eq!(code, ErrorCode::INVALID_PARAMS, "{}", path.display());
        refused += 1;
    }
    assert!(refused >= 5, "invalid attention requests: {refused}");
}

#[cfg(feature = "tracing-layer")]
#[tokio::test]
async fn tracing_layer_opens_items_from_the_games_logging() {
    let attention = AttentionManager::new();
    let server = server(&attention);
    let mut client = subscribed(&server).await;
    let subscriber = tracing_subscriber::registry().with(attention.tracing_layer());
    tracing::subscriber::with_default(subscriber, || {
        tracing::warn!(target: "voxel", "autosave slow"); // alone, a warning opens nothing
        tracing::error!(target: "voxel", chunk = "0,0", "failed to save chunk");
        tracing::warn!(target: "voxel", "autosave slow");
    });
    let (event, opened) = with_attention(client.next_event().await);
    assert_eq!(event.channel.as_str(), "attention/opened");
    assert_eq!(opened.summary.as_str(), "failed to save chunk chunk=0,0");
    assert_eq!(opened.opened_at_sequence, 1);
    let item = attention.current().unwrap();
    assert_eq!((item.total_urgent_entries, item.latest_sequence), (2, 2));
}

fn counted_tool(name: &str, tags: &[&str], calls: &Arc<AtomicU64>) -> Tool {
    let calls = calls.clone();
    Tool::new(name, move |_: Value| {
        calls.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, CallError>(json!({"done": true})) }
    })
    .tags(tags.iter().copied())
}

#[tokio::test]
async fn mod_gate_refuses_game_bound_calls_while_a_blocking_item_is_open() {
    let attention = AttentionManager::builder()
        .mod_gate(Allowlist::default().allow_tool("game/save_now"))
        .build();
    let place = Arc::new(AtomicU64::new(0));
    let status = Arc::new(AtomicU64::new(0));
    let save = Arc::new(AtomicU64::new(0));
    let server = attention
        .install(ModServer::builder().token(support::token()))
        .tool(counted_tool(
            "world/place_block",
            &["world", "write"],
            &place,
        ))
        .tool(counted_tool("game/status", &["status"], &status))
        .tool(counted_tool("game/save_now", &["write"], &save))
        .build()
        .unwrap();
    let mut client = connect(&server).await;
    let call = |name: &str| json!({"name": name, "arguments": {}});

    client
        .ok("tools/call", Some(call("world/place_block")))
        .await;
    assert_eq!(place.load(Ordering::SeqCst), 1);

    // A non-blocking item gates nothing.
    attention.record_entry(Entry::new(Severity::Error, "slow autosave").blocking(false));
    client
        .ok("tools/call", Some(call("world/place_block")))
        .await;
    assert_eq!(place.load(Ordering::SeqCst), 2);

    // Once blocking: refused with -32401, not executed.
    attention.record(Severity::Error, "chunk 0,0 failed to save");
    let item = attention.blocking().unwrap();
    let response = client
        .call("tools/call", Some(call("world/place_block")))
        .await;
    let error = response.error_object().unwrap();
    assert_eq!(error.code, ErrorCode::TOOL_UNAVAILABLE);
    let data = error.data.clone().unwrap();
    assert_eq!(data["executed"], false);
    assert_eq!(data["reason"], BLOCKED_REASON);
    assert_eq!(data["attention"], serde_json::to_value(&item).unwrap());
    assert_eq!(
        data.as_object().unwrap().len(),
        3,
        "exactly executed, reason, attention"
    );
    assert_eq!(place.load(Ordering::SeqCst), 2, "the tool did not run");

    // Allowed by tag and by name; never gated: tools/list, attention/*, session/*; unknown tools are -32400.
    client.ok("tools/call", Some(call("game/status"))).await;
    client.ok("tools/call", Some(call("game/save_now"))).await;
    assert_eq!(status.load(Ordering::SeqCst), 1);
    assert_eq!(save.load(Ordering::SeqCst), 1);
    client.ok("tools/list", None).await;
    client.ok("session/ping", None).await;
    client.ok("attention/current", None).await;
    let unknown = client.call("tools/call", Some(call("world/unknown"))).await;
    assert_eq!(
        unknown.error_object().unwrap().code,
        ErrorCode::TOOL_NOT_FOUND
    );

    // After the ack, calls run again.
    let ack = client
        .ok(
            "attention/ack",
            Some(json!({"attentionId": item.attention_id.as_str()})),
        )
        .await;
    assert_eq!(ack["acknowledged"], true);
    client
        .ok("tools/call", Some(call("world/place_block")))
        .await;
    assert_eq!(place.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn policy_decides_what_opens_and_what_blocks() {
    let attention = AttentionManager::builder()
        .policy(
            AttentionPolicy::default()
                .open_at(Severity::Warning)
                .blocking_at(Some(Severity::Fatal))
                .invalidates_state_at(None),
        )
        .mod_gate(Allowlist::default())
        .build();
    let place = Arc::new(AtomicU64::new(0));
    let server = attention
        .install(ModServer::builder().token(support::token()))
        .tool(counted_tool("world/place_block", &["write"], &place))
        .build()
        .unwrap();
    let mut client = connect(&server).await;
    attention.record(Severity::Warning, "lag spike");
    let item = attention.current().unwrap();
    assert!(!item.blocking && !item.state_invalidated);
    client
        .ok("tools/call", Some(json!({"name": "world/place_block"})))
        .await;
    attention.record(Severity::Fatal, "world corrupted");
    let item = attention.current().unwrap();
    assert!(item.blocking && !item.state_invalidated);
    assert_eq!(item.severity, Severity::Fatal);
    let refused = client
        .call("tools/call", Some(json!({"name": "world/place_block"})))
        .await;
    assert_eq!(
        refused.error_object().unwrap().code,
        ErrorCode::TOOL_UNAVAILABLE
    );
    assert_eq!(place.load(Ordering::SeqCst), 1);
}
