//! The ECS tools on a headless app, driven by a gabp-session bridge over TCP: each tool, and each bad input
//! (an unknown type path, an entity that does not exist, a value that does not deserialize) answered -32602.
#![allow(clippy::unwrap_used)]

mod support;

use bevy_app::App;
use bevy_ecs::prelude::*;
use bevy_reflect::prelude::ReflectDefault;
use bevy_reflect::Reflect;
use gabp_session::Bridge;
use gabp_types::ErrorCode;
use serde_json::{json, Value};
use support::Game;

const POSITION: &str = "ecs::Position";
const VELOCITY: &str = "ecs::Velocity";
const FROZEN: &str = "ecs::Frozen";
const PLAYER: &str = "ecs::Player";
const SCORE: &str = "ecs::Score";
const LEVEL: &str = "ecs::Level";

#[derive(Component, Reflect, Default)]
#[reflect(Component, Default)]
struct Position {
    x: f32,
    y: f32,
}

#[derive(Component, Reflect)]
#[reflect(Component)]
struct Velocity(f32, f32);

#[derive(Component, Reflect)]
#[reflect(Component)]
struct Frozen;

#[derive(Reflect)]
enum Team {
    Red,
    Blue,
}

#[derive(Component, Reflect)]
#[reflect(Component)]
struct Player {
    name: String,
    lives: u8,
    team: Team,
    shield: Option<u32>,
}

#[derive(Resource, Reflect)]
#[reflect(Resource)]
struct Score {
    points: u32,
    best: u32,
}

#[derive(Resource, Reflect)]
#[reflect(Resource)]
struct Level(u32);

/// Three entities with a `Position`, one of them `Frozen`, one a `Player`; a `Score`; `Level` registered
/// but not inserted.
fn world(app: &mut App) {
    app.register_type::<Position>()
        .register_type::<Velocity>()
        .register_type::<Frozen>()
        .register_type::<Player>()
        .register_type::<Score>()
        .register_type::<Level>()
        .insert_resource(Score { points: 3, best: 9 });
    let world = app.world_mut();
    world.spawn((Position { x: 1.0, y: 2.0 }, Velocity(0.5, 0.0)));
    world.spawn((Position { x: 3.0, y: 4.0 }, Frozen));
    world.spawn((
        Position::default(),
        Player {
            name: "ada".into(),
            lives: 3,
            team: Team::Blue,
            shield: None,
        },
    ));
}

async fn start() -> (Game, Bridge) {
    let game = Game::start(|p| p, world);
    let bridge = game.connect().await;
    (game, bridge)
}

async fn call(bridge: &Bridge, tool: &str, args: Value) -> Value {
    bridge
        .call_tool(tool, args.clone())
        .await
        .unwrap_or_else(|e| panic!("{tool} {args}: {e}"))
}

/// The call fails with -32602 and a message that names `needle`.
async fn refused(bridge: &Bridge, tool: &str, args: Value, needle: &str) {
    let e = bridge
        .call_tool(tool, args.clone())
        .await
        .expect_err(&format!("{tool} {args} is refused"));
    assert_eq!(
        e.code(),
        Some(ErrorCode::INVALID_PARAMS),
        "{tool} {args}: {e}"
    );
    let message = e.error_object().unwrap().message.clone();
    assert!(
        message.contains(needle),
        "{tool} {args}: `{message}` names {needle}"
    );
}

/// The rows of a query: entity id and components, in order.
async fn rows(bridge: &Bridge, args: Value) -> Vec<Value> {
    let result = call(bridge, "ecs/query", args).await;
    result["entities"].as_array().unwrap().clone()
}

async fn ids(bridge: &Bridge, args: Value) -> Vec<u64> {
    rows(bridge, args)
        .await
        .iter()
        .map(|r| r["entity"].as_u64().unwrap())
        .collect()
}

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
    assert_eq!(tuple[0]["components"][VELOCITY], json!([0.5, 0.0]));

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
async fn ecs_spawn_insert_remove_and_despawn_change_entities() {
    let (game, bridge) = start().await;

    let spawned = call(
        &bridge,
        "ecs/spawn",
        json!({ "components": { POSITION: { "x": 7.0, "y": 8.0 }, VELOCITY: [1.0, 2.0] } }),
    )
    .await;
    let id = spawned["entity"].as_u64().unwrap();
    let got = call(&bridge, "ecs/get", json!({ "entity": id })).await;
    assert_eq!(got["components"][POSITION], json!({ "x": 7.0, "y": 8.0 }));
    assert_eq!(got["components"][VELOCITY], json!([1.0, 2.0]));
    assert_eq!(ids(&bridge, json!({ "with": [POSITION] })).await.len(), 4);

    call(
        &bridge,
        "ecs/insert",
        json!({ "entity": id, "components": { FROZEN: {}, POSITION: { "x": 0.5, "y": 0.0 } } }),
    )
    .await;
    let got = call(&bridge, "ecs/get", json!({ "entity": id })).await;
    assert_eq!(got["components"][POSITION]["x"], 0.5, "insert replaces");
    assert!(ids(&bridge, json!({ "with": [FROZEN] }))
        .await
        .contains(&id));

    let removed = call(
        &bridge,
        "ecs/remove",
        json!({ "entity": id, "components": [FROZEN, PLAYER] }),
    )
    .await;
    assert_eq!(removed["removed"], json!([FROZEN]), "only what it had");
    assert!(!ids(&bridge, json!({ "with": [FROZEN] }))
        .await
        .contains(&id));

    call(&bridge, "ecs/despawn", json!({ "entity": id })).await;
    assert_eq!(ids(&bridge, json!({ "with": [POSITION] })).await.len(), 3);

    // Bad input: nothing changes.
    refused(
        &bridge,
        "ecs/spawn",
        json!({ "components": { "ecs::Nope": {} } }),
        "ecs::Nope",
    )
    .await;
    refused(
        &bridge,
        "ecs/spawn",
        json!({ "components": { POSITION: { "x": "far" } } }),
        POSITION,
    )
    .await;
    assert_eq!(
        ids(&bridge, json!({})).await.len(),
        3,
        "a refused spawn spawns nothing"
    );
    refused(
        &bridge,
        "ecs/insert",
        json!({ "entity": id, "components": { FROZEN: {} } }),
        "no entity",
    )
    .await;
    let first = ids(&bridge, json!({ "with": [POSITION] })).await[0];
    refused(
        &bridge,
        "ecs/insert",
        json!({ "entity": first, "components": { "ecs::Nope": {} } }),
        "ecs::Nope",
    )
    .await;
    refused(
        &bridge,
        "ecs/insert",
        json!({ "entity": first, "components": { VELOCITY: { "x": 1 } } }),
        VELOCITY,
    )
    .await;
    refused(
        &bridge,
        "ecs/remove",
        json!({ "entity": id, "components": [FROZEN] }),
        "no entity",
    )
    .await;
    refused(
        &bridge,
        "ecs/remove",
        json!({ "entity": first, "components": ["ecs::Nope"] }),
        "ecs::Nope",
    )
    .await;
    refused(&bridge, "ecs/despawn", json!({ "entity": id }), "no entity").await;
    game.stop(bridge).await;
}

#[tokio::test]
async fn ecs_mutate_sets_one_field() {
    let (game, bridge) = start().await;
    let player = ids(&bridge, json!({ "with": [PLAYER] })).await[0];

    let mutated = call(
        &bridge,
        "ecs/mutate",
        json!({ "entity": player, "component": POSITION, "path": ".x", "value": 5.5 }),
    )
    .await;
    assert_eq!(mutated["value"], json!({ "x": 5.5, "y": 0.0 }));
    call(
        &bridge,
        "ecs/mutate",
        json!({ "entity": player, "component": PLAYER, "path": ".team", "value": "Red" }),
    )
    .await;
    call(
        &bridge,
        "ecs/mutate",
        json!({ "entity": player, "component": PLAYER, "path": ".shield", "value": 40 }),
    )
    .await;
    let got = call(
        &bridge,
        "ecs/get",
        json!({ "entity": player, "components": [PLAYER, POSITION] }),
    )
    .await;
    assert_eq!(got["components"][POSITION]["x"], 5.5);
    assert_eq!(got["components"][PLAYER]["team"], "Red");
    assert_eq!(got["components"][PLAYER]["shield"], 40);

    let at = |path: &str, value: Value| json!({ "entity": player, "component": POSITION, "path": path, "value": value });
    refused(&bridge, "ecs/mutate", at(".z", json!(1.0)), "path").await;
    refused(&bridge, "ecs/mutate", at(".x", json!("fast")), "value").await;
    refused(
        &bridge,
        "ecs/mutate",
        json!({ "entity": player, "component": "ecs::Nope", "path": ".x", "value": 1 }),
        "ecs::Nope",
    )
    .await;
    refused(
        &bridge,
        "ecs/mutate",
        json!({ "entity": player, "component": VELOCITY, "path": ".0", "value": 1.0 }),
        "has no",
    )
    .await;
    refused(
        &bridge,
        "ecs/mutate",
        json!({ "entity": 999_999_u64, "component": POSITION, "path": ".x", "value": 1.0 }),
        "no entity",
    )
    .await;
    game.stop(bridge).await;
}

#[tokio::test]
async fn ecs_resources_are_listed_read_and_set() {
    let (game, bridge) = start().await;

    let listed = call(&bridge, "ecs/list_resources", json!({})).await;
    let listed = listed["resources"].as_array().unwrap();
    assert!(
        listed.contains(&json!({ "resource": SCORE, "present": true })),
        "{listed:?}"
    );
    assert!(
        listed.contains(&json!({ "resource": LEVEL, "present": false })),
        "{listed:?}"
    );

    let score = call(&bridge, "ecs/get_resource", json!({ "resource": SCORE })).await;
    assert_eq!(score["value"], json!({ "points": 3, "best": 9 }));
    let set = call(
        &bridge,
        "ecs/set_resource",
        json!({ "resource": SCORE, "value": { "points": 4, "best": 10 } }),
    )
    .await;
    assert_eq!(set["value"], json!({ "points": 4, "best": 10 }));
    let set = call(
        &bridge,
        "ecs/set_resource",
        json!({ "resource": SCORE, "path": ".points", "value": 12 }),
    )
    .await;
    assert_eq!(set["value"], json!({ "points": 12, "best": 10 }));
    assert_eq!(
        call(&bridge, "ecs/get_resource", json!({ "resource": SCORE })).await["value"]["points"],
        12
    );

    // A registered resource the world lacks: absent to read, inserted by set.
    refused(
        &bridge,
        "ecs/get_resource",
        json!({ "resource": LEVEL }),
        "has no",
    )
    .await;
    call(
        &bridge,
        "ecs/set_resource",
        json!({ "resource": LEVEL, "value": 2 }),
    )
    .await;
    assert_eq!(
        call(&bridge, "ecs/get_resource", json!({ "resource": LEVEL })).await["value"],
        2
    );
    assert_eq!(
        ids(&bridge, json!({})).await.len(),
        3,
        "a resource is no game entity"
    );

    refused(
        &bridge,
        "ecs/get_resource",
        json!({ "resource": "ecs::Nope" }),
        "ecs::Nope",
    )
    .await;
    refused(
        &bridge,
        "ecs/get_resource",
        json!({ "resource": POSITION }),
        "not a reflected resource",
    )
    .await;
    refused(
        &bridge,
        "ecs/set_resource",
        json!({ "resource": "ecs::Nope", "value": 1 }),
        "ecs::Nope",
    )
    .await;
    refused(
        &bridge,
        "ecs/set_resource",
        json!({ "resource": SCORE, "value": { "points": "many" } }),
        SCORE,
    )
    .await;
    refused(
        &bridge,
        "ecs/set_resource",
        json!({ "resource": SCORE, "path": ".worst", "value": 1 }),
        "path",
    )
    .await;
    refused(
        &bridge,
        "ecs/set_resource",
        json!({ "resource": SCORE, "path": ".best", "value": -1 }),
        "value",
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
