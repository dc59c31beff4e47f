//! `gabp mcp` end to end: rmcp's client drives it over stdio, and it drives demo games (`gabp mod`) that it
//! launches the way GABS does.
#![cfg(unix)]

mod mcp_support;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use mcp_support::{alive, eventually, text, Mcp};
use serde_json::{json, Value};

fn pid_of(status: &Value) -> u32 {
    status["pid"]
        .as_u64()
        .and_then(|p| u32::try_from(p).ok())
        .expect("a pid")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gabs_tools_are_listed_with_their_arguments() {
    let mcp = Mcp::start(&["voxel"], &[]).await;
    let tools = mcp.client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for gabs in [
        "games_list",
        "games_show",
        "games_start",
        "games_stop",
        "games_kill",
        "games_status",
        "games_connect",
        "games_tools",
        "games_tool_names",
        "games_tool_detail",
        "games_call_tool",
        "games_get_attention",
        "games_ack_attention",
    ] {
        assert!(names.contains(&gabs), "{gabs} missing from {names:?}");
    }
    let call = tools.iter().find(|t| t.name == "games_call_tool").unwrap();
    assert_eq!(call.input_schema["required"], json!(["tool"]));
    let listed = mcp.ok("games_list", json!({})).await;
    assert_eq!(listed["games"][0]["gameId"], "voxel");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_call_and_attention_as_an_agent_sees_them() {
    let mcp = Mcp::start(&["voxel"], &[]).await;
    let started = mcp.ok("games_start", json!({"gameId": "voxel"})).await;
    assert_eq!(started["code"], "started_connected", "{started}");

    // The game got GABS's environment and bridge.json.
    let bridge: Value =
        serde_json::from_slice(&std::fs::read(mcp.config_dir().join("voxel/bridge.json")).unwrap())
            .unwrap();
    assert_eq!(bridge["gameId"], "voxel");

    let names = mcp.ok("games_tool_names", json!({"gameId": "voxel"})).await;
    let listed: Vec<&str> = names["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(listed.contains(&"voxel_world_get_block"), "{listed:?}");

    // By mirrored name without gameId, and by GABP name with it.
    let block = mcp
        .ok(
            "games_call_tool",
            json!({"tool": "voxel_world_get_block", "arguments": {"x": 0, "y": 0, "z": 0}}),
        )
        .await;
    assert_eq!(block["block"], "stone");
    let detail = mcp
        .ok(
            "games_tool_detail",
            json!({"gameId": "voxel", "tool": "world/place_block"}),
        )
        .await;
    assert_eq!(detail["name"], "voxel_world_place_block");
    assert!(detail["inputSchema"]["properties"]["blockType"].is_object());

    // A game error keeps its code and failing field.
    let (message, error) = mcp
        .err(
            "games_call_tool",
            json!({"gameId": "voxel", "tool": "world/get_block", "arguments": {"x": "no"}}),
        )
        .await;
    assert_eq!(error["gabpError"]["code"], -32602, "{message}");

    // Attention: an error opens a blocking item; a game-changing call is refused without reaching the game;
    // a status tool still answers.
    let calls_before = mcp
        .ok("games_call_tool", json!({"tool": "voxel_demo_status"}))
        .await["toolCalls"]
        .as_u64()
        .unwrap();
    mcp.ok(
        "games_call_tool",
        json!({"tool": "voxel_demo_raise_error", "arguments": {"message": "the autosave failed"}}),
    )
    .await;
    let place = json!({"tool": "voxel_world_place_block",
        "arguments": {"x": 1, "y": 5, "z": 1, "blockType": "glass"}});
    let (message, blocked) = mcp.err("games_call_tool", place.clone()).await;
    assert_eq!(blocked["code"], "blocked_by_attention", "{message}");
    assert_eq!(blocked["executed"], false);
    assert!(message.contains("games_ack_attention"), "{message}");
    let calls_after = mcp
        .ok("games_call_tool", json!({"tool": "voxel_demo_status"}))
        .await["toolCalls"]
        .as_u64()
        .unwrap();
    // Only raise_error ran in between (demo/status does not count itself): the refused call never
    // reached the game.
    assert_eq!(calls_after, calls_before + 1);

    let attention = mcp.ok("games_get_attention", json!({})).await;
    assert_eq!(attention["blocking"], true);
    let id = attention["attention"]["attentionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let acked = mcp
        .ok("games_ack_attention", json!({"attentionId": id}))
        .await;
    assert_eq!(acked["acknowledged"], true);
    let placed = mcp.ok("games_call_tool", place).await;
    assert_eq!(placed["success"], true);

    let pid = pid_of(&mcp.ok("games_status", json!({"gameId": "voxel"})).await);
    let stopped = mcp.ok("games_stop", json!({"gameId": "voxel"})).await;
    assert_eq!(stopped["code"], "terminated");
    assert!(!alive(pid), "the game still runs after games_stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_read_by_cursor_once_and_in_order() {
    let mcp = Mcp::start(&["voxel"], &[]).await;
    mcp.ok("games_start", json!({"gameId": "voxel"})).await;
    let subscribed = mcp
        .ok(
            "games_subscribe",
            json!({"channels": ["world/block_change"]}),
        )
        .await;
    assert_eq!(subscribed["channels"], json!(["world/block_change"]));
    for x in 0..3 {
        mcp.ok(
            "games_call_tool",
            json!({"tool": "voxel_world_place_block",
                "arguments": {"x": x, "y": 6, "z": 0, "blockType": "sand"}}),
        )
        .await;
    }
    let mut events = Vec::new();
    let mut cursor = Value::Null;
    let deadline = Instant::now() + Duration::from_secs(20);
    while events.len() < 3 && Instant::now() < deadline {
        let mut args = json!({"waitMs": 2000});
        if !cursor.is_null() {
            args["cursor"] = cursor.clone();
        }
        let batch = mcp.ok("games_events", args).await;
        events.extend(batch["events"].as_array().unwrap().iter().cloned());
        cursor = batch["cursor"].clone();
    }
    let xs: Vec<i64> = events
        .iter()
        .map(|e| e["payload"]["x"].as_i64().unwrap())
        .collect();
    assert_eq!(xs, [0, 1, 2]);
    // Nothing twice from the same cursor.
    let again = mcp.ok("games_events", json!({"cursor": cursor})).await;
    assert_eq!(again["events"], json!([]));

    let (message, _) = mcp
        .err("games_events", json!({"cursor": "not-a-cursor"}))
        .await;
    assert!(message.contains("cursor"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_is_noticed_within_a_second_and_the_game_starts_again() {
    let mcp = Mcp::start(&["voxel"], &["--mirror-tools"]).await;
    mcp.ok("games_start", json!({"gameId": "voxel"})).await;
    // Mirrored: the game's tools are MCP tools of their own now.
    let tools = mcp.client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "voxel_world_get_block"));
    let pid = pid_of(&mcp.ok("games_status", json!({"gameId": "voxel"})).await);
    let changes_before = mcp.heard.tool_list_changed.load(Ordering::SeqCst);

    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    let crashed = Instant::now();
    let mut status = Value::Null;
    while crashed.elapsed() < Duration::from_secs(5) {
        status = mcp.ok("games_status", json!({"gameId": "voxel"})).await;
        if status["status"] == "exited" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(status["status"], "exited", "{status}");
    assert!(
        crashed.elapsed() < Duration::from_secs(1),
        "noticed after {:?}",
        crashed.elapsed()
    );
    assert!(
        eventually(Duration::from_secs(5), || {
            mcp.heard.tool_list_changed.load(Ordering::SeqCst) > changes_before
        })
        .await,
        "no tools/list_changed after the crash"
    );
    let tools = mcp.client.list_all_tools().await.unwrap();
    assert!(!tools.iter().any(|t| t.name == "voxel_world_get_block"));
    // A call to a tool of the crashed game says so, with how it ended and how to start it again.
    let (message, e) = mcp.err("voxel_demo_echo", json!({"value": 1})).await;
    assert_eq!(e["code"], "game_exited", "{message}");
    assert!(
        message.contains("game 'voxel' exited (")
            && message.contains("signal")
            && message.contains("games_start"),
        "{message}"
    );

    let again = mcp.ok("games_start", json!({"gameId": "voxel"})).await;
    assert_eq!(again["code"], "started_connected");
    mcp.ok("voxel_demo_echo", json!({"value": 1})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_clear_errors_and_the_hub_keeps_running() {
    let mcp = Mcp::start(&["voxel"], &[]).await;
    let (message, e) = mcp.err("games_start", json!({"gameId": "nope"})).await;
    assert_eq!(e["code"], "game_not_found");
    assert!(message.contains("voxel"), "{message}");
    let (message, _) = mcp.err("games_show", json!({"gameId": 7})).await;
    assert_eq!(message, "Argument 'gameId' must be a string");
    let (message, _) = mcp
        .err("games_status", json!({"gameId": "voxel", "extra": 1}))
        .await;
    assert!(
        message.starts_with("Unknown argument \"extra\""),
        "{message}"
    );
    let (message, e) = mcp
        .err("games_call_tool", json!({"tool": "voxel_world_get_block"}))
        .await;
    assert_eq!(e["code"], "tool_not_found", "{message}");

    mcp.ok("games_start", json!({"gameId": "voxel"})).await;
    let (_, e) = mcp
        .err(
            "games_call_tool",
            json!({"gameId": "voxel", "tool": "no/such_tool"}),
        )
        .await;
    assert_eq!(e["code"], "tool_not_found");
    let (_, e) = mcp
        .err(
            "games_call_tool",
            json!({"tool": "voxel_world_get_block", "arguments": {"x": "1", "y": [], "z": {}}}),
        )
        .await;
    assert_eq!(e["gabpError"]["code"], -32602);
    let huge = "x".repeat(2 << 20);
    let (_, e) = mcp
        .err(
            "games_call_tool",
            json!({"tool": "voxel_demo_echo", "arguments": {"value": huge}}),
        )
        .await;
    assert_eq!(e["code"], "arguments_too_large");
    // Still serving.
    let echo = mcp
        .ok(
            "games_call_tool",
            json!({"tool": "voxel_demo_echo", "arguments": {"value": "ok"}}),
        )
        .await;
    assert_eq!(echo["value"], "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_games_at_once_do_not_wait_on_each_other() {
    let mcp = Mcp::start(&["a", "b", "c"], &[]).await;
    for id in ["a", "b", "c"] {
        let started = mcp.ok("games_start", json!({"gameId": id})).await;
        assert_eq!(started["code"], "started_connected");
    }
    let slow = mcp.call(
        "games_call_tool",
        json!({"gameId": "a", "tool": "demo/sleep", "arguments": {"ms": 3000}}),
    );
    let quick = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let started = Instant::now();
        for id in ["b", "c"] {
            mcp.ok(
                "games_call_tool",
                json!({"gameId": id, "tool": "demo/echo", "arguments": {"value": id}}),
            )
            .await;
        }
        started.elapsed()
    };
    let (slow, quick) = tokio::join!(slow, quick);
    assert_ne!(slow.is_error, Some(true), "{}", text(&slow));
    assert!(
        quick < Duration::from_millis(2500),
        "calls to other games waited {quick:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_client_ends_every_game() {
    let mcp = Mcp::start(&["a", "b"], &[]).await;
    let mut pids = Vec::new();
    for id in ["a", "b"] {
        mcp.ok("games_start", json!({"gameId": id})).await;
        pids.push(pid_of(&mcp.ok("games_status", json!({"gameId": id})).await));
    }
    let server = mcp.pid.expect("gabp mcp pid");
    mcp.client.cancel().await.expect("close the client");
    assert!(
        eventually(Duration::from_secs(15), || !alive(server)
            && pids.iter().all(|p| !alive(*p)))
        .await,
        "left behind: gabp mcp {} games {:?}",
        alive(server),
        pids.iter().filter(|p| alive(**p)).collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn game_resources_are_mcp_resources_and_subscriptions_hear_of_changes() {
    use rmcp::model::{ReadResourceRequestParams, ResourceContents, SubscribeRequestParams};

    let mcp = Mcp::start(&["voxel"], &[]).await;
    mcp.ok("games_start", json!({"gameId": "voxel"})).await;
    let listed = mcp
        .client
        .list_all_resources()
        .await
        .expect("resources/list");
    let uris: Vec<&str> = listed.iter().map(|r| r.uri.as_str()).collect();
    assert!(uris.contains(&"gabp-game://voxel/state"), "{uris:?}");
    let world = "gabp-game://voxel/gabp://game/world";
    assert!(uris.contains(&world), "{uris:?}");
    let read = mcp
        .client
        .read_resource(ReadResourceRequestParams::new(world))
        .await
        .expect("resources/read");
    let text = match &read.contents[0] {
        ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("{other:?}"),
    };
    assert!(serde_json::from_str::<Value>(&text).is_ok(), "{text}");
    let missing = mcp
        .client
        .read_resource(ReadResourceRequestParams::new("gabp-game://nope/state"))
        .await;
    assert!(missing.is_err());

    let state = "gabp-game://voxel/state";
    // resources/subscribe is what hosts on the 2025 protocol send.
    #[allow(deprecated)]
    mcp.client
        .subscribe(SubscribeRequestParams::new(state))
        .await
        .expect("resources/subscribe");
    mcp.ok("games_stop", json!({"gameId": "voxel"})).await;
    assert!(
        eventually(Duration::from_secs(5), || {
            mcp.heard
                .resources_updated
                .lock()
                .iter()
                .any(|u| u == state)
        })
        .await,
        "no resources/updated for {state}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn game_progress_reaches_the_client_and_a_cancelled_call_ends() {
    use rmcp::model::{
        CallToolRequest, CallToolRequestParams, ClientRequest, NumberOrString, ProgressToken,
        RequestMetaObject,
    };
    use rmcp::service::PeerRequestOptions;

    let mcp = Mcp::start(&["voxel"], &[]).await;
    mcp.ok("games_start", json!({"gameId": "voxel"})).await;
    let mut params = CallToolRequestParams::new("games_call_tool").with_arguments(
        json!({"gameId": "voxel", "tool": "demo/sleep", "arguments": {"ms": 600}})
            .as_object()
            .cloned()
            .unwrap(),
    );
    params.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(
        NumberOrString::Number(7),
    )));
    let result = mcp.client.call_tool(params).await.expect("call");
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    let progress = mcp.heard.progress.lock().clone();
    // 600 ms, reported at least every 100 ms.
    assert!(progress.len() >= 4, "{progress:?}");
    assert!(progress.iter().all(|(_, total)| *total == Some(600.0)));
    assert!(
        progress.windows(2).all(|w| w[0].0 <= w[1].0),
        "{progress:?}"
    );

    // An MCP cancellation ends the call at once; the game serves on.
    let params = CallToolRequestParams::new("games_call_tool").with_arguments(
        json!({"gameId": "voxel", "tool": "demo/sleep", "arguments": {"ms": 20000}})
            .as_object()
            .cloned()
            .unwrap(),
    );
    let handle = mcp
        .client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("send");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    handle
        .cancel(Some("changed my mind".into()))
        .await
        .expect("cancel");
    let echo = mcp
        .ok(
            "games_call_tool",
            json!({"gameId": "voxel", "tool": "demo/echo", "arguments": {"value": 1}}),
        )
        .await;
    assert_eq!(echo["value"], 1);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_picture_reaches_the_agent_as_mcp_image_content() {
    let mcp = Mcp::start(&["voxel"], &[]).await;
    mcp.ok("games_start", json!({"gameId": "voxel"})).await;
    let result = mcp
        .call(
            "games_call_tool",
            json!({"tool": "voxel_world_render", "arguments": {"scale": 4}}),
        )
        .await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let images: Vec<_> = result
        .content
        .iter()
        .filter_map(|c| match c {
            rmcp::model::ContentBlock::Image(image) => Some(image),
            _ => None,
        })
        .collect();
    assert_eq!(images.len(), 1, "{result:?}");
    assert_eq!(images[0].mime_type, "image/png");
    use base64::Engine as _;
    let png = base64::engine::general_purpose::STANDARD
        .decode(&images[0].data)
        .expect("base64");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let structured = result.structured_content.clone().expect("structured");
    assert_eq!(structured["width"], 64);
    assert!(structured.get("_content").is_none(), "{structured}");
    // The text block carries the value, not the picture's base64.
    let first = text(&result);
    assert!(!first.contains(&images[0].data[..32]), "{first}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirror_tools_in_the_config_limits_the_mirrored_list_but_not_what_can_be_called() {
    let dir = tempfile::tempdir().unwrap();
    mcp_support::write_config(dir.path(), &["voxel"]);
    let path = dir.path().join("config.json");
    let mut config: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    config["games"]["voxel"]["mirrorTools"] = json!(["world/*"]);
    std::fs::write(&path, config.to_string()).unwrap();
    let mcp = Mcp::start_in(dir, &["--mirror-tools"]).await;
    mcp.ok("games_start", json!({"gameId": "voxel"})).await;

    let tools = mcp.client.list_all_tools().await.unwrap();
    let mirrored: Vec<&str> = tools
        .iter()
        .map(|t| t.name.as_ref())
        .filter(|n| n.starts_with("voxel_"))
        .collect();
    assert!(mirrored.contains(&"voxel_world_get_block"), "{mirrored:?}");
    assert!(
        mirrored.iter().all(|n| n.starts_with("voxel_world_")),
        "{mirrored:?}"
    );
    // Not listed, still callable.
    mcp.ok("voxel_demo_echo", json!({"value": 1})).await;
}
