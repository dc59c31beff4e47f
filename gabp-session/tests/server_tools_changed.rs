//! Tools added and removed while serving, announced on `tools/changed` (SPEC/1.0 extensions.md
//! §tools-changed): what a bridge sees, what its cached list does, and what peers without the extension see.

// Test code: a failed unwrap is a failed test (clippy allows it only inside #[test] functions).
#![allow(clippy::unwrap_used)]

mod server_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use gabp_session::bridge::{Bridge, Subscription, SubscriptionItem};
use gabp_session::server::layer::InterceptLayer;
use gabp_session::server::{
    CallError, ModServer, ModServerBuilder, ServerRequest, Tool, TOOLS_CHANGED_EXTENSION,
};
use gabp_session::Error;
use gabp_transport::Connection;
use gabp_types::methods::TOOLS_CHANGED_CHANNEL;
use gabp_types::{Event, Message};
use serde_json::{json, Value};
use server_support::{builder, code, connect_hello, data, token, PATIENCE};

async fn soon<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(PATIENCE, future)
        .await
        .expect("did not finish in time")
}

fn echo(name: &str) -> Tool {
    Tool::new(name, |v: Value| async move { Ok::<_, CallError>(v) })
}

/// `builder` with `demo/echo`, counting the `tools/list` requests that reach the mod.
fn counted(builder: ModServerBuilder) -> (ModServer, Arc<AtomicUsize>) {
    let lists = Arc::new(AtomicUsize::new(0));
    let counter = lists.clone();
    let server = builder
        .tool(echo("demo/echo"))
        .layer(InterceptLayer::new(move |req: &ServerRequest| {
            if req.method() == "tools/list" {
                counter.fetch_add(1, Ordering::SeqCst);
            }
            None
        }))
        .build()
        .unwrap();
    (server, lists)
}

async fn bridge_to(server: &ModServer) -> Bridge {
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    tokio::spawn(server.serve_connection(Connection::new(theirs)));
    soon(Bridge::over(Connection::new(ours), token()))
        .await
        .unwrap()
}

fn names(tools: &[gabp_types::ToolDescriptor]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

async fn next_event(changes: &mut Subscription) -> Event {
    match soon(changes.next()).await {
        Some(Ok(SubscriptionItem::Event(event))) => event,
        other => panic!("expected a tools/changed event, got {other:?}"),
    }
}

#[tokio::test]
async fn a_tool_added_while_connected_is_announced_listed_and_callable_then_removed() {
    let (server, lists) = counted(builder().dynamic_tools(true));
    let bridge = bridge_to(&server).await;
    let mut changes = bridge.subscribe([TOOLS_CHANGED_CHANNEL]).await.unwrap();
    assert_eq!(changes.channels(), [TOOLS_CHANGED_CHANNEL]);

    // Cached: one tools/list for two calls.
    assert_eq!(names(&bridge.tools().await.unwrap()), ["demo/echo"]);
    assert_eq!(names(&bridge.tools().await.unwrap()), ["demo/echo"]);
    assert_eq!(lists.load(Ordering::SeqCst), 1);

    server.tools().add(echo("demo/bonus")).unwrap();
    let event = next_event(&mut changes).await;
    assert_eq!(event.seq, 0);
    assert_eq!(
        event.payload,
        json!({"added": ["demo/bonus"], "removed": []})
    );
    // The event reached the bridge, so its cached list is already stale: the next call asks again.
    assert_eq!(
        names(&bridge.tools().await.unwrap()),
        ["demo/echo", "demo/bonus"]
    );
    assert_eq!(lists.load(Ordering::SeqCst), 2);
    assert_eq!(
        bridge
            .call_tool("demo/bonus", json!({"n": 1}))
            .await
            .unwrap(),
        json!({"n": 1})
    );

    assert!(server.tools().remove("demo/bonus").unwrap());
    let event = next_event(&mut changes).await;
    assert_eq!(event.seq, 1);
    assert_eq!(
        event.payload,
        json!({"added": [], "removed": ["demo/bonus"]})
    );
    assert_eq!(names(&bridge.tools().await.unwrap()), ["demo/echo"]);
    assert_eq!(lists.load(Ordering::SeqCst), 3);
    match bridge.call_tool("demo/bonus", json!({})).await {
        Err(Error::ToolNotFound { tool, error }) => {
            assert_eq!(tool, "demo/bonus");
            assert_eq!(error.code.0, -32400);
        }
        other => panic!("expected -32400, got {other:?}"),
    }
    bridge.close().await;
}

#[tokio::test]
async fn the_cache_follows_changes_without_a_subscription_of_the_user() {
    let (server, lists) = counted(builder().dynamic_tools(true));
    let bridge = bridge_to(&server).await;
    let events = server.event_publisher();
    assert_eq!(events.subscriber_count(TOOLS_CHANGED_CHANNEL), 0);

    assert_eq!(names(&bridge.tools().await.unwrap()), ["demo/echo"]);
    // The bridge subscribed for its cache.
    assert_eq!(events.subscriber_count(TOOLS_CHANGED_CHANNEL), 1);
    server.tools().add(echo("demo/late")).unwrap();
    // No user subscription to wait on: the next list shows the tool once the event has arrived.
    soon(async {
        while !names(&bridge.tools().await.unwrap()).contains(&"demo/late") {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    let after_change = lists.load(Ordering::SeqCst);
    bridge.tools().await.unwrap();
    assert_eq!(lists.load(Ordering::SeqCst), after_change, "cached again");

    // A changed list is asked for again after invalidate_tools, too.
    bridge.invalidate_tools();
    bridge.tools().await.unwrap();
    assert_eq!(lists.load(Ordering::SeqCst), after_change + 1);
    bridge.close().await;
}

#[tokio::test]
async fn peers_that_do_not_subscribe_see_no_event() {
    let server = builder().dynamic_tools(true).build().unwrap();
    let mut raw = connect_hello(&server).await;
    // A bridge that neither subscribes nor uses the cached list stays unsubscribed.
    let bridge = bridge_to(&server).await;
    bridge.list_tools().await.unwrap();
    assert_eq!(
        server
            .event_publisher()
            .subscriber_count(TOOLS_CHANGED_CHANNEL),
        0
    );

    server.tools().add(echo("demo/quiet")).unwrap();
    server.tools().remove("demo/quiet").unwrap();
    let ping = raw.call("session/ping", None).await;
    assert!(ping.result().is_some());
    assert!(raw.events().is_empty(), "{:?}", raw.events());
    // The tool is gone for everyone: -32400 with data.tool.
    let gone = raw.call_tool("demo/quiet", json!({})).await;
    assert_eq!(code(&gone), Some(-32400));
    assert_eq!(data(&gone)["tool"], "demo/quiet");
    assert!(raw.events().is_empty(), "{:?}", raw.events());
    // Subscribed, a raw peer gets the event, strictly valid.
    let subscribed = raw
        .call(
            "events/subscribe",
            Some(json!({"channels": [TOOLS_CHANGED_CHANNEL]})),
        )
        .await;
    assert_eq!(
        subscribed.result().unwrap()["subscribed"],
        json!([TOOLS_CHANGED_CHANNEL])
    );
    server.tools().add(echo("demo/loud")).unwrap();
    let Message::Event(event) = raw.recv().await else {
        panic!("expected the event");
    };
    assert_eq!(event.seq, 2, "seq counts every change, listened to or not");
    assert_eq!(
        event.payload,
        json!({"added": ["demo/loud"], "removed": []})
    );
    bridge.close().await;
}

#[tokio::test]
async fn the_extension_is_advertised_only_by_servers_whose_tools_change() {
    let (dynamic, _) = counted(builder().dynamic_tools(true));
    let bridge = bridge_to(&dynamic).await;
    let welcome = bridge.welcome();
    let caps = &welcome.capabilities;
    assert!(caps.has_event(TOOLS_CHANGED_CHANNEL));
    let ext = caps.extensions.as_ref().unwrap();
    assert_eq!(
        ext.get(TOOLS_CHANGED_EXTENSION).unwrap()["channel"],
        TOOLS_CHANGED_CHANNEL
    );
    bridge.close().await;

    // A mod without the extension: nothing advertised, nothing subscribed, every call asks.
    let (fixed, lists) = counted(builder());
    let bridge = bridge_to(&fixed).await;
    let welcome = bridge.welcome();
    let caps = &welcome.capabilities;
    assert!(!caps.has_event(TOOLS_CHANGED_CHANNEL));
    assert!(caps
        .extensions
        .as_ref()
        .is_none_or(|e| e.get(TOOLS_CHANGED_EXTENSION).is_none()));
    assert_eq!(names(&bridge.tools().await.unwrap()), ["demo/echo"]);
    assert_eq!(names(&bridge.tools().await.unwrap()), ["demo/echo"]);
    assert_eq!(lists.load(Ordering::SeqCst), 2);
    assert_eq!(
        fixed
            .event_publisher()
            .subscriber_count(TOOLS_CHANGED_CHANNEL),
        0
    );
    assert!(fixed.tools().add(echo("demo/new")).is_err());
    bridge.close().await;
}

#[tokio::test]
async fn added_tools_keep_their_time_limit_and_running_calls_outlive_removal() {
    let server = builder().dynamic_tools(true).build().unwrap();
    let bridge = bridge_to(&server).await;
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let started = Arc::new(parking_lot::Mutex::new(Some(started_tx)));
    server
        .tools()
        .add_all([
            Tool::new("demo/slow", |_: Value| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok::<_, CallError>(())
            })
            .timeout(Duration::from_millis(50)),
            Tool::new("demo/gate", move |_: Value| {
                let started = started.lock().take();
                async move {
                    if let Some(tx) = started {
                        let _ = tx.send(());
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    Ok::<_, CallError>("done")
                }
            }),
        ])
        .unwrap();
    match bridge.call_tool("demo/slow", json!({})).await {
        Err(Error::ToolTimeout { error, .. }) => {
            assert_eq!(error.data.unwrap()["timeoutMs"], 50);
        }
        other => panic!("expected -32403 after 50 ms, got {other:?}"),
    }

    let running = tokio::spawn({
        let bridge = bridge.clone();
        async move { bridge.call_tool("demo/gate", json!({})).await }
    });
    soon(started_rx).await.unwrap();
    assert!(server.tools().remove("demo/gate").unwrap());
    assert_eq!(soon(running).await.unwrap().unwrap(), json!("done"));
    bridge.close().await;
}
