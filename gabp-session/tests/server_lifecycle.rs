//! Session lifecycle and serving: the hello deadline, the connection limit, serving a real TCP listener with
//! graceful shutdown and user layers.

mod server_support;

use std::time::Duration;

use gabp_session::server::layer::InterceptLayer;
use gabp_session::server::{CloseReason, ModServer, ServerLimits, ServerRequest, Session};
use gabp_transport::{Endpoint, Listener};
use gabp_types::{ErrorCode, ErrorObject, Message, MethodName, Request, Response};
use serde_json::json;
use server_support::{
    close_reason, code, connect, connect_hello, connect_hello_served, connect_served, fixture,
    hello_params, request, result, RawClient,
};
use tower::{Service, ServiceExt};

fn server_with(limits: ServerLimits) -> ModServer {
    fixture::register(server_support::builder())
        .limits(limits)
        .build()
        .expect("build")
}

#[tokio::test(start_paused = true)]
async fn no_hello_within_the_deadline_closes_the_connection() {
    let server = server_with(ServerLimits::default());
    let (mut client, served) = connect_served(&server);
    client.set_patience(Duration::from_secs(3600));
    let started = tokio::time::Instant::now();
    // A request before hello is answered but does not count as a hello.
    assert_eq!(code(&client.call("session/ping", None).await), Some(-32100));
    assert!(client.until_closed().await.is_empty());
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(10) && waited < Duration::from_secs(11),
        "{waited:?}"
    );
    assert_eq!(close_reason(served).await, CloseReason::HelloTimeout);
}

#[tokio::test(start_paused = true)]
async fn the_hello_deadline_is_configurable_and_gone_after_hello() {
    let server = server_with(ServerLimits::default().with_hello_timeout(Duration::from_secs(2)));
    let mut late = connect(&server);
    late.set_patience(Duration::from_secs(3600));
    assert!(late.until_closed().await.is_empty());
    let mut client = connect_hello(&server).await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(client.call("session/ping", None).await.result().is_some());
}

#[tokio::test]
async fn one_connection_over_the_limit_is_closed_at_once() {
    let server = server_with(ServerLimits::default().with_max_connections(2));
    let (mut a, a_served) = connect_hello_served(&server).await;
    let _b = connect_hello(&server).await;
    assert_eq!(server.connection_count(), 2);
    let (mut c, c_served) = connect_served(&server);
    assert!(c.until_closed().await.is_empty());
    assert_eq!(
        close_reason(c_served).await,
        CloseReason::TooManyConnections
    );
    // A slot frees when a connection ends.
    a.call("session/goodbye", None).await;
    close_reason(a_served).await;
    assert_eq!(server.connection_count(), 1);
    let mut d = connect_hello(&server).await;
    assert!(d.call("session/ping", None).await.result().is_some());
}

/// A raw client over a real transport: frames in, frames out, strictly decoded.
#[tokio::test]
async fn serves_tcp_and_shuts_down_gracefully() {
    let server = server_with(ServerLimits::default());
    let handle = server.clone().serve(
        Listener::bind(&Endpoint::tcp_v4(0))
            .await
            .expect("bind loopback"),
    );
    let endpoint = handle.endpoint().clone();
    let mut client = RawClient::connect(&endpoint).await.expect("connect");
    let welcome = client
        .call("session/hello", Some(hello_params(server_support::TOKEN)))
        .await;
    assert_eq!(result(&welcome)["agentId"], "test-mod");
    let r = client
        .call(
            "tools/call",
            Some(json!({"name": "demo/echo", "arguments": {"value": "über"}})),
        )
        .await;
    assert_eq!(result(&r), json!({"value": "über"}));

    // A call in flight when the shutdown starts is still answered, then the connection closes.
    let (id, slow) = request(
        "tools/call",
        Some(json!({"name": "demo/sleep", "arguments": {"ms": 300}})),
    );
    client.send_value(&slow).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let shutdown = tokio::spawn(handle.shutdown());
    match client.next_message().await {
        Some(Message::Response(r)) => {
            assert_eq!(r.id, id);
            assert_eq!(result(&r), json!({"sleptMs": 300}));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        client.next_message().await.is_none(),
        "closed after the drain"
    );
    tokio::time::timeout(server_support::PATIENCE, shutdown)
        .await
        .expect("shutdown finished")
        .unwrap();
    assert_eq!(server.connection_count(), 0);
    assert!(gabp_transport::connect(&endpoint).await.is_err());
}

#[tokio::test]
async fn the_listener_enforces_the_connection_limit() {
    let server = server_with(ServerLimits::default().with_max_connections(1));
    let handle = server.serve(Listener::bind(&Endpoint::tcp_v4(0)).await.unwrap());
    let mut first = RawClient::connect(handle.endpoint())
        .await
        .expect("connect");
    first
        .call("session/hello", Some(hello_params(server_support::TOKEN)))
        .await;
    let mut second = RawClient::connect(handle.endpoint())
        .await
        .expect("connect");
    assert!(
        second.next_message().await.is_none(),
        "the second is closed"
    );
    assert!(first.call("session/ping", None).await.result().is_some());
    handle.shutdown().await;
}

#[tokio::test]
async fn interceptors_answer_authenticated_requests_only() {
    let server = fixture::register(server_support::builder())
        .layer(InterceptLayer::new(|req: &ServerRequest| {
            (req.tool_name().as_deref() == Some("demo/echo")).then(|| {
                req.error(ErrorObject::new(
                    ErrorCode::ACCESS_DENIED,
                    "echo is disabled",
                ))
            })
        }))
        .build()
        .unwrap();
    let mut client = connect(&server);
    let r = client.call_tool("demo/echo", json!({"value": 1})).await;
    assert_eq!(code(&r), Some(-32100), "authentication comes first");
    client.hello(server_support::TOKEN).await;
    let r = client.call_tool("demo/echo", json!({"value": 1})).await;
    assert_eq!(code(&r), Some(-32103));
    let r = client.call_tool("dyn/sum", json!({"a": 1, "b": 1})).await;
    assert_eq!(result(&r), json!({"sum": 2.0}));
}

#[derive(Clone)]
struct FailingLayer;

impl<S> tower::Layer<S> for FailingLayer {
    type Service = Failing<S>;
    fn layer(&self, inner: S) -> Failing<S> {
        Failing(inner)
    }
}

struct Failing<S>(S);

impl<S> Service<ServerRequest> for Failing<S>
where
    S: Service<ServerRequest, Response = Response, Error = std::convert::Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = std::io::Error;
    type Future = futures::future::BoxFuture<'static, Result<Response, std::io::Error>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), std::io::Error>> {
        self.0.poll_ready(cx).map_err(|never| match never {})
    }

    fn call(&mut self, req: ServerRequest) -> Self::Future {
        if req.method() == "game/pause" {
            return Box::pin(async { Err(std::io::Error::other("the pause service is broken")) });
        }
        let fut = self.0.call(req);
        Box::pin(async move { fut.await.map_err(|never| match never {}) })
    }
}

#[tokio::test]
async fn any_tower_layer_works_and_its_errors_are_internal_errors() {
    let server = fixture::register(server_support::builder())
        .layer(FailingLayer)
        .build()
        .unwrap();
    let mut client = connect_hello(&server).await;
    let r = client.call("game/pause", None).await;
    assert_eq!(code(&r), Some(-32603));
    assert!(client.call("session/ping", None).await.result().is_some());
}

#[tokio::test]
async fn the_whole_stack_is_usable_without_a_transport() {
    let server = server_with(ServerLimits::default());
    let mut service = server.service();
    let session = Session::detached();
    let call = |method: &str, params: Option<serde_json::Value>| {
        let params = params.and_then(|p| p.as_object().cloned());
        ServerRequest::new(
            Request::new(MethodName::new(method).unwrap(), params),
            session.clone(),
        )
    };
    let r = service
        .ready()
        .await
        .unwrap()
        .call(call("tools/list", None))
        .await
        .unwrap();
    assert_eq!(code(&r), Some(-32100));
    let r = service
        .ready()
        .await
        .unwrap()
        .call(call(
            "session/hello",
            Some(hello_params(server_support::TOKEN)),
        ))
        .await
        .unwrap();
    assert!(r.result().is_some());
    assert!(session.is_established());
    assert_eq!(
        session.bridge().unwrap().launch_id,
        server_support::LAUNCH_ID
    );
    let r = service
        .ready()
        .await
        .unwrap()
        .call(call(
            "tools/call",
            Some(json!({"name": "demo/echo", "arguments": {"value": 3}})),
        ))
        .await
        .unwrap();
    assert_eq!(result(&r), json!({"value": 3}));
    // `tools/call` params that did not come through the decoder are checked as the decoder checks them
    // (SPEC/1.0 gabp.md §4.5), each fault named by its member.
    for (params, pointer) in [
        (json!({"arguments": {"value": 3}}), "/params"),
        (
            json!({"name": "demo/echo", "arguments": [3]}),
            "/params/arguments",
        ),
        (json!({"name": "Demo Echo"}), "/params/name"),
        (json!({"name": "demo/echo", "extra": 1}), "/params"),
        (json!({"name": "demo/echo", "_meta": 1}), "/params/_meta"),
    ] {
        let r = service
            .ready()
            .await
            .unwrap()
            .call(call("tools/call", Some(params.clone())))
            .await
            .unwrap();
        let error = r.error_object().expect("refused");
        assert_eq!(error.code.0, -32602, "{params}");
        let data = error.data.as_ref().expect("data");
        assert_eq!(data["errors"][0]["path"], pointer, "{params}");
    }
}
