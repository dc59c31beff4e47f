//! State and custom-method handlers take extractors and typed input, as tool handlers do, and their call's
//! token fires when the call is dropped (SPEC/1.0 gabp.md §7).

mod server_support;

use std::sync::Arc;
use std::time::Duration;

use gabp_session::server::{CallContext, CallError, ServerRequest, State};
use gabp_types::methods::{StateGetParams, StateSetParams, StateSetResult};
use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use server_support::{code, connect_hello, result};
use tokio_util::sync::CancellationToken;

#[derive(Clone, Default)]
struct World {
    time: Arc<Mutex<u64>>,
}

/// The state as a typed struct of components.
#[derive(Serialize, JsonSchema)]
struct Snapshot {
    time: u64,
    weather: &'static str,
}

#[derive(Deserialize)]
struct Skip {
    ticks: u64,
}

fn server() -> gabp_session::server::ModServer {
    server_support::builder()
        .with_state(World::default())
        .state(
            |State(world): State<World>, _: StateGetParams| async move {
                Ok::<_, CallError>(Snapshot {
                    time: *world.time.lock(),
                    weather: "rain",
                })
            },
            |State(world): State<World>, context: CallContext, p: StateSetParams| async move {
                assert!(!context.cancellation().is_cancelled());
                if let Some(time) = p.updates.get("time").and_then(Value::as_u64) {
                    *world.time.lock() = time;
                }
                Ok(StateSetResult {
                    applied: p.updates,
                    errors: None,
                    extra: Map::new(),
                })
            },
        )
        .method(
            "world/skip",
            |State(world): State<World>, skip: Skip| async move {
                let mut time = world.time.lock();
                *time += skip.ticks;
                Ok::<_, CallError>(json!({ "time": *time }))
            },
        )
        .method(
            "world/whoami",
            |context: CallContext, _: Map<String, Value>| async move {
                Ok::<_, CallError>(context.request_id().to_string())
            },
        )
        .method("world/raw", |req: ServerRequest| async move {
            Ok(json!({ "method": req.method() }))
        })
        .build()
        .expect("build")
}

#[tokio::test]
async fn state_handlers_take_extractors_and_return_typed_state() {
    let server = server();
    let mut client = connect_hello(&server).await;
    let set = client
        .call("state/set", Some(json!({"updates": {"time": 40}})))
        .await;
    assert_eq!(result(&set)["applied"], json!({"time": 40}));
    let got = result(&client.call("state/get", None).await);
    assert_eq!(got["state"], json!({"time": 40, "weather": "rain"}));
    let only = client
        .call("state/get", Some(json!({"components": ["weather"]})))
        .await;
    assert_eq!(result(&only)["state"], json!({"weather": "rain"}));
}

#[tokio::test]
async fn custom_methods_take_extractors_and_typed_params() {
    let server = server();
    let mut client = connect_hello(&server).await;
    let skipped = client.call("world/skip", Some(json!({"ticks": 5}))).await;
    assert_eq!(result(&skipped), json!({"time": 5}));
    let bad = client
        .call("world/skip", Some(json!({"ticks": "many"})))
        .await;
    assert_eq!(code(&bad), Some(-32602));
    let missing = client.call("world/skip", None).await;
    assert_eq!(code(&missing), Some(-32602));
    let whoami = client.call("world/whoami", None).await;
    assert_eq!(result(&whoami), json!(whoami.id.to_string()));
    let raw = client.call("world/raw", Some(json!({}))).await;
    assert_eq!(result(&raw), json!({"method": "world/raw"}));
}

/// Handlers that never answer, each keeping its call's token where the test can see it.
fn stuck_server(tokens: Arc<Mutex<Vec<CancellationToken>>>) -> gabp_session::server::ModServer {
    let keep = |tokens: &Arc<Mutex<Vec<CancellationToken>>>, context: &CallContext| {
        tokens.lock().push(context.cancellation().clone());
    };
    let (get, set, method) = (tokens.clone(), tokens.clone(), tokens);
    server_support::builder()
        .limits(server_support::limits().with_request_timeout(Duration::from_secs(1)))
        .state(
            move |context: CallContext, _: StateGetParams| {
                keep(&get, &context);
                std::future::pending::<Result<Map<String, Value>, CallError>>()
            },
            move |context: CallContext, _: StateSetParams| {
                keep(&set, &context);
                std::future::pending::<Result<StateSetResult, CallError>>()
            },
        )
        .method(
            "world/stuck",
            move |context: CallContext, _: Map<String, Value>| {
                keep(&method, &context);
                std::future::pending::<Result<Value, CallError>>()
            },
        )
        .build()
        .expect("build")
}

#[tokio::test(start_paused = true)]
async fn a_state_or_method_call_past_its_time_limit_sees_its_token_fire() {
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let mut client = connect_hello(&stuck_server(tokens.clone())).await;
    client.set_patience(Duration::from_secs(3600));
    for (method, params) in [
        ("state/get", None),
        ("state/set", Some(json!({"updates": {"time": 1}}))),
        ("world/stuck", Some(json!({}))),
    ] {
        let answer = client.call(method, params).await;
        assert!(code(&answer).is_some(), "{method}: {answer:?}");
    }
    let fired: Vec<bool> = tokens.lock().iter().map(|t| t.is_cancelled()).collect();
    assert_eq!(
        fired, [true; 3],
        "each handler's token fires at its time limit"
    );
    // Each call had a token of its own: the session goes on.
    let again = client.call("state/get", None).await;
    assert!(code(&again).is_some());
}
