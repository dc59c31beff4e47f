//! The demo game served by `gabp mod`: a 16x16x16 voxel world with one player, `steve`, that shows every
//! feature of a GABP mod. Its surface is fixed, because docs, examples and tests rely on it:
//!
//! | tool | arguments | result | also |
//! |---|---|---|---|
//! | `world/get_block` | `{x, y, z}` integers | `{x, y, z, block}` (`null` for air) | |
//! | `world/place_block` | `{x, y, z, blockType}` | `{success, blockPlaced}` | `world/block_change` event `{x, y, z, block}`; game thread |
//! | `inventory/get` | `{playerId?}` | `{slots: [{slot, item, count}]}` | |
//! | `player/teleport` | `{playerId?, x, y, z}` numbers | `{playerId, position: {x, y, z}}` | `player/move` event, same payload; game thread |
//! | `demo/echo` | `{value}` | `{value}` | |
//! | `demo/sleep` | `{ms}` (0..=60000) | `{sleptMs}` | |
//! | `demo/raise_error` | `{message, blocking?}` (default `true`) | `{attentionId}` | opens an attention item |
//! | `demo/status` | `{}` | `{toolCalls}` | tagged `status`: answers while attention blocks |
//!
//! Channels `player/move` and `world/block_change`; resources `gabp://game/world` (JSON text) and
//! `gabp://mod/info` (binary, sent base64); `state/get` with the components `world` and `player`, `state/set`
//! of `player.position`.
//!
//! Attention: [`DemoGame::new`] serves it with its own [`AttentionManager`] (`attention/current`,
//! `attention/ack` and the `attention/*` channels); `demo/raise_error` records an `error` entry in it, which
//! opens a blocking item that gating bridges honour until it is acknowledged. A game made with
//! [`DemoGame::with_attention`] records into the given [`AttentionSink`] instead (the caller serves
//! attention); a game with no sink at all ([`DemoGame::default`]) answers `demo/raise_error` with `-32402`.
//!
//! Tools that change the world run on the game's own thread: [`DemoGame::run_loop`] starts it. It pumps the
//! server's [`MainThread`] queue (SPEC/1.0/gabp.md §4.5) and advances the game clock 20 times a
//! second.

mod world;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use gabp_attention::{AttentionManager, Entry};
use gabp_session::server::{
    EventPublisher, MainThread, ModServer, ModServerBuilder, Resource, Tool, ToolError,
};
use gabp_types::methods::{
    SchemaVersion, ServerInfo, StateGetParams, StateSetError, StateSetParams, StateSetResult,
};
use gabp_types::{ErrorCode, ErrorObject, Severity, PROTOCOL_VERSION};
use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

pub use world::{BlockType, Position, Slot, World, WorldError, PLAYER_ID, WORLD_SIZE};

/// The welcome's `app.name`.
pub const APP_NAME: &str = "GABP Voxel Demo";
/// The welcome's `serverInfo.name`.
pub const SERVER_NAME: &str = "gabp-rs demo mod";
/// The welcome's `agentId` unless `GABS_GAME_ID` names another.
pub const AGENT_ID: &str = "voxel-demo";
/// The channel of player moves.
pub const PLAYER_MOVE: &str = "player/move";
/// The channel of block changes.
pub const BLOCK_CHANGE: &str = "world/block_change";
/// The world resource (JSON text).
pub const WORLD_URI: &str = "gabp://game/world";
/// The mod-info resource (binary: JSON bytes, sent base64).
pub const MOD_INFO_URI: &str = "gabp://mod/info";

/// How often the game thread runs queued tool calls.
const PUMP_INTERVAL: Duration = Duration::from_millis(10);
/// How long one pump may run queued calls.
const PUMP_BUDGET: Duration = Duration::from_millis(5);
/// One game tick (20 ticks a second).
const TICK: Duration = Duration::from_millis(50);

/// Where `demo/raise_error` records its error: the [`AttentionManager`] implements it, opening or updating the
/// current attention item.
pub trait AttentionSink: Send + Sync + 'static {
    /// Records `message` as a game error, opens (or updates) the attention item, blocking bridges when
    /// `blocking`, and returns the item's `attentionId`.
    ///
    /// # Errors
    ///
    /// A [`ToolError`] sent to the bridge as the tool's error.
    fn raise(&self, message: &str, blocking: bool) -> Result<String, ToolError>;
}

/// `demo/raise_error` records an `error` entry: it opens an item (or folds into the open one), blocking unless
/// the call says otherwise.
impl AttentionSink for AttentionManager {
    fn raise(&self, message: &str, blocking: bool) -> Result<String, ToolError> {
        self.record_entry(
            Entry::new(Severity::Error, message)
                .blocking(blocking)
                .causal_method("demo/raise_error"),
        )
        .attention_id
        .ok_or_else(|| ToolError::new("the attention policy opened no item"))
    }
}

/// The demo game: the world, and what the server needs to serve it. Cheap to clone (shared state).
#[derive(Clone, Default)]
pub struct DemoGame {
    world: Arc<Mutex<World>>,
    attention: Option<Arc<dyn AttentionSink>>,
    /// The attention manager the game serves itself (installed by [`DemoGame::register`]).
    manager: Option<AttentionManager>,
    tool_calls: Arc<AtomicU64>,
}

impl std::fmt::Debug for DemoGame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoGame")
            .field("tool_calls", &self.tool_calls())
            .field("attention", &self.attention.is_some())
            .finish_non_exhaustive()
    }
}

// ---- tool arguments and results -------------------------------------------------------------------------

/// Block coordinates.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct BlockPosition {
    /// East-west, an integer 0..=15.
    x: i64,
    /// Height, an integer 0..=15.
    y: i64,
    /// North-south, an integer 0..=15.
    z: i64,
}

/// The block at a position.
#[derive(Debug, Serialize, JsonSchema)]
struct BlockAt {
    /// East-west.
    x: i64,
    /// Height.
    y: i64,
    /// North-south.
    z: i64,
    /// The block type, or `null` for air.
    #[schemars(schema_with = "nullable_string")]
    block: Option<String>,
}

/// A string or `null` (schemars leaves `null` out of a required `Option<String>`).
fn nullable_string(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["string", "null"] })
}

/// A block to place.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PlaceBlock {
    /// East-west, an integer 0..=15.
    x: i64,
    /// Height, an integer 0..=15.
    y: i64,
    /// North-south, an integer 0..=15.
    z: i64,
    /// The block to put there; `air` removes the block.
    block_type: BlockType,
}

/// What `world/place_block` did.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Placed {
    /// Whether the block was placed.
    success: bool,
    /// The block now at the position.
    block_placed: BlockType,
}

/// The payload of `world/block_change`.
#[derive(Debug, Serialize)]
struct BlockChange {
    x: i64,
    y: i64,
    z: i64,
    block: Option<String>,
}

/// Which player.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PlayerArgs {
    /// The player (default and only one: `steve`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    player_id: Option<String>,
}

/// A player's inventory.
#[derive(Debug, Serialize, JsonSchema)]
struct Inventory {
    /// The occupied slots, in slot order.
    slots: Vec<Slot>,
}

/// Where to move a player.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Teleport {
    /// The player (default and only one: `steve`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    player_id: Option<String>,
    /// East-west, a number 0..=16.
    x: f64,
    /// Height, a number 0..=16.
    y: f64,
    /// North-south, a number 0..=16.
    z: f64,
}

/// A player and where it now is: the result of `player/teleport` and the payload of `player/move`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct PlayerMoved {
    /// The player.
    player_id: String,
    /// Its position.
    position: Position,
}

/// Any JSON value.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Echo {
    /// Returned unchanged.
    value: Value,
}

/// How long to sleep.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Sleep {
    /// Milliseconds, 0..=60000.
    #[schemars(range(max = 60000))]
    ms: u64,
}

/// How long the tool slept.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Slept {
    /// Milliseconds.
    slept_ms: u64,
}

fn default_blocking() -> bool {
    true
}

/// The error to raise.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RaiseError {
    /// What went wrong, as the game would log it.
    #[schemars(length(min = 1))]
    message: String,
    /// Whether the attention item blocks bridges until it is acknowledged.
    #[serde(default = "default_blocking")]
    blocking: bool,
}

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArguments {}

/// What `demo/status` reports.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Status {
    /// How many tool calls the game has executed, `demo/status` excluded.
    tool_calls: u64,
}

/// The attention item opened.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Raised {
    /// Its id, for `attention/ack`.
    attention_id: String,
}

// ---- errors ---------------------------------------------------------------------------------------------

/// A world error as the tool's `-32402` answer, with details in `data`.
fn tool_error(e: &WorldError) -> ToolError {
    let data = match e {
        WorldError::BlockOutOfBounds { axis, value } => {
            json!({ "field": axis, "value": value, "min": 0, "max": WORLD_SIZE - 1 })
        }
        WorldError::PositionOutOfBounds { axis, value } => {
            json!({ "field": axis, "value": value, "min": 0, "max": WORLD_SIZE })
        }
        WorldError::UnknownPlayer(id) => json!({ "playerId": id, "players": [PLAYER_ID] }),
    };
    ToolError::new(e.to_string())
        .with_data(data)
        .retryable(false)
}

/// An unknown `playerId` of `state/get` or `state/set`: `-32602` naming the parameter.
fn unknown_player(e: &WorldError) -> ErrorObject {
    let message = e.to_string();
    ErrorObject::new(ErrorCode::INVALID_PARAMS, message.clone()).with_data(json!({
        "errors": [{ "path": "/params/playerId", "message": message }]
    }))
}

fn state_error(field: impl Into<String>, message: impl Into<String>, code: &str) -> StateSetError {
    StateSetError {
        field: field.into(),
        message: message.into(),
        code: Some(code.to_owned()),
    }
}

// ---- the game -------------------------------------------------------------------------------------------

impl DemoGame {
    /// A fresh world that serves attention with its own manager (see the module documentation).
    pub fn new() -> Self {
        let manager = AttentionManager::new();
        DemoGame {
            attention: Some(Arc::new(manager.clone())),
            manager: Some(manager),
            ..Self::default()
        }
    }

    /// Lets `demo/raise_error` open attention items through `sink` instead; the caller serves attention (it
    /// installs its own manager on the builder).
    #[allow(dead_code)] // For embedders and tests: the binary's demo game serves its own manager.
    pub fn with_attention(mut self, sink: Arc<dyn AttentionSink>) -> Self {
        self.attention = Some(sink);
        self.manager = None;
        self
    }

    /// The attention manager the game serves itself, if it does.
    #[allow(dead_code)] // For embedders and tests; `gabp mod` needs no handle on it.
    pub fn attention(&self) -> Option<&AttentionManager> {
        self.manager.as_ref()
    }

    /// How many tool calls the game has executed (calls refused before reaching a tool are not counted).
    pub fn tool_calls(&self) -> u64 {
        self.tool_calls.load(Ordering::Relaxed)
    }

    fn count_call(&self) {
        self.tool_calls.fetch_add(1, Ordering::Relaxed);
    }

    /// A server builder with the game's identity (`app` [`APP_NAME`] and `serverInfo` [`SERVER_NAME`] at this
    /// crate's version, `agentId` [`AGENT_ID`]) and its whole surface. Add a token (or settings) and build it,
    /// then start the game thread with [`DemoGame::run_loop`] (without it, `world/place_block` and
    /// `player/teleport` wait and time out with `-32403`).
    ///
    /// [`ModServerBuilder::settings`] keeps the agent id set here: to report `GABS_GAME_ID`, call
    /// [`ModServerBuilder::agent_id`] with it.
    pub fn builder(&self) -> ModServerBuilder {
        self.register(
            ModServer::builder()
                .app(APP_NAME, env!("CARGO_PKG_VERSION"))
                .server_info(ServerInfo {
                    name: Some(SERVER_NAME.to_owned()),
                    version: Some(env!("CARGO_PKG_VERSION").to_owned()),
                    author: None,
                })
                .agent_id(AGENT_ID),
        )
    }

    /// Registers the game's channels, tools, resources and state handlers on `builder`.
    pub fn register(&self, builder: ModServerBuilder) -> ModServerBuilder {
        let mut builder = builder.channel(PLAYER_MOVE).channel(BLOCK_CHANGE);
        if let Some(manager) = &self.manager {
            builder = manager.install(builder);
        }
        let events = builder.event_publisher();
        builder
            .tool(self.get_block_tool())
            .tool(self.place_block_tool(events.clone()))
            .tool(self.inventory_tool())
            .tool(self.teleport_tool(events.clone()))
            .tool(self.echo_tool())
            .tool(self.sleep_tool())
            .tool(self.raise_error_tool())
            .tool(self.status_tool())
            .resource(self.world_resource())
            .resource(mod_info_resource())
            .state_get({
                let game = self.clone();
                move |params: StateGetParams| {
                    let state = game.state(params.player_id.as_deref());
                    async move { state }
                }
            })
            .state_set({
                let game = self.clone();
                move |params: StateSetParams| {
                    let result = game.set_state(&params, &events);
                    async move { result }
                }
            })
    }

    fn get_block_tool(&self) -> Tool {
        let game = self.clone();
        Tool::new("world/get_block", move |p: BlockPosition| {
            game.count_call();
            let block = game.world.lock().block(p.x, p.y, p.z);
            async move {
                let block = block.map_err(|e| tool_error(&e))?;
                Ok(BlockAt {
                    x: p.x,
                    y: p.y,
                    z: p.z,
                    block: block.reported(),
                })
            }
        })
        .title("Get block")
        .description(
            "The block at integer coordinates x, y, z (each 0..=15) of the 16x16x16 world; block is null \
             for air.",
        )
        .tags(["world", "read-only"])
    }

    fn place_block_tool(&self, events: EventPublisher) -> Tool {
        let game = self.clone();
        Tool::on_main_thread("world/place_block", move |p: PlaceBlock| {
            game.count_call();
            let mut world = game.world.lock();
            world
                .place(p.x, p.y, p.z, p.block_type)
                .map_err(|e| tool_error(&e))?;
            // Published under the world's lock, so the events' seq order is the order of the changes.
            let change = BlockChange {
                x: p.x,
                y: p.y,
                z: p.z,
                block: p.block_type.reported(),
            };
            if let Err(e) = events.publish(BLOCK_CHANGE, &change) {
                tracing::error!(error = %e, "cannot publish world/block_change");
            }
            Ok(Placed {
                success: true,
                block_placed: p.block_type,
            })
        })
        .title("Place block")
        .description(
            "Puts a block at integer coordinates x, y, z (each 0..=15); blockType air removes the block. \
             Publishes world/block_change. Runs on the game thread.",
        )
        .tags(["world", "write"])
    }

    fn inventory_tool(&self) -> Tool {
        let game = self.clone();
        Tool::new("inventory/get", move |p: PlayerArgs| {
            game.count_call();
            let slots = game
                .world.lock()
                .inventory(p.player_id.as_deref())
                .map(<[Slot]>::to_vec);
            async move {
                Ok(Inventory {
                    slots: slots.map_err(|e| tool_error(&e))?,
                })
            }
        })
        .title("Get inventory")
        .description("The item stacks a player carries, by slot (playerId defaults to steve, the only player).")
        .tags(["inventory", "player", "read-only"])
    }

    fn teleport_tool(&self, events: EventPublisher) -> Tool {
        let game = self.clone();
        Tool::on_main_thread("player/teleport", move |p: Teleport| {
            game.count_call();
            let position = Position {
                x: p.x,
                y: p.y,
                z: p.z,
            };
            game.move_player(p.player_id.as_deref(), position, &events)
                .map_err(|e| tool_error(&e))
        })
        .title("Teleport player")
        .description(
            "Moves a player to x, y, z (numbers 0..=16; playerId defaults to steve, the only player) and \
             publishes player/move with the same payload. Runs on the game thread.",
        )
        .tags(["player", "write"])
    }

    fn echo_tool(&self) -> Tool {
        let game = self.clone();
        Tool::new("demo/echo", move |e: Echo| {
            game.count_call();
            async move { Ok::<_, ToolError>(e) }
        })
        .title("Echo")
        .description("Returns value unchanged.")
        .tags(["demo", "read-only"])
    }

    fn sleep_tool(&self) -> Tool {
        let game = self.clone();
        Tool::new("demo/sleep", move |s: Sleep| {
            game.count_call();
            async move {
                tokio::time::sleep(Duration::from_millis(s.ms)).await;
                Ok::<_, ToolError>(Slept { slept_ms: s.ms })
            }
        })
        .title("Sleep")
        .description(
            "Waits ms milliseconds (0..=60000), then answers. A sleep longer than the request timeout \
             (30 s) is answered -32403.",
        )
        .tags(["demo", "timing", "read-only"])
    }

    fn raise_error_tool(&self) -> Tool {
        let game = self.clone();
        Tool::new("demo/raise_error", move |r: RaiseError| {
            game.count_call();
            let outcome = game.raise(&r.message, r.blocking);
            async move { outcome.map(|attention_id| Raised { attention_id }) }
        })
        .title("Raise error")
        .description(
            "Records message as a game error and opens an attention item (or adds to the open one), \
             blocking unless blocking is false; answers the item's attentionId.",
        )
        .tags(["demo", "attention"])
    }

    fn status_tool(&self) -> Tool {
        let game = self.clone();
        Tool::new("demo/status", move |_: NoArguments| {
            // Not counted: it reports the count.
            let calls = game.tool_calls();
            async move { Ok::<_, ToolError>(Status { tool_calls: calls }) }
        })
        .title("Status")
        .description(
            "How many tool calls the game has executed (this one excluded; calls refused before reaching \
             a tool are not counted). Tagged status, so it answers while an attention item blocks.",
        )
        .tags(["demo", "status", "read-only"])
    }

    fn raise(&self, message: &str, blocking: bool) -> Result<String, ToolError> {
        match &self.attention {
            Some(sink) => sink.raise(message, blocking),
            None => Err(ToolError::new(format!(
                "{message} (not recorded: this mod does not serve attention yet)"
            ))
            .with_data(json!({ "message": message, "blocking": blocking, "attention": false }))
            .retryable(false)),
        }
    }

    /// Moves the player and publishes `player/move` (under the world's lock, so `seq` follows the moves).
    fn move_player(
        &self,
        player_id: Option<&str>,
        position: Position,
        events: &EventPublisher,
    ) -> Result<PlayerMoved, WorldError> {
        let mut world = self.world.lock();
        let id = world.teleport(player_id, position)?;
        let moved = PlayerMoved {
            player_id: id.to_owned(),
            position,
        };
        if let Err(e) = events.publish(PLAYER_MOVE, &moved) {
            tracing::error!(error = %e, "cannot publish player/move");
        }
        Ok(moved)
    }

    fn world_resource(&self) -> Resource {
        let game = self.clone();
        Resource::text(WORLD_URI, "World", move || {
            let text = game.world_json();
            async move { Ok(text) }
        })
        .mime_type("application/json")
        .description("Size, block palette, block counts and players of the 16x16x16 world")
    }

    /// The content of `gabp://game/world`.
    fn world_json(&self) -> String {
        let world = self.world.lock();
        let counts: Map<String, Value> = world
            .counts()
            .into_iter()
            .map(|(block, n)| (block.as_str().to_owned(), json!(n)))
            .collect();
        let position = world.position(None).ok();
        json!({
            "size": { "x": WORLD_SIZE, "y": WORLD_SIZE, "z": WORLD_SIZE },
            "palette": BlockType::ALL.map(BlockType::as_str),
            "counts": counts,
            "blockChanges": world.block_changes(),
            "players": [{ "id": PLAYER_ID, "position": position }],
        })
        .to_string()
    }

    /// The state by component, for `state/get` (the server filters `components` and adds the timestamp).
    fn state(&self, player_id: Option<&str>) -> Result<Map<String, Value>, ErrorObject> {
        let world = self.world.lock();
        let position = world.position(player_id).map_err(|e| unknown_player(&e))?;
        let mut state = Map::new();
        state.insert(
            "world".into(),
            json!({
                "size": { "x": WORLD_SIZE, "y": WORLD_SIZE, "z": WORLD_SIZE },
                "tick": world.ticks(),
                "blockChanges": world.block_changes(),
            }),
        );
        state.insert(
            "player".into(),
            json!({ "id": PLAYER_ID, "position": position }),
        );
        Ok(state)
    }

    /// `state/set`: only `player.position` can be set. Every other field is reported in `errors`. With
    /// `validate: true`, nothing is applied when anything fails.
    fn set_state(
        &self,
        params: &StateSetParams,
        events: &EventPublisher,
    ) -> Result<StateSetResult, ErrorObject> {
        let player_id =
            World::player_id(params.player_id.as_deref()).map_err(|e| unknown_player(&e))?;
        let mut position = None;
        let mut errors = Vec::new();
        for (component, value) in &params.updates {
            match (component.as_str(), value) {
                ("player", Value::Object(fields)) => {
                    for (field, value) in fields {
                        let path = format!("player.{field}");
                        if field != "position" {
                            errors.push(state_error(
                                path,
                                "read-only; only player.position can be set",
                                "read_only",
                            ));
                            continue;
                        }
                        match serde_json::from_value::<Position>(value.clone()) {
                            Err(e) => errors.push(state_error(
                                path,
                                format!("must be an object {{x, y, z}} of numbers: {e}"),
                                "invalid_value",
                            )),
                            Ok(p) => match World::check_position(p) {
                                Ok(p) => position = Some(p),
                                Err(e) => {
                                    errors.push(state_error(path, e.to_string(), "out_of_range"))
                                }
                            },
                        }
                    }
                }
                ("player", _) => errors.push(state_error(
                    "player",
                    "must be an object such as {\"position\": {\"x\": 1, \"y\": 5, \"z\": 1}}",
                    "invalid_value",
                )),
                ("world", Value::Object(fields)) if !fields.is_empty() => {
                    for field in fields.keys() {
                        errors.push(state_error(
                            format!("world.{field}"),
                            "read-only; the world changes through tools such as world/place_block",
                            "read_only",
                        ));
                    }
                }
                ("world", _) => errors.push(state_error(
                    "world",
                    "read-only; the world changes through tools such as world/place_block",
                    "read_only",
                )),
                (other, _) => errors.push(state_error(
                    other,
                    "unknown component; the state has world and player",
                    "unknown_component",
                )),
            }
        }
        let mut applied = Map::new();
        // With validate, all or nothing.
        let apply = params.validate != Some(true) || errors.is_empty();
        if let Some(position) = position.filter(|_| apply) {
            let moved = self
                .move_player(Some(player_id), position, events)
                .map_err(|e| unknown_player(&e))?;
            applied.insert("player".into(), json!({ "position": moved.position }));
        }
        Ok(StateSetResult {
            applied,
            errors: (!errors.is_empty()).then_some(errors),
        })
    }

    /// Starts the game thread: it runs the calls queued on `main_thread` (the world-changing tools) every
    /// 10 ms and advances the game clock 20 times a second, until the returned [`GameLoop`] is dropped.
    ///
    /// # Errors
    ///
    /// When the thread cannot be started.
    pub fn run_loop(&self, main_thread: MainThread) -> std::io::Result<GameLoop> {
        let (stop, stopped) = mpsc::channel::<()>();
        let world = self.world.clone();
        let thread = std::thread::Builder::new()
            .name("gabp-demo-game".into())
            .spawn(move || {
                let mut next_tick = Instant::now() + TICK;
                loop {
                    main_thread.pump(PUMP_BUDGET);
                    let now = Instant::now();
                    if now >= next_tick {
                        world.lock().tick();
                        next_tick = now + TICK;
                    }
                    match stopped.recv_timeout(PUMP_INTERVAL) {
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    }
                }
            })?;
        Ok(GameLoop {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

/// The content of `gabp://mod/info`: JSON bytes, served as binary (base64 on the wire).
fn mod_info() -> Vec<u8> {
    json!({
        "name": APP_NAME,
        "version": env!("CARGO_PKG_VERSION"),
        "protocol": PROTOCOL_VERSION,
        "schemaVersion": SchemaVersion::CURRENT,
        "implementation": "gabp-rs",
        "repository": env!("CARGO_PKG_REPOSITORY"),
    })
    .to_string()
    .into_bytes()
}

fn mod_info_resource() -> Resource {
    let size = u64::try_from(mod_info().len()).unwrap_or(u64::MAX);
    Resource::binary(MOD_INFO_URI, "Mod info", || async { Ok(mod_info()) })
        .mime_type("application/json")
        .size(size)
        .description("Name, version and protocol of the demo mod, as JSON bytes (sent base64)")
}

/// The running game thread of [`DemoGame::run_loop`]; dropping it stops the thread and waits for it.
#[derive(Debug)]
pub struct GameLoop {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for GameLoop {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            if thread.join().is_err() {
                tracing::error!("the game thread panicked");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gabp_transport::Token;

    fn server(game: &DemoGame) -> ModServer {
        game.builder()
            .token(Token::new("t".repeat(64)).unwrap())
            .build()
            .unwrap()
    }

    #[test]
    fn surface_is_the_fixed_one() {
        let game = DemoGame::new();
        let server = server(&game);
        let welcome = server.welcome();
        assert_eq!(welcome.agent_id.as_str(), AGENT_ID);
        assert_eq!(welcome.app.name.as_str(), APP_NAME);
        let caps = &welcome.capabilities;
        for method in [
            "state/get",
            "state/set",
            "resources/read",
            "events/subscribe",
        ] {
            assert!(caps.has_method(method), "{method}");
        }
        assert!(caps.has_event(PLAYER_MOVE));
        assert!(caps.has_event(BLOCK_CHANGE));
        let resources: Vec<&str> = caps
            .resources
            .as_ref()
            .unwrap()
            .iter()
            .map(|u| u.as_str())
            .collect();
        assert_eq!(resources, [WORLD_URI, MOD_INFO_URI]);
    }

    #[test]
    fn tool_errors_carry_details() {
        let e = tool_error(&WorldError::BlockOutOfBounds {
            axis: "y",
            value: 99,
        })
        .to_error_object();
        assert_eq!(e.code, ErrorCode::TOOL_EXECUTION_FAILED);
        assert_eq!(
            e.data.unwrap(),
            json!({"field": "y", "value": 99, "min": 0, "max": 15, "retryable": false})
        );
        let e = tool_error(&WorldError::UnknownPlayer("alex".into())).to_error_object();
        assert_eq!(e.data.unwrap()["players"], json!(["steve"]));
    }

    #[test]
    fn state_get_and_set() {
        let game = DemoGame::new();
        let events = server(&game).event_publisher();
        let state = game.state(None).unwrap();
        assert_eq!(
            state["player"]["position"],
            json!({"x": 8.5, "y": 5.0, "z": 8.5})
        );
        assert_eq!(state["world"]["blockChanges"], 0);
        assert_eq!(
            game.state(Some("alex")).unwrap_err().code,
            ErrorCode::INVALID_PARAMS
        );

        let params = |updates: Value, validate: Option<bool>| StateSetParams {
            updates: updates.as_object().unwrap().clone(),
            player_id: None,
            validate,
        };
        let result = game
            .set_state(
                &params(
                    json!({"player": {"position": {"x": 1, "y": 5, "z": 2}}, "world": {"tick": 0}}),
                    None,
                ),
                &events,
            )
            .unwrap();
        assert_eq!(
            Value::Object(result.applied),
            json!({"player": {"position": {"x": 1.0, "y": 5.0, "z": 2.0}}})
        );
        let errors = result.errors.unwrap();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "world.tick");
        assert_eq!(errors[0].code.as_deref(), Some("read_only"));
        assert_eq!(
            events.next_seq(PLAYER_MOVE),
            Some(1),
            "a move publishes player/move"
        );

        // validate: all or nothing.
        let result = game
            .set_state(
                &params(
                    json!({"player": {"position": {"x": 3, "y": 5, "z": 3}, "health": 5}}),
                    Some(true),
                ),
                &events,
            )
            .unwrap();
        assert!(result.applied.is_empty());
        assert_eq!(result.errors.unwrap()[0].field, "player.health");
        assert_eq!(game.state(None).unwrap()["player"]["position"]["x"], 1.0);

        // Bad values are errors, never panics.
        let result = game
            .set_state(
                &params(
                    json!({"player": {"position": {"x": 99, "y": 5, "z": 3}}, "weather": 1, "world": 2}),
                    None,
                ),
                &events,
            )
            .unwrap();
        let codes: Vec<_> = result
            .errors
            .unwrap()
            .into_iter()
            .map(|e| (e.field, e.code.unwrap_or_default()))
            .collect();
        assert!(
            codes.contains(&("player.position".into(), "out_of_range".into())),
            "{codes:?}"
        );
        assert!(
            codes.contains(&("weather".into(), "unknown_component".into())),
            "{codes:?}"
        );
        assert!(
            codes.contains(&("world".into(), "read_only".into())),
            "{codes:?}"
        );
        let result = game
            .set_state(
                &params(json!({"player": {"position": "up"}}), None),
                &events,
            )
            .unwrap();
        assert_eq!(
            result.errors.unwrap()[0].code.as_deref(),
            Some("invalid_value")
        );

        let mut unknown = params(json!({}), None);
        unknown.player_id = Some("alex".into());
        assert_eq!(
            game.set_state(&unknown, &events).unwrap_err().code,
            ErrorCode::INVALID_PARAMS
        );
    }

    #[test]
    fn world_resource_and_mod_info() {
        let game = DemoGame::new();
        let world: Value = serde_json::from_str(&game.world_json()).unwrap();
        assert_eq!(world["counts"]["grass"], 256);
        assert_eq!(world["palette"][0], "air");
        assert_eq!(world["players"][0]["id"], "steve");
        let info: Value = serde_json::from_slice(&mod_info()).unwrap();
        assert_eq!(info["name"], APP_NAME);
        assert_eq!(info["protocol"], "gabp/1");
    }

    struct Recorder(Mutex<Vec<(String, bool)>>);

    impl AttentionSink for Recorder {
        fn raise(&self, message: &str, blocking: bool) -> Result<String, ToolError> {
            let mut raised = self.0.lock();
            raised.push((message.to_owned(), blocking));
            Ok(format!("att-{}", raised.len()))
        }
    }

    #[test]
    fn raise_error_without_and_with_attention() {
        let game = DemoGame::default();
        let e = game
            .raise("chunk failed", true)
            .unwrap_err()
            .to_error_object();
        assert_eq!(e.code, ErrorCode::TOOL_EXECUTION_FAILED);
        assert!(e.message.starts_with("chunk failed"), "{}", e.message);
        assert_eq!(e.data.unwrap()["blocking"], true);

        let recorder = Arc::new(Recorder(Mutex::new(Vec::new())));
        let game = DemoGame::new().with_attention(recorder.clone());
        assert_eq!(game.raise("disk full", false).unwrap(), "att-1");
        assert_eq!(
            recorder.0.lock().as_slice(),
            [("disk full".to_owned(), false)]
        );
    }

    #[test]
    fn new_game_serves_attention_and_raise_opens_a_blocking_item() {
        let game = DemoGame::new();
        let server = server(&game);
        let caps = &server.welcome().capabilities;
        assert!(caps.has_method("attention/current") && caps.has_method("attention/ack"));
        for channel in gabp_attention::CHANNELS {
            assert!(caps.has_event(channel), "{channel}");
        }
        let id = game.raise("disk full", true).unwrap();
        let item = game.attention().unwrap().blocking().unwrap();
        assert_eq!(item.attention_id.as_str(), id);
        assert_eq!(item.causal_method.unwrap().as_str(), "demo/raise_error");
        assert_eq!(game.raise("disk still full", true).unwrap(), id, "folded");

        // A game given another sink leaves serving attention to its caller.
        let recorder = Arc::new(Recorder(Mutex::new(Vec::new())));
        let game = DemoGame::new().with_attention(recorder);
        assert!(game.attention().is_none());
        assert!(!server_caps_have_attention(&game));
    }

    fn server_caps_have_attention(game: &DemoGame) -> bool {
        server(game)
            .welcome()
            .capabilities
            .has_method("attention/current")
    }

    #[test]
    fn game_loop_runs_main_thread_calls_and_ticks() {
        let game = DemoGame::new();
        let server = server(&game);
        let game_loop = game.run_loop(server.main_thread()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while game.world.lock().ticks() < 2 {
            assert!(Instant::now() < deadline, "the game clock does not advance");
            std::thread::sleep(Duration::from_millis(10));
        }
        drop(game_loop); // stops and joins the thread
        let ticks = game.world.lock().ticks();
        std::thread::sleep(Duration::from_millis(120));
        assert_eq!(game.world.lock().ticks(), ticks, "the game thread stopped");
    }
}
