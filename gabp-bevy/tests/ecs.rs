//! The ECS tools that read, on a headless app driven by a gabp-session bridge over TCP: listing, query, get,
//! schema; each bad input (an unknown type path, an entity that does not exist) answered -32602.
#![allow(clippy::unwrap_used)]

mod support;

use serde_json::json;
use support::world::{
    call, ids, refused, rows, start, world, FROZEN, LEVEL, PLAYER, POSITION, SCORE, SEALED,
    VELOCITY,
};
use support::Game;

#[tokio::test]
async fn ecs_tools_are_listed_typed_and_tagged_and_can_be_turned_off() {
    let (game, bridge) = start().await;
    let tools = bridge.tools().await.unwrap();
    let read_only = [
        "ecs/query",
        "ecs/get",
        "ecs/list_components",
        "ecs/list_resources",
        "ecs/get_resource",
        "ecs/schema",
    ];
    let writing = [
        "ecs/insert",
        "ecs/remove",
        "ecs/mutate",
        "ecs/spawn",
        "ecs/despawn",
        "ecs/set_resource",
    ];
    for name in read_only.iter().chain(&writing) {
        let tool = tools
            .iter()
            .find(|t| t.name.as_str() == *name)
            .unwrap_or_else(|| panic!("{name} is served"));
        assert_eq!(
            tool.has_tag("read-only"),
            read_only.contains(name),
            "{name}"
        );
        let tool = serde_json::to_value(tool).unwrap();
        assert!(tool["description"].as_str().unwrap().len() > 10, "{tool}");
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }
    let query = tools
        .iter()
        .find(|t| t.name.as_str() == "ecs/query")
        .unwrap();
    let schema = serde_json::to_value(query).unwrap()["inputSchema"].clone();
    for field in ["components", "with", "without", "limit"] {
        assert!(schema["properties"].get(field).is_some(), "{schema}");
    }
    game.stop(bridge).await;

    let game = Game::start(|p| p.ecs_tools(false), world);
    let bridge = game.connect().await;
    let tools = bridge.tools().await.unwrap();
    assert!(
        !tools.iter().any(|t| t.name.as_str().starts_with("ecs/")),
        "ecs_tools(false) serves none"
    );
    game.stop(bridge).await;
}

#[tokio::test]
async fn ecs_query_selects_by_components_with_and_without() {
    let (game, bridge) = start().await;

    let all = rows(&bridge, json!({ "components": [POSITION] })).await;
    assert_eq!(all.len(), 3, "{all:?}");
    assert_eq!(
        all[0]["components"][POSITION],
        json!({ "x": 1.0, "y": 2.0 })
    );
    assert_eq!(
        all[1]["components"][POSITION],
        json!({ "x": 3.0, "y": 4.0 })
    );

    let frozen = rows(
        &bridge,
        json!({ "components": [POSITION], "with": [FROZEN] }),
    )
    .await;
    assert_eq!(frozen.len(), 1);
    assert_eq!(frozen[0]["components"][POSITION]["x"], 3.0);
    assert!(
        frozen[0]["components"].get(FROZEN).is_none(),
        "`with` is not returned"
    );
    let moving = ids(&bridge, json!({ "with": [POSITION], "without": [FROZEN] })).await;
    assert_eq!(moving.len(), 2);
    assert!(!moving.contains(&frozen[0]["entity"].as_u64().unwrap()));
    let tuple = rows(&bridge, json!({ "components": [VELOCITY] })).await;
    // An f32 reads as written in the game: 0.1, not the f64 it widens to (0.10000000149011612).
    assert_eq!(tuple[0]["components"][VELOCITY], json!([0.1, 0.0]));

    // Resources live on entities of their own: a query never returns them.
    let everything = ids(&bridge, json!({})).await;
    assert_eq!(everything.len(), 3, "{everything:?}");

    // Bounded output.
    let first = call(
        &bridge,
        "ecs/query",
        json!({ "with": [POSITION], "limit": 2 }),
    )
    .await;
    assert_eq!(first["entities"].as_array().unwrap().len(), 2);
    assert_eq!(first["truncated"], true);
    let whole = call(&bridge, "ecs/query", json!({ "with": [POSITION] })).await;
    assert_eq!(whole["truncated"], false);
    refused(
        &bridge,
        "ecs/query",
        json!({ "limit": 10001 }),
        "maximum of 10000",
    )
    .await;

    refused(
        &bridge,
        "ecs/query",
        json!({ "components": ["ecs::Nope"] }),
        "ecs::Nope",
    )
    .await;
    refused(
        &bridge,
        "ecs/query",
        json!({ "with": ["ecs::Nope"] }),
        "with",
    )
    .await;
    refused(
        &bridge,
        "ecs/query",
        json!({ "without": ["ecs::Nope"] }),
        "without",
    )
    .await;
    refused(
        &bridge,
        "ecs/query",
        json!({ "components": [SCORE] }),
        "not a reflected component",
    )
    .await;
    game.stop(bridge).await;
}

#[tokio::test]
async fn ecs_get_and_list_components_read_an_entity() {
    let (game, bridge) = start().await;
    let player = ids(&bridge, json!({ "with": [PLAYER] })).await[0];

    let got = call(&bridge, "ecs/get", json!({ "entity": player })).await;
    assert_eq!(got["entity"], player);
    assert_eq!(
        got["components"][PLAYER],
        json!({ "name": "ada", "lives": 3, "team": "Blue", "shield": null })
    );
    assert_eq!(got["components"][POSITION], json!({ "x": 0.0, "y": 0.0 }));
    assert!(got.get("unreadable").is_none(), "{got}");

    // A component that does not serialize is named, not returned; the others still are.
    let frozen = ids(&bridge, json!({ "with": [FROZEN] })).await[0];
    let sealed = call(&bridge, "ecs/get", json!({ "entity": frozen })).await;
    assert_eq!(sealed["unreadable"], json!([SEALED]), "{sealed}");
    assert_eq!(sealed["components"][POSITION]["x"], 3.0, "{sealed}");
    let refused_sealed = bridge
        .call_tool(
            "ecs/get",
            json!({ "entity": frozen, "components": [SEALED] }),
        )
        .await
        .unwrap_err();
    assert!(
        refused_sealed.to_string().contains(SEALED),
        "{refused_sealed}"
    );

    let one = call(
        &bridge,
        "ecs/get",
        json!({ "entity": player, "components": [POSITION] }),
    )
    .await;
    assert_eq!(one["components"].as_object().unwrap().len(), 1, "{one}");

    let listed = call(&bridge, "ecs/list_components", json!({ "entity": player })).await;
    let listed = listed["components"].as_array().unwrap();
    assert!(
        listed.contains(&json!(PLAYER)) && listed.contains(&json!(POSITION)),
        "{listed:?}"
    );
    let types = call(&bridge, "ecs/list_components", json!({})).await;
    let types = types["components"].as_array().unwrap();
    for path in [POSITION, VELOCITY, FROZEN, PLAYER] {
        assert!(types.contains(&json!(path)), "{path} in {types:?}");
    }
    assert!(
        !types.contains(&json!(SCORE)),
        "resources are not listed as components"
    );

    refused(
        &bridge,
        "ecs/get",
        json!({ "entity": 999_999_u64 }),
        "no entity 999999",
    )
    .await;
    refused(
        &bridge,
        "ecs/get",
        json!({ "entity": player, "components": ["ecs::Nope"] }),
        "ecs::Nope",
    )
    .await;
    refused(
        &bridge,
        "ecs/get",
        json!({ "entity": player, "components": [VELOCITY] }),
        "has no",
    )
    .await;
    refused(
        &bridge,
        "ecs/list_components",
        json!({ "entity": 999_999_u64 }),
        "no entity",
    )
    .await;
    game.stop(bridge).await;
}

#[tokio::test]
async fn ecs_schema_describes_a_registered_type() {
    let (game, bridge) = start().await;

    let player = call(&bridge, "ecs/schema", json!({ "type_path": PLAYER })).await;
    assert_eq!(player["reflect"], json!(["Component"]));
    let schema = &player["schema"];
    assert_eq!(schema["type"], "object", "{schema}");
    assert_eq!(schema["typePath"], PLAYER);
    assert_eq!(schema["properties"]["name"]["type"], "string");
    assert_eq!(
        schema["properties"]["lives"],
        json!({ "type": "integer", "minimum": 0 })
    );
    assert_eq!(
        schema["properties"]["shield"]["anyOf"][0],
        json!({ "type": "null" })
    );
    assert_eq!(
        schema["required"],
        json!(["name", "lives", "team"]),
        "an Option may be left out"
    );
    let team = schema["properties"]["team"]["$ref"].as_str().unwrap();
    let team = &schema["$defs"][team.trim_start_matches("#/$defs/")];
    assert_eq!(team["enum"], json!(["Red", "Blue"]), "{schema}");

    let velocity = call(&bridge, "ecs/schema", json!({ "type_path": VELOCITY })).await;
    assert_eq!(
        velocity["schema"]["prefixItems"],
        json!([{ "type": "number" }, { "type": "number" }])
    );
    let level = call(&bridge, "ecs/schema", json!({ "type_path": LEVEL })).await;
    assert_eq!(level["reflect"], json!(["Resource"]));
    assert_eq!(
        level["schema"]["type"], "integer",
        "a newtype is written as its field"
    );

    refused(
        &bridge,
        "ecs/schema",
        json!({ "type_path": "ecs::Nope" }),
        "type_path",
    )
    .await;
    game.stop(bridge).await;
}
