//! `gabp mcp` honours what a GABS user's config.json and habits ask for: `brief` summaries,
//! `stripOutputSchema`, `toolNormalization`, and the state resource under GABS's `gab://` name.
#![cfg(unix)]
#![allow(clippy::unwrap_used)]

mod mcp_support;

use mcp_support::Mcp;
use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use serde_json::{json, Value};

/// Writes the demo config for `ids`, then sets `top` members on it.
fn config_with(dir: &std::path::Path, ids: &[&str], top: Value) {
    mcp_support::write_config(dir, ids);
    let path = dir.join("config.json");
    let mut config: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for (key, value) in top.as_object().unwrap() {
        config[key] = value.clone();
    }
    std::fs::write(&path, config.to_string()).unwrap();
}

async fn read_text(mcp: &Mcp, uri: &str) -> Result<String, rmcp::ServiceError> {
    let read = mcp
        .client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await?;
    match &read.contents[0] {
        ResourceContents::TextResourceContents { text, .. } => Ok(text.clone()),
        other => panic!("{uri}: text expected, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_tools_are_listed_as_gabs_lists_them_and_brief_adds_summaries() {
    let mcp = Mcp::start(&["voxel"], &["--mirror-tools"]).await;
    mcp.ok("games_start", json!({"gameId": "voxel"})).await;

    let tools = mcp.client.list_all_tools().await.unwrap();
    let list = tools.iter().find(|t| t.name == "games_list").unwrap();
    let meta = list.meta.as_ref().expect("_meta on a normalized hub tool");
    assert_eq!(meta.0["originalName"], "games.list");
    assert!(
        list.description
            .as_deref()
            .unwrap()
            .ends_with("(Original: games.list)"),
        "{:?}",
        list.description
    );
    let get_block = tools
        .iter()
        .find(|t| t.name == "voxel_world_get_block")
        .unwrap();
    assert!(get_block.output_schema.is_some());
    assert_eq!(
        get_block.meta.as_ref().unwrap().0["gabpName"],
        "world/get_block"
    );

    // Without brief: names only. With brief: a one-line summary each, as GABS gives.
    let plain = mcp.ok("games_tool_names", json!({"gameId": "voxel"})).await;
    assert!(
        plain["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("summary").is_none()),
        "{plain}"
    );
    assert!(plain.get("brief").is_none(), "{plain}");
    let brief = mcp
        .ok(
            "games_tool_names",
            json!({"gameId": "voxel", "brief": true}),
        )
        .await;
    assert_eq!(brief["brief"], true);
    for tool in brief["tools"].as_array().unwrap() {
        let summary = tool["summary"].as_str().unwrap_or_else(|| panic!("{tool}"));
        assert!(
            !summary.is_empty() && summary.len() <= 140 && !summary.contains('\n'),
            "{summary}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_state_resource_is_also_read_under_its_gabs_name() {
    let mcp = Mcp::start(&["voxel"], &[]).await;
    mcp.ok("games_start", json!({"gameId": "voxel"})).await;

    let ours: Value =
        serde_json::from_str(&read_text(&mcp, "gabp-game://voxel/state").await.unwrap()).unwrap();
    let gabs: Value =
        serde_json::from_str(&read_text(&mcp, "gab://voxel/state").await.unwrap()).unwrap();
    for state in [&ours, &gabs] {
        assert_eq!(state["gameId"], "voxel", "{state}");
        assert_eq!(state["connected"], true, "{state}");
        assert_eq!(state["game"]["status"], "connected", "{state}");
        let tools = state["availableTools"].as_array().unwrap();
        assert!(tools.contains(&json!("world/get_block")), "{state}");
        assert_eq!(state["toolCount"], tools.len());
    }
    // Only the state lives under gab://; the list names each resource once.
    assert!(read_text(&mcp, "gab://voxel/other").await.is_err());
    let listed = mcp.client.list_all_resources().await.unwrap();
    assert!(listed.iter().all(|r| !r.uri.starts_with("gab://")));
    // Subscribing to the GABS name is accepted too.
    #[allow(deprecated)] // resources/subscribe is what 2025 clients send.
    mcp.client
        .subscribe(rmcp::model::SubscribeRequestParams::new(
            "gab://voxel/state",
        ))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strip_output_schema_and_tool_normalization_shape_the_list() {
    let id = "a_rather_long_game_identifier";
    let dir = tempfile::tempdir().unwrap();
    config_with(
        dir.path(),
        &[id],
        json!({
            "stripOutputSchema": true,
            "toolNormalization": {"enableOpenAINormalization": false, "maxToolNameLength": 32},
        }),
    );
    let mcp = Mcp::start_in(dir, &["--mirror-tools"]).await;
    mcp.ok("games.start", json!({"gameId": id})).await;

    let tools = mcp.client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    // GABS's dotted names, without the normalization note.
    let list = tools.iter().find(|t| t.name == "games.list").unwrap();
    assert!(list.meta.is_none());
    assert!(!names.contains(&"games_list"), "{names:?}");
    // Both forms stay callable.
    mcp.ok("games_list", json!({})).await;
    mcp.ok("games.list", json!({})).await;

    let mirrored: Vec<&rmcp::model::Tool> = tools
        .iter()
        .filter(|t| t.name.starts_with("a_rather"))
        .collect();
    assert!(!mirrored.is_empty(), "{names:?}");
    for tool in &mirrored {
        assert!(tool.name.len() <= 32, "{}", tool.name);
        assert!(
            tool.output_schema.is_none(),
            "{} kept its outputSchema",
            tool.name
        );
    }
    // A cut name is called as listed, and its detail still shows the output schema.
    let get_block = mirrored
        .iter()
        .find(|t| t.meta.as_ref().unwrap().0["gabpName"] == "world/get_block")
        .unwrap();
    assert!(
        get_block.name.starts_with("a_rather_long_game_"),
        "{}",
        get_block.name
    );
    let block = mcp
        .ok(&get_block.name, json!({"x": 0, "y": 0, "z": 0}))
        .await;
    assert_eq!(block["block"], "stone");
    let detail = mcp
        .ok(
            "games_tool_detail",
            json!({"tool": get_block.name.as_ref()}),
        )
        .await;
    assert_eq!(detail["name"], get_block.name.as_ref());
    assert!(detail["outputSchema"].is_object(), "{detail}");
}
