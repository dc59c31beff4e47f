//! State and custom-method handlers take extractors and typed input, as tool handlers do.

mod server_support;

use std::sync::Arc;

use gabp_session::server::{CallContext, ServerRequest, State};
use gabp_types::methods::{StateGetParams, StateSetParams, StateSetResult};
use gabp_types::ErrorObject;
use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use server_support::{code, connect_hello, result};

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
                Ok::<_, ErrorObject>(Snapshot {
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
                Ok::<_, ErrorObject>(json!({ "time": *time }))
            },
        )
        .method(
            "world/whoami",
            |context: CallContext, _: Map<String, Value>| async move {
                Ok::<_, ErrorObject>(context.request_id().to_string())
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
