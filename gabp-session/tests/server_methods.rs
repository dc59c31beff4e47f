//! Every method the mod serves, over an in-memory pair, driven by a raw frame-level client; every frame the
//! mod writes is decoded strictly (and results against their method's result schema).

mod server_support;

use gabp_session::server::CloseReason;
use serde_json::{json, Value};
use server_support::{
    close_reason, code, connect, connect_hello, connect_hello_served, data, fixture, result,
};

fn server() -> gabp_session::server::ModServer {
    fixture::register(server_support::builder())
        .build()
        .expect("build")
}

#[tokio::test]
async fn hello_answers_the_welcome() {
    let server = server();
    let mut client = connect(&server);
    let welcome = client.hello(server_support::TOKEN).await;
    assert_eq!(welcome["agentId"], "test-mod");
    assert_eq!(
        welcome["app"],
        json!({"name": "Test Game", "version": "1.0.0"})
    );
    assert_eq!(welcome["schemaVersion"], "1.1");
    let caps = &welcome["capabilities"];
    let methods: Vec<&str> = caps["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    for m in [
        "session/hello",
        "session/ping",
        "session/goodbye",
        "tools/list",
        "tools/call",
        "events/subscribe",
        "events/unsubscribe",
        "resources/list",
        "resources/read",
        "state/get",
        "state/set",
        "game/pause",
    ] {
        assert!(methods.contains(&m), "{m} not advertised: {methods:?}");
    }
    assert_eq!(
        caps["events"],
        json!(["player/chat", "player/move", "world/block_change"])
    );
    assert_eq!(
        caps["resources"],
        json!([
            "gabp://game/world",
            "gabp://mod/info",
            "gabp://game/players"
        ])
    );
    assert_eq!(
        caps["limits"],
        json!({"maxMessageSize": 1048576, "maxConcurrentRequests": 64, "requestTimeout": 30})
    );
    assert_eq!(caps["extensions"]["channel-patterns"]["syntax"], "glob");
    assert_eq!(welcome, serde_json::to_value(server.welcome()).unwrap());
}

#[tokio::test]
async fn ping_returns_a_timestamp() {
    let mut client = connect_hello(&server()).await;
    let pong = result(&client.call("session/ping", None).await);
    assert!(pong["timestamp"].as_u64().unwrap() > 1_600_000_000_000);
    let pong = client.call("session/ping", Some(json!({}))).await;
    assert!(pong.result().is_some());
}

#[tokio::test]
async fn goodbye_is_answered_then_the_connection_closes() {
    let (mut client, served) = connect_hello_served(&server()).await;
    let bye = client
        .call("session/goodbye", Some(json!({"reason": "done"})))
        .await;
    assert_eq!(result(&bye), json!({}));
    assert!(client.until_closed().await.is_empty());
    assert_eq!(close_reason(served).await, CloseReason::Goodbye);
}

#[tokio::test]
async fn tools_list_lists_every_tool_with_schemas() {
    let mut client = connect_hello(&server()).await;
    let list = result(&client.call("tools/list", None).await);
    let tools = list["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "demo/echo",
            "demo/sleep",
            "world/get_block",
            "demo/fail",
            "demo/fail_code",
            "demo/panic",
            "demo/stuck",
            "dyn/sum"
        ]
    );
    let echo = &tools[0];
    assert_eq!(echo["title"], "Echo");
    assert_eq!(echo["description"], "Returns its argument");
    assert_eq!(echo["tags"], json!(["demo", "read-only"]));
    assert_eq!(echo["version"], "1.0.0");
    assert_eq!(echo["inputSchema"]["type"], "object");
    assert_eq!(echo["inputSchema"]["required"], json!(["value"]));
    let get_block = &tools[2];
    assert_eq!(get_block["inputSchema"]["properties"]["x"]["maximum"], 15);
    assert_eq!(get_block["outputSchema"]["type"], "object");
    assert_eq!(tools[3]["deprecated"], true);
    assert_eq!(
        tools[7]["inputSchema"]["required"],
        json!(["a", "b"]),
        "raw schemas are sent as given"
    );
}

#[tokio::test]
async fn tools_list_filters_by_tags_and_name_pattern() {
    let mut client = connect_hello(&server()).await;
    let names = |v: Value| -> Vec<String> {
        v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let r = client
        .call(
            "tools/list",
            Some(json!({"filter": {"tags": ["read-only"]}})),
        )
        .await;
    assert_eq!(names(result(&r)), ["demo/echo", "world/get_block"]);
    let r = client
        .call(
            "tools/list",
            Some(json!({"filter": {"namePattern": "demo/*"}})),
        )
        .await;
    assert_eq!(
        names(result(&r)),
        [
            "demo/echo",
            "demo/sleep",
            "demo/fail",
            "demo/fail_code",
            "demo/panic",
            "demo/stuck"
        ]
    );
    let r = client
        .call(
            "tools/list",
            Some(json!({"filter": {"namePattern": "demo/*", "tags": ["read-only"]}})),
        )
        .await;
    assert_eq!(names(result(&r)), ["demo/echo"]);
    let r = client
        .call(
            "tools/list",
            Some(json!({"filter": {"namePattern": "demo/[e"}})),
        )
        .await;
    assert_eq!(code(&r), Some(-32602));
    assert_eq!(data(&r)["errors"][0]["path"], "/params/filter/namePattern");
}

#[tokio::test]
async fn tools_call_typed_and_raw() {
    let mut client = connect_hello(&server()).await;
    let r = client
        .call_tool("demo/echo", json!({"value": {"a": [1, 2]}}))
        .await;
    assert_eq!(result(&r), json!({"value": {"a": [1, 2]}}));
    let r = client
        .call_tool("world/get_block", json!({"x": 1, "y": 0, "z": 3}))
        .await;
    assert_eq!(
        result(&r),
        json!({"x": 1, "y": 0, "z": 3, "block": "stone"})
    );
    let r = client.call_tool("dyn/sum", json!({"a": 1.5, "b": 2})).await;
    assert_eq!(result(&r), json!({"sum": 3.5}));
}

#[tokio::test]
async fn tools_call_reads_parameters_instead_of_arguments() {
    // GABS sends `parameters`; `arguments` wins when both are present (SPEC/1.0 gabp.md §3.5).
    let mut client = connect_hello(&server()).await;
    let r = client
        .call(
            "tools/call",
            Some(json!({"name": "demo/echo", "parameters": {"value": 7}})),
        )
        .await;
    assert_eq!(result(&r), json!({"value": 7}));
    let r = client
        .call(
            "tools/call",
            Some(
                json!({"name": "demo/echo", "parameters": {"value": 1}, "arguments": {"value": 2}}),
            ),
        )
        .await;
    assert_eq!(result(&r), json!({"value": 2}));
}

#[tokio::test]
async fn hello_with_a_non_uuid_launch_id_is_accepted() {
    let server = server();
    let mut client = connect(&server);
    let mut params = server_support::hello_params(server_support::TOKEN);
    params["launchId"] = json!("gabs-launch-42");
    let r = client.call("session/hello", Some(params)).await;
    assert!(r.result().is_some(), "{r:?}");
}

#[tokio::test]
async fn events_subscribe_and_unsubscribe() {
    let server = server();
    let mut client = connect_hello(&server).await;
    let r = client
        .call(
            "events/subscribe",
            Some(json!({"channels": ["player/move", "nope/nope"]})),
        )
        .await;
    assert_eq!(result(&r), json!({"subscribed": ["player/move"]}));
    let r = client
        .call("events/subscribe", Some(json!({"channels": ["player/*"]})))
        .await;
    assert_eq!(
        result(&r),
        json!({"subscribed": ["player/chat", "player/move"]})
    );
    let events = server.event_publisher();
    assert_eq!(events.subscriber_count("player/chat"), 1);
    let r = client
        .call(
            "events/unsubscribe",
            Some(json!({"channels": ["player/chat", "nope/nope"]})),
        )
        .await;
    assert_eq!(result(&r), json!({"unsubscribed": ["player/chat"]}));
    assert_eq!(events.subscriber_count("player/chat"), 0);
    assert_eq!(events.subscriber_count("player/move"), 1);
}

#[tokio::test]
async fn resources_list_honours_pattern_and_namespace() {
    let mut client = connect_hello(&server()).await;
    let uris = |v: Value| -> Vec<String> {
        v["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap().to_owned())
            .collect()
    };
    let all = result(&client.call("resources/list", None).await);
    assert_eq!(
        uris(all.clone()),
        [
            "gabp://game/world",
            "gabp://mod/info",
            "gabp://game/players"
        ]
    );
    assert_eq!(
        all["resources"][1],
        json!({"uri": "gabp://mod/info", "name": "Mod info", "mimeType": "application/octet-stream", "size": 19})
    );
    let r = client
        .call("resources/list", Some(json!({"namespace": "game"})))
        .await;
    assert_eq!(
        uris(result(&r)),
        ["gabp://game/world", "gabp://game/players"]
    );
    let r = client
        .call("resources/list", Some(json!({"pattern": "gabp://*/info"})))
        .await;
    assert_eq!(uris(result(&r)), ["gabp://mod/info"]);
    let r = client
        .call(
            "resources/list",
            Some(json!({"pattern": "gabp://game/w*", "namespace": "game"})),
        )
        .await;
    assert_eq!(uris(result(&r)), ["gabp://game/world"]);
}

#[tokio::test]
async fn resources_read_text_and_binary() {
    let mut client = connect_hello(&server()).await;
    let r = client
        .call("resources/read", Some(json!({"uri": "gabp://game/world"})))
        .await;
    assert_eq!(
        result(&r),
        json!({"content": "{\"size\":16}", "mimeType": "application/json", "encoding": "utf-8"})
    );
    let r = client
        .call("resources/read", Some(json!({"uri": "gabp://mod/info"})))
        .await;
    let content = result(&r);
    assert_eq!(content["encoding"], "base64");
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(content["content"].as_str().unwrap())
        .unwrap();
    assert_eq!(bytes, b"gabp-rs test mod \x00\xff");
}

#[tokio::test]
async fn state_get_and_set() {
    let mut client = connect_hello(&server()).await;
    let r = result(&client.call("state/get", None).await);
    assert_eq!(r["state"]["world"], json!({"size": 16}));
    assert_eq!(r["state"]["player"]["id"], "steve");
    assert!(r["timestamp"].as_u64().unwrap() > 1_600_000_000);
    let r = result(
        &client
            .call("state/get", Some(json!({"components": ["player"]})))
            .await,
    );
    assert_eq!(r["state"].as_object().unwrap().len(), 1);
    let r = client
        .call(
            "state/set",
            Some(json!({"updates": {"player.position": {"x": 0, "y": 1, "z": 0}}})),
        )
        .await;
    assert_eq!(
        result(&r),
        json!({"applied": {"player.position": {"x": 0, "y": 1, "z": 0}}})
    );
}

#[tokio::test]
async fn state_is_neither_advertised_nor_served_without_handlers() {
    let server = server_support::builder().build().unwrap();
    let mut client = connect(&server);
    let welcome = client.hello(server_support::TOKEN).await;
    let methods = welcome["capabilities"]["methods"].as_array().unwrap();
    assert!(!methods.contains(&json!("state/get")));
    assert!(!methods.contains(&json!("state/set")));
    let r = client.call("state/get", None).await;
    assert_eq!(code(&r), Some(-32601));
    assert_eq!(data(&r)["method"], "state/get");
}

#[tokio::test]
async fn custom_methods_get_the_request_and_session() {
    let mut client = connect_hello(&server()).await;
    let r = result(
        &client
            .call("game/pause", Some(json!({"why": "test"})))
            .await,
    );
    assert_eq!(r["paused"], true);
    assert!(r["session"].as_u64().is_some());
}
