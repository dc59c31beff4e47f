//! Bridge calls, typed: every core method through its typed helper, and core params that would not conform
//! never sent.

mod bridge_support;

use bridge_support::*;
use gabp_session::Error;
use gabp_types::methods::{
    EventsUnsubscribe, ResourcesListParams, StateGetParams, StateSetParams, ToolFilter,
};
use serde_json::{json, Map};

#[tokio::test]
async fn typed_calls_for_every_core_method() {
    let (bridge, mut mock) = connected().await;

    macro_rules! exchange {
        ($call:expr, $method:literal, $result:expr) => {{
            let (result, params) = tokio::join!($call, async {
                let request = mock.expect($method).await;
                mock.reply(request.id, $result).await;
                request.params.unwrap_or_default().to_value()
            });
            (result.unwrap(), params)
        }};
    }

    let tool = json!({"name": "world/get_block", "title": "Get block", "description": "Reads a block",
        "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}, "tags": ["read-only"]});
    let (tools, params) = exchange!(bridge.list_tools(), "tools/list", json!({"tools": [tool]}));
    assert_eq!(tools[0].name.as_str(), "world/get_block");
    assert_eq!(params, json!({}));

    let filter = ToolFilter {
        tags: Some(vec!["read-only".into()]),
        name_pattern: Some("world/*".into()),
    };
    let (_, params) = exchange!(
        bridge.list_tools_filtered(filter),
        "tools/list",
        json!({"tools": []})
    );
    assert_eq!(params["filter"]["namePattern"], "world/*");

    #[derive(serde::Serialize)]
    struct At {
        x: i64,
        y: i64,
        z: i64,
    }
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Block {
        block: Option<String>,
    }
    let (block, params): (Block, _) = exchange!(
        bridge.call_tool_as("world/get_block", &At { x: 1, y: 2, z: 3 }),
        "tools/call",
        json!({"x": 1, "y": 2, "z": 3, "block": "stone"})
    );
    assert_eq!(
        block,
        Block {
            block: Some("stone".into())
        }
    );
    assert_eq!(params["arguments"], json!({"x": 1, "y": 2, "z": 3}));

    let (resources, _) = exchange!(
        bridge.list_resources(ResourcesListParams::default()),
        "resources/list",
        json!({"resources": [{"uri": "gabp://game/world", "name": "World"}]})
    );
    assert_eq!(resources[0].uri.as_str(), "gabp://game/world");

    let (content, params) = exchange!(
        bridge.read_resource("gabp://mod/info"),
        "resources/read",
        json!({"content": "aGk=", "mimeType": "application/octet-stream", "encoding": "base64"})
    );
    assert_eq!(content.content, "aGk=");
    assert_eq!(params["uri"], "gabp://mod/info");

    let (state, _) = exchange!(
        bridge.get_state(StateGetParams {
            components: Some(vec!["player".into()]),
            player_id: None
        }),
        "state/get",
        json!({"state": {"player": {"x": 1}}, "timestamp": 1700000000})
    );
    assert_eq!(state.timestamp, 1_700_000_000);

    let mut updates = Map::new();
    updates.insert("player".into(), json!({"position": {"x": 1}}));
    let (applied, _) = exchange!(
        bridge.set_state(StateSetParams {
            updates: updates.clone(),
            player_id: None,
            validate: Some(true)
        }),
        "state/set",
        json!({"applied": updates})
    );
    assert!(applied.applied.contains_key("player"));

    let (attention, _) = exchange!(
        bridge.current_attention(),
        "attention/current",
        json!({"attention": null})
    );
    assert!(attention.is_none());

    let (ack, params) = exchange!(
        bridge.ack_attention("att-1"),
        "attention/ack",
        json!({"acknowledged": false, "attentionId": "att-1", "currentAttention": null})
    );
    assert!(!ack.acknowledged);
    assert_eq!(params["attentionId"], "att-1");

    let channels = gabp_types::methods::ChannelsParams {
        channels: vec!["player/move".try_into().unwrap()].try_into().unwrap(),
    };
    let (unsubscribed, params) = exchange!(
        bridge.call::<EventsUnsubscribe>(&channels),
        "events/unsubscribe",
        json!({"unsubscribed": ["player/move"]})
    );
    assert_eq!(unsubscribed.unsubscribed, ["player/move"]);
    assert_eq!(params["channels"], json!(["player/move"]));

    let (pong, _) = exchange!(bridge.ping(), "session/ping", json!({}));
    assert_eq!(pong.timestamp, None);

    // A result of the wrong shape is a protocol error, not a panic.
    let (wrong, ()) = tokio::join!(bridge.list_tools(), async {
        let request = mock.expect("tools/list").await;
        mock.reply(request.id, json!({"tools": "nope"})).await;
    });
    assert!(matches!(err(wrong), Error::InvalidResult { .. }));

    // Goodbye: answered, then closed; no reconnect.
    let (bye, ()) = tokio::join!(bridge.goodbye(Some("done")), async {
        let request = mock.expect("session/goodbye").await;
        assert_eq!(
            request.params.as_ref().unwrap().to_value()["reason"],
            "done"
        );
        mock.reply(request.id, json!({})).await;
    });
    bye.unwrap();
    assert_eq!(
        bridge.state(),
        gabp_session::bridge::ConnectionState::Closed
    );
    assert!(matches!(err(bridge.ping().await), Error::Closed));
}

#[tokio::test]
async fn non_conformant_params_of_core_methods_are_never_sent() {
    let (bridge, mut mock) = connected().await;
    // GABS writes `parameters`; we read it, but never write it.
    let gabs_style = json!({"name": "demo/echo", "parameters": {"value": 1}});
    assert!(matches!(
        err(bridge.request("tools/call", gabs_style).await),
        Error::InvalidRequest { reason } if reason.contains("/params")
    ));
    assert!(matches!(
        err(bridge.request("tools/list", json!({"bogus": true})).await),
        Error::InvalidRequest { .. }
    ));
    assert!(matches!(
        err(bridge
            .request("events/subscribe", json!({"channels": []}))
            .await),
        Error::InvalidRequest { .. }
    ));
    // Custom methods carry any object.
    let (result, ()) = tokio::join!(
        bridge.request("tools/call", json!({"name": "demo/echo"})),
        async {
            let first = mock.recv().await;
            assert_eq!(
                first.method.as_str(),
                "tools/call",
                "an invalid request went out first"
            );
            mock.reply(first.id, json!(1)).await;
        }
    );
    assert_eq!(result.unwrap(), json!(1));
}
