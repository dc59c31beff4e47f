//! The ECS tools that change the world, on a headless app driven by a gabp-session bridge over TCP: spawn,
//! insert, remove, despawn, mutate, resources; each bad input (an unknown type path, an entity that does not
//! exist, a value that does not deserialize) answered -32602, changing nothing.
#![allow(clippy::unwrap_used)]

mod support;

use serde_json::{json, Value};
use support::world::{
    call, ids, refused, start, BADGE, FROZEN, LEVEL, PLAYER, POSITION, SCORE, VELOCITY,
};

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
        json!({ "entity": first, "components": { FROZEN: {}, VELOCITY: { "x": 1 } } }),
        VELOCITY,
    )
    .await;
    let unchanged = call(&bridge, "ecs/list_components", json!({ "entity": first })).await;
    assert!(
        !unchanged["components"]
            .as_array()
            .unwrap()
            .contains(&json!(FROZEN)),
        "a refused insert inserts nothing: {unchanged}"
    );
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
        json!({ "entity": player, "component": BADGE, "path": ".0", "value": 8 }),
        "immutable",
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
