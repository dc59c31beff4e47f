//! The game the ECS tests drive: components, resources and entities of every reflected shape, and calls that
//! expect success or a -32602 naming the bad input.

use bevy_app::App;
use bevy_ecs::prelude::*;
use bevy_reflect::prelude::ReflectDefault;
use bevy_reflect::Reflect;
use gabp_session::Bridge;
use gabp_types::ErrorCode;
use serde_json::Value;

use super::Game;

pub const POSITION: &str = "game::Position";
pub const VELOCITY: &str = "game::Velocity";
pub const FROZEN: &str = "game::Frozen";
pub const PLAYER: &str = "game::Player";
pub const SCORE: &str = "game::Score";
pub const LEVEL: &str = "game::Level";
pub const BADGE: &str = "game::Badge";
pub const SEALED: &str = "game::Sealed";

#[derive(Component, Reflect, Default)]
#[reflect(Component, Default)]
#[type_path = "game"]
struct Position {
    x: f32,
    y: f32,
}

#[derive(Component, Reflect)]
#[reflect(Component)]
#[type_path = "game"]
struct Velocity(f32, f32);

#[derive(Component, Reflect)]
#[reflect(Component)]
#[type_path = "game"]
struct Frozen;

#[derive(Reflect)]
#[type_path = "game"]
enum Team {
    Red,
    Blue,
}

#[derive(Component, Reflect)]
#[reflect(Component)]
#[type_path = "game"]
struct Player {
    name: String,
    lives: u8,
    team: Team,
    shield: Option<u32>,
}

#[derive(Resource, Reflect)]
#[reflect(Resource)]
#[type_path = "game"]
struct Score {
    points: u32,
    best: u32,
}

#[derive(Resource, Reflect)]
#[reflect(Resource)]
#[type_path = "game"]
struct Level(u32);

/// A value bevy_reflect cannot serialize (opaque, without `Serialize`).
#[derive(Reflect, Clone)]
#[reflect(opaque)]
#[type_path = "game"]
struct Key;

#[derive(Component, Reflect)]
#[reflect(Component)]
#[type_path = "game"]
struct Sealed {
    key: Key,
}

/// Set once, never changed in place.
#[derive(Component, Reflect)]
#[component(immutable)]
#[reflect(Component)]
#[type_path = "game"]
struct Badge(u32);

/// Three entities with a `Position`, one of them `Frozen` and `Sealed`, one a `Player` with an immutable `Badge`; a `Score`; `Level` registered
/// but not inserted.
pub fn world(app: &mut App) {
    app.register_type::<Position>()
        .register_type::<Velocity>()
        .register_type::<Frozen>()
        .register_type::<Player>()
        .register_type::<Score>()
        .register_type::<Level>()
        .register_type::<Badge>()
        .register_type::<Sealed>()
        .insert_resource(Score { points: 3, best: 9 });
    let world = app.world_mut();
    world.spawn((Position { x: 1.0, y: 2.0 }, Velocity(0.1, 0.0)));
    world.spawn((Position { x: 3.0, y: 4.0 }, Frozen, Sealed { key: Key }));
    world.spawn((
        Position::default(),
        Player {
            name: "ada".into(),
            lives: 3,
            team: Team::Blue,
            shield: None,
        },
        Badge(7),
    ));
}

pub async fn start() -> (Game, Bridge) {
    let game = Game::start(|p| p, world);
    let bridge = game.connect().await;
    (game, bridge)
}

pub async fn call(bridge: &Bridge, tool: &str, args: Value) -> Value {
    bridge
        .call_tool(tool, args.clone())
        .await
        .unwrap_or_else(|e| panic!("{tool} {args}: {e}"))
}

/// The call fails with -32602 and a message that names `needle`.
pub async fn refused(bridge: &Bridge, tool: &str, args: Value, needle: &str) {
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
pub async fn rows(bridge: &Bridge, args: Value) -> Vec<Value> {
    let result = call(bridge, "ecs/query", args).await;
    result["entities"].as_array().unwrap().clone()
}

pub async fn ids(bridge: &Bridge, args: Value) -> Vec<u64> {
    rows(bridge, args)
        .await
        .iter()
        .map(|r| r["entity"].as_u64().unwrap())
        .collect()
}
