//! Bridge layers: a tower layer on the call path sees each request before it is sent, can refuse it
//! locally, sees the result, and can follow events and reconnects through the bridge's handle.

// Test code: a failed unwrap is a failed test (clippy allows it only inside #[test] functions).
#![allow(clippy::unwrap_used)]

mod bridge_support;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bridge_support::*;
use futures::StreamExt;
use gabp_session::bridge::{
    Bridge, BridgeRequest, BridgeResponse, BridgeService, ConnectionState, SubscriptionItem,
};
use gabp_session::Error;
use serde_json::json;
use tower::{Layer, Service};

#[derive(Debug, thiserror::Error)]
#[error("blocked: {tool}")]
struct Blocked {
    tool: String,
}

/// What the gate saw.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Request {
        method: String,
        tool: Option<String>,
    },
    Result(Result<serde_json::Value, String>),
}

/// A gate: refuses `tools/call` of blocked tools, records requests and results, and tags responses.
#[derive(Clone)]
struct Gate {
    blocked: Arc<Mutex<Vec<String>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

struct GateService<S> {
    inner: S,
    gate: Gate,
}

impl<S: Clone> Clone for GateService<S> {
    fn clone(&self) -> Self {
        GateService {
            inner: self.inner.clone(),
            gate: self.gate.clone(),
        }
    }
}

impl<S> Layer<S> for Gate {
    type Service = GateService<S>;
    fn layer(&self, inner: S) -> GateService<S> {
        GateService {
            inner,
            gate: self.clone(),
        }
    }
}

#[derive(Debug, PartialEq)]
struct Tag(&'static str);

impl<S> Service<BridgeRequest> for GateService<S>
where
    S: Service<BridgeRequest, Response = BridgeResponse, Error = Error> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = BridgeResponse;
    type Error = Error;
    type Future = Pin<Box<dyn Future<Output = Result<BridgeResponse, Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: BridgeRequest) -> Self::Future {
        let tool = request.tool_name().map(std::borrow::Cow::into_owned);
        self.gate.seen.lock().unwrap().push(Seen::Request {
            method: request.method().to_string(),
            tool: tool.clone(),
        });
        if let Some(tool) = tool.filter(|t| self.gate.blocked.lock().unwrap().contains(t)) {
            return Box::pin(async move { Err(Error::rejected(Blocked { tool })) });
        }
        let future = self.inner.call(request);
        let seen = self.gate.seen.clone();
        Box::pin(async move {
            let mut result = future.await;
            seen.lock().unwrap().push(Seen::Result(match &result {
                Ok(r) => Ok(r.result().clone()),
                Err(e) => Err(e.to_string()),
            }));
            if let Ok(response) = &mut result {
                response.extensions_mut().insert(Tag("gated"));
            }
            result
        })
    }
}

fn gate(blocked: &[&str]) -> Gate {
    Gate {
        blocked: Arc::new(Mutex::new(blocked.iter().map(|s| s.to_string()).collect())),
        seen: Arc::new(Mutex::new(Vec::new())),
    }
}

#[tokio::test]
async fn a_layer_sees_requests_and_results_and_can_refuse_locally() {
    let gate = gate(&["world/place_block"]);
    let (conn, mut mock) = pair();
    let builder = Bridge::builder(token()).layer(gate.clone());
    let (bridge, _) = tokio::join!(builder.over(conn), mock.handshake(ALL_METHODS));
    let bridge = bridge.unwrap();

    let refused = err(bridge.call_tool("world/place_block", json!({"x": 1})).await);
    assert_eq!(
        refused.rejection::<Blocked>().map(|b| b.tool.as_str()),
        Some("world/place_block")
    );

    let (result, ()) = tokio::join!(
        bridge.call_tool("world/get_block", json!({"x": 1})),
        async {
            // The first frame is this call: the refused one was never sent.
            let request = mock.recv().await;
            assert_eq!(
                request.params.as_ref().unwrap().to_value()["name"],
                "world/get_block"
            );
            mock.reply(request.id, json!({"block": "stone"})).await;
        }
    );
    assert_eq!(result.unwrap(), json!({"block": "stone"}));

    // Tagged responses come back through `send`.
    let request = BridgeRequest::from_json("session/ping", serde_json::Value::Null).unwrap();
    let (response, ()) = tokio::join!(bridge.send(request), async {
        let ping = mock.expect("session/ping").await;
        mock.reply(ping.id, json!({})).await;
    });
    assert_eq!(
        response.unwrap().extensions().get::<Tag>(),
        Some(&Tag("gated"))
    );

    let seen = gate.seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            Seen::Request {
                method: "tools/call".into(),
                tool: Some("world/place_block".into())
            },
            Seen::Request {
                method: "tools/call".into(),
                tool: Some("world/get_block".into())
            },
            Seen::Result(Ok(json!({"block": "stone"}))),
            Seen::Request {
                method: "session/ping".into(),
                tool: None
            },
            Seen::Result(Ok(json!({}))),
        ]
    );
    // The handle bypasses the layers.
    let handle = bridge.service();
    let blocked_again = tokio::join!(
        handle.request("tools/call", json!({"name": "world/place_block"})),
        async {
            let request = mock.expect("tools/call").await;
            mock.reply(request.id, json!("ran")).await;
        }
    );
    assert_eq!(blocked_again.0.unwrap(), json!("ran"));
}

#[tokio::test]
async fn layers_stack_first_added_outermost() {
    let outer = gate(&["a/b"]);
    let inner = gate(&["c/d"]);
    let (conn, _mock) = pair();
    let mut mock = _mock;
    let builder = Bridge::builder(token())
        .layer(outer.clone())
        .layer(inner.clone());
    let (bridge, _) = tokio::join!(builder.over(conn), mock.handshake(ALL_METHODS));
    let bridge = bridge.unwrap();
    assert!(err(bridge.call_tool("a/b", json!({})).await)
        .rejection::<Blocked>()
        .is_some());
    assert!(
        inner.seen.lock().unwrap().is_empty(),
        "the outer layer refused first"
    );
    assert!(err(bridge.call_tool("c/d", json!({})).await)
        .rejection::<Blocked>()
        .is_some());
    // The outer layer saw both requests, and the inner layer's refusal as the second one's result.
    let outer_seen = outer.seen.lock().unwrap().clone();
    assert_eq!(outer_seen.len(), 3);
    assert!(matches!(&outer_seen[2], Seen::Result(Err(e)) if e.contains("blocked: c/d")));
    assert_eq!(inner.seen.lock().unwrap().len(), 1);
}

/// A layer built from the bridge's handle: subscribes before the bridge connects and watches reconnects.
#[derive(Clone)]
struct Watcher {
    items: Arc<Mutex<Vec<String>>>,
    generations: Arc<Mutex<Vec<u64>>>,
}

impl Watcher {
    fn new(handle: &BridgeService) -> Watcher {
        let watcher = Watcher {
            items: Arc::new(Mutex::new(Vec::new())),
            generations: Arc::new(Mutex::new(Vec::new())),
        };
        let (items, generations) = (watcher.items.clone(), watcher.generations.clone());
        let handle = handle.clone();
        tokio::spawn(async move {
            let mut states = handle.connection_state();
            let mut sub = handle
                .subscribe(["attention/opened"])
                .await
                .expect("registered before connecting");
            loop {
                tokio::select! {
                    item = sub.next() => match item {
                        Some(Ok(SubscriptionItem::Event(e))) => items.lock().unwrap().push(format!("event {}", e.seq)),
                        Some(Ok(SubscriptionItem::Lagged { missed, .. })) => items.lock().unwrap().push(format!("lagged {missed}")),
                        Some(Ok(SubscriptionItem::Reconnected)) => items.lock().unwrap().push("reconnected".into()),
                        Some(Ok(_)) => {}
                        Some(Err(_)) | None => break,
                    },
                    changed = states.changed() => {
                        if changed.is_err() { break; }
                        if let ConnectionState::Connected { generation } = *states.borrow_and_update() {
                            generations.lock().unwrap().push(generation);
                        }
                    }
                }
            }
        });
        watcher
    }
}

impl<S> Layer<S> for Watcher {
    type Service = S;
    fn layer(&self, inner: S) -> S {
        inner
    }
}

#[tokio::test]
async fn a_layer_can_subscribe_before_connecting_and_follow_reconnects() {
    // Two connections, handed out in turn.
    let (first, mut mock) = pair();
    let (second, mut restarted) = pair();
    let queue = Arc::new(Mutex::new(std::collections::VecDeque::from([
        first, second,
    ])));
    let connector = move || {
        let next = queue.lock().unwrap().pop_front();
        async move {
            next.ok_or_else(|| gabp_transport::TransportError::Io {
                op: "connect to",
                target: "mock".into(),
                source: std::io::ErrorKind::ConnectionRefused.into(),
            })
        }
    };
    let watcher_slot: Arc<Mutex<Option<Watcher>>> = Arc::default();
    let slot = watcher_slot.clone();
    let builder = Bridge::builder(token())
        .event_reordering(Duration::ZERO, 8)
        .reconnect(
            gabp_session::bridge::ReconnectPolicy::new()
                .initial_delay(Duration::from_millis(1))
                .jitter(0.0),
        )
        .layer_with(move |handle| {
            let watcher = Watcher::new(handle);
            *slot.lock().unwrap() = Some(watcher.clone());
            watcher
        });
    // Let the watcher register its subscription before the handshake.
    tokio::task::yield_now().await;
    let script = async {
        mock.handshake(ALL_METHODS).await;
        // The subscription is asked for during the handshake, before the bridge reports itself connected.
        mock.grant_subscribe(&["attention/opened"]).await;
    };
    let (bridge, ()) = tokio::join!(builder.connect_with(connector), script);
    let bridge = bridge.unwrap();
    let attention = json!({"attentionId": "a1", "state": "open", "severity": "error", "blocking": true,
        "stateInvalidated": false, "summary": "boom", "openedAtSequence": 1, "latestSequence": 1,
        "totalUrgentEntries": 1});
    mock.event("attention/opened", 0, attention.clone()).await;
    mock.event("attention/opened", 2, attention.clone()).await;
    let watcher = watcher_slot.lock().unwrap().clone().unwrap();
    let wait_items = |n: usize| {
        let items = watcher.items.clone();
        soon(async move {
            while items.lock().unwrap().len() < n {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
    };
    wait_items(3).await;

    // The mod restarts: the watcher's subscription is restored and it learns of the reconnect.
    drop(mock);
    restarted.handshake(ALL_METHODS).await;
    restarted.grant_subscribe(&["attention/opened"]).await;
    restarted.event("attention/opened", 0, attention).await;
    wait_items(5).await;
    assert_eq!(
        *watcher.items.lock().unwrap(),
        ["event 0", "lagged 1", "event 2", "reconnected", "event 0"]
    );
    soon(async {
        while watcher.generations.lock().unwrap().last() != Some(&2) {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
    assert_eq!(bridge.state(), ConnectionState::Connected { generation: 2 });
}

#[tokio::test]
async fn a_pass_through_layer_changes_nothing() {
    let (conn, mut mock) = pair();
    let builder = Bridge::builder(token()).layer(tower::layer::util::Identity::new());
    let (bridge, _) = tokio::join!(builder.over(conn), mock.handshake(&["tools/call"]));
    let bridge = bridge.unwrap();
    assert!(
        format!("{bridge:?}").contains("layered: false"),
        "{bridge:?}"
    );
    let (result, ()) = tokio::join!(bridge.call_tool("demo/echo", json!({"value": 3})), async {
        let request = mock.expect("tools/call").await;
        mock.reply(request.id, json!({"value": 3})).await;
    });
    assert_eq!(result.unwrap(), json!({"value": 3}));
    assert!(matches!(
        err(bridge.list_tools().await),
        Error::NotAdvertised { .. }
    ));
}

#[tokio::test]
async fn a_builder_dropped_unconnected_ends_what_its_layers_registered() {
    let builder = Bridge::builder(token());
    let handle = builder.service();
    let mut sub = handle.subscribe(["player/move"]).await.unwrap();
    assert_eq!(handle.state(), ConnectionState::Connecting);
    drop(builder);
    assert!(matches!(soon(sub.next()).await, Some(Err(Error::Closed))));
    assert_eq!(handle.state(), ConnectionState::Closed);
    assert!(matches!(
        err(handle.request("tools/list", serde_json::Value::Null).await),
        Error::Closed
    ));
}

/// A layer that is not always ready (a concurrency limit of one): the call that finds it busy waits for it,
/// the calls after it do too, and once all are answered the path is free again (no capacity left reserved).
#[tokio::test]
async fn a_layer_that_is_not_ready_holds_calls_back_until_it_is() {
    let (conn, mut mock) = pair();
    let builder = Bridge::builder(token()).layer(tower::limit::ConcurrencyLimitLayer::new(1));
    let (bridge, _) = tokio::join!(builder.over(conn), mock.handshake(&["tools/call"]));
    let bridge = bridge.unwrap();
    let call = |value: i64| {
        let bridge = bridge.clone();
        tokio::spawn(async move {
            bridge
                .call_tool("demo/echo", json!({ "value": value }))
                .await
        })
    };

    let first = call(1);
    let r1 = mock.expect("tools/call").await;
    let (second, third) = (call(2), call(3));
    assert!(
        mock.try_recv(Duration::from_millis(100)).await.is_none(),
        "a call got past a layer that was not ready"
    );
    mock.reply(r1.id, json!({"value": 1})).await;
    assert_eq!(soon(first).await.unwrap().unwrap(), json!({"value": 1}));

    for _ in 0..2 {
        let r = mock.expect("tools/call").await;
        let value = r.params.as_ref().unwrap().to_value()["arguments"]["value"].clone();
        assert!(
            mock.try_recv(Duration::from_millis(50)).await.is_none(),
            "two calls in flight through a limit of one"
        );
        mock.reply(r.id, json!({ "value": value })).await;
    }
    assert_eq!(soon(second).await.unwrap().unwrap(), json!({"value": 2}));
    assert_eq!(soon(third).await.unwrap().unwrap(), json!({"value": 3}));

    let (fourth, ()) = tokio::join!(bridge.call_tool("demo/echo", json!({"value": 4})), async {
        let r = mock.expect("tools/call").await;
        mock.reply(r.id, json!({"value": 4})).await;
    });
    assert_eq!(fourth.unwrap(), json!({"value": 4}));
}

/// A layer failing while polled ready fails the call with its error, and the path keeps working after it.
#[tokio::test]
async fn a_layer_failing_readiness_fails_that_call_only() {
    #[derive(Clone)]
    struct FailOnce<S> {
        inner: S,
        failed: Arc<Mutex<bool>>,
    }
    impl<S: Service<BridgeRequest, Error = Error>> Service<BridgeRequest> for FailOnce<S> {
        type Response = S::Response;
        type Error = Error;
        type Future = S::Future;
        fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
            let mut failed = self.failed.lock().unwrap();
            if !*failed {
                *failed = true;
                return Poll::Ready(Err(Error::rejected(Blocked {
                    tool: "not ready".into(),
                })));
            }
            self.inner.poll_ready(cx)
        }
        fn call(&mut self, request: BridgeRequest) -> S::Future {
            self.inner.call(request)
        }
    }
    let failed = Arc::new(Mutex::new(false));
    let (conn, mut mock) = pair();
    let builder = Bridge::builder(token()).layer(tower::layer::layer_fn(move |inner| FailOnce {
        inner,
        failed: failed.clone(),
    }));
    let (bridge, _) = tokio::join!(builder.over(conn), mock.handshake(&["tools/call"]));
    let bridge = bridge.unwrap();
    assert!(matches!(
        err(bridge.call_tool("demo/echo", json!({"value": 1})).await),
        Error::Rejected { .. }
    ));
    let (second, ()) = tokio::join!(bridge.call_tool("demo/echo", json!({"value": 2})), async {
        let r = mock.expect("tools/call").await;
        mock.reply(r.id, json!({"value": 2})).await;
    });
    assert_eq!(second.unwrap(), json!({"value": 2}));
}

/// A call does nothing until it is polled: layers see no request of a call dropped before its first poll, and
/// the next call goes through as usual.
#[tokio::test]
async fn a_call_dropped_before_its_first_poll_reaches_no_layer() {
    let gate = gate(&[]);
    let (conn, mut mock) = pair();
    let builder = Bridge::builder(token()).layer(gate.clone());
    let (bridge, _) = tokio::join!(builder.over(conn), mock.handshake(ALL_METHODS));
    let bridge = bridge.unwrap();
    drop(bridge.call_tool("a/b", json!({})));
    drop(bridge.call_tool_as::<_, serde_json::Value>("a/b", &json!({})));
    drop(bridge.send(BridgeRequest::tool_call("a/b", json!({})).unwrap()));
    assert!(gate.seen.lock().unwrap().is_empty());
    assert!(mock.try_recv(Duration::from_millis(50)).await.is_none());

    let (result, ()) = tokio::join!(bridge.call_tool("a/b", json!({})), async {
        let request = mock.expect("tools/call").await;
        mock.reply(request.id, json!("ran")).await;
    });
    assert_eq!(result.unwrap(), json!("ran"));
    assert_eq!(
        gate.seen.lock().unwrap().len(),
        2,
        "the request and its result"
    );
}
