//! The `progress` and `cancel` extensions (SPEC/1.0 extensions.md §progress, §cancel), on the wire with a raw
//! client and through a real Bridge.

mod server_support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use gabp_session::server::{CallContext, CallError, ModServer, Tool};
use gabp_types::{ErrorCode, Message};
use serde_json::{json, Value};
use server_support::{code, connect_hello, request, result, RawClient};

/// `work/steps {n}`: reports each of `n` steps 20 ms apart, then answers `{done: n}`; a clone of its context
/// reports once more after it returned (that report must never reach the wire). `work/wait` waits for its
/// cancellation and records that it saw it.
fn server(cancelled: Arc<AtomicBool>) -> ModServer {
    server_support::builder()
        .tool(Tool::new(
            "work/steps",
            |ctx: CallContext, p: Value| async move {
                let n = p["n"].as_u64().unwrap_or(5);
                for i in 0..n {
                    ctx.progress(i as f64, Some(n as f64), Some("working"));
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                let late = ctx.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    late.progress(1e9, None, Some("after the answer"));
                });
                Ok::<_, CallError>(json!({ "done": n }))
            },
        ))
        .tool(Tool::new(
            "work/at_once",
            |ctx: CallContext, _: Value| async move {
                ctx.progress(1.0, Some(1.0), Some("done"));
                Ok::<_, CallError>(json!({ "done": 1 }))
            },
        ))
        .tool(Tool::new("work/wait", move |ctx: CallContext, _: Value| {
            // A task of the game's that watches the call's token (the handler itself is dropped when cancelled).
            let token = ctx.cancellation().clone();
            let cancelled = cancelled.clone();
            tokio::spawn(async move {
                token.cancelled().await;
                cancelled.store(true, Ordering::SeqCst);
            });
            async move {
                std::future::pending::<()>().await;
                Ok::<_, CallError>(json!({}))
            }
        }))
        .build()
        .expect("build")
}

async fn call_raw(client: &mut RawClient, params: Value) -> gabp_types::MessageId {
    let (id, message) = request("tools/call", Some(params));
    client.send_value(&message).await;
    id
}

#[tokio::test]
async fn the_welcome_advertises_both_extensions() {
    let server = server(Arc::default());
    let welcome = server.welcome();
    let extensions = welcome
        .capabilities
        .extensions
        .as_ref()
        .expect("extensions");
    assert_eq!(
        extensions.get("progress").map(|e| json!(e)),
        Some(json!({"channel": "tools/progress", "minIntervalMs": 50}))
    );
    assert!(extensions.get("cancel").is_some());
    let methods = welcome.capabilities.methods.as_ref().expect("methods");
    assert!(methods.iter().any(|m| m.as_str() == "tools/cancel"));
}

#[tokio::test]
async fn progress_comes_before_the_answer_and_never_after() {
    let server = server(Arc::default());
    let mut client = connect_hello(&server).await;
    let id = call_raw(
        &mut client,
        json!({"name": "work/steps", "arguments": {"n": 6}, "_meta": {"progressToken": 42}}),
    )
    .await;
    let mut progress = Vec::new();
    let answer = loop {
        match client.recv().await {
            Message::Event(e) => {
                assert_eq!(e.channel.as_str(), "tools/progress");
                assert_eq!(e.payload["progressToken"], 42);
                progress.push(e);
            }
            Message::Response(r) => break r,
            Message::Request(r) => panic!("{r:?}"),
        }
    };
    assert_eq!(answer.id, id);
    assert_eq!(result(&answer)["done"], 6);
    // 6 reports 20 ms apart, at most one per 50 ms: fewer events than reports, but more than one.
    assert!(
        (2..6).contains(&progress.len()),
        "{} progress events",
        progress.len()
    );
    let seqs: Vec<u64> = progress.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (0..progress.len() as u64).collect::<Vec<_>>());
    // The held-back report is the last step, sent before the answer.
    assert_eq!(progress.last().unwrap().payload["progress"], 5.0);
    // Nothing follows the answer, although the handler's clone reported again.
    assert!(client.try_event(Duration::from_millis(200)).await.is_none());
}

#[tokio::test]
async fn progress_of_a_call_answered_at_once_comes_before_its_answer() {
    let server = server(Arc::default());
    let mut client = connect_hello(&server).await;
    let id = call_raw(
        &mut client,
        json!({"name": "work/at_once", "_meta": {"progressToken": "t"}}),
    )
    .await;
    match client.recv().await {
        Message::Event(e) => {
            assert_eq!(e.channel.as_str(), "tools/progress");
            assert_eq!(e.payload["progress"], 1.0);
        }
        other => panic!("the progress should come first: {other:?}"),
    }
    match client.recv().await {
        Message::Response(r) => assert_eq!((r.id, result(&r)["done"].clone()), (id, json!(1))),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_call_without_a_token_gets_no_progress() {
    let server = server(Arc::default());
    let mut client = connect_hello(&server).await;
    let id = call_raw(
        &mut client,
        json!({"name": "work/steps", "arguments": {"n": 3}}),
    )
    .await;
    let answer = client.response(id).await;
    assert_eq!(result(&answer)["done"], 3);
    assert!(client.events().is_empty());
}

#[tokio::test]
async fn a_progress_token_of_the_wrong_type_is_invalid_params() {
    let server = server(Arc::default());
    let mut client = connect_hello(&server).await;
    for token in [json!({"a": 1}), json!(1.5), json!(null), json!([1])] {
        let id = call_raw(
            &mut client,
            json!({"name": "work/steps", "arguments": {"n": 1}, "_meta": {"progressToken": token}}),
        )
        .await;
        let answer = client.response(id).await;
        assert_eq!(code(&answer), Some(-32602), "{token}");
        assert!(
            server_support::data(&answer)
                .to_string()
                .contains("progressToken")
                || format!("{answer:?}").contains("progressToken"),
            "{answer:?}"
        );
    }
    let id = call_raw(&mut client, json!({"name": "work/steps", "_meta": 3})).await;
    assert_eq!(code(&client.response(id).await), Some(-32602));
}

#[tokio::test]
async fn tools_cancel_ends_a_running_call_with_one_answer() {
    let cancelled = Arc::new(AtomicBool::new(false));
    let server = server(cancelled.clone());
    let mut client = connect_hello(&server).await;
    let call = call_raw(&mut client, json!({"name": "work/wait"})).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (cancel, message) = request("tools/cancel", Some(json!({"id": call.as_str()})));
    client.send_value(&message).await;
    let mut answers = Vec::new();
    while answers.len() < 2 {
        match client.recv().await {
            Message::Response(r) => answers.push(r),
            other => panic!("{other:?}"),
        }
    }
    let to_cancel = answers
        .iter()
        .find(|r| r.id == cancel)
        .expect("cancel answered");
    assert_eq!(result(to_cancel), json!({"cancelled": true}));
    let to_call = answers
        .iter()
        .find(|r| r.id == call)
        .expect("call answered");
    assert_eq!(code(to_call), Some(ErrorCode::TOOL_CANCELLED.0));
    assert!(cancelled.load(Ordering::SeqCst) || wait_for(&cancelled).await);
    // Exactly one answer for the call: nothing more arrives.
    assert!(client.try_event(Duration::from_millis(200)).await.is_none());
    // A cancel of a finished or unknown call is answered, and harmless.
    for id in [
        call.as_str().to_owned(),
        gabp_types::MessageId::new_v4().to_string(),
    ] {
        let answer = client.call("tools/cancel", Some(json!({ "id": id }))).await;
        assert_eq!(result(&answer), json!({"cancelled": false}));
    }
    let answer = client.call("tools/cancel", Some(json!({}))).await;
    assert_eq!(code(&answer), Some(-32602));
}

async fn wait_for(flag: &AtomicBool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if flag.load(Ordering::SeqCst) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test]
async fn a_cancel_racing_the_result_never_gives_two_answers() {
    let server = server(Arc::default());
    let mut client = connect_hello(&server).await;
    for _ in 0..50 {
        let call = call_raw(
            &mut client,
            json!({"name": "work/steps", "arguments": {"n": 0}}),
        )
        .await;
        let (cancel, message) = request("tools/cancel", Some(json!({"id": call.as_str()})));
        client.send_value(&message).await;
        let mut seen = Vec::new();
        while seen.len() < 2 {
            match client.recv().await {
                Message::Response(r) => seen.push(r.id),
                other => panic!("{other:?}"),
            }
        }
        assert!(seen.contains(&call) && seen.contains(&cancel), "{seen:?}");
    }
    assert!(client.try_event(Duration::from_millis(100)).await.is_none());
}

#[tokio::test]
async fn the_bridge_streams_progress_and_dropping_a_call_cancels_it() {
    let cancelled = Arc::new(AtomicBool::new(false));
    let pair = gabp_testkit::pair_with(server(cancelled.clone()))
        .await
        .expect("pair");
    let (progress, call) = pair
        .bridge
        .call_tool_with_progress("work/steps", json!({"n": 5}));
    let (result, items) = futures::join!(call, progress.collect::<Vec<_>>());
    assert_eq!(result.expect("call")["done"], 5);
    assert!(items.len() >= 2, "{items:?}");
    assert!(items.windows(2).all(|w| w[0].progress <= w[1].progress));

    // A call given up (here: its time limit) is cancelled on the mod: its handler sees the token fire.
    let quick = pair.bridge.with_timeout(Duration::from_millis(100));
    let err = quick.call_tool("work/wait", json!({})).await.unwrap_err();
    assert!(matches!(err, gabp_session::Error::Timeout { .. }), "{err}");
    assert!(
        wait_for(&cancelled).await,
        "the mod's handler was not cancelled"
    );
}
