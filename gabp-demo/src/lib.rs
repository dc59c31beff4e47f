//! The GABP demo game, served by `gabp mod` and `gabp demo`: a 16x16x16 voxel world with one player, `steve`, that shows every
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
//! | `demo/set_bonus` | `{enabled}` | `{enabled, changed}` | adds or removes `demo/bonus` (`{}` → `{message}`) |
//! | `world/entities` | `{}` | `{tick, entities: [{id, kind, x, y, z, moves}]}` | three sheep, one block per tick |
//! | `world/render` | `{scale?}` (1..=32, default 8) | `{width, height, scale, tick, pngBytes}` | the PNG as an image content item |
//!
//! Time control (SPEC/1.0 extensions.md §time-control): `time/status`, `time/pause`, `time/resume` and
//! `time/step {ticks}` freeze and step the game clock, and with it the sheep; `time/changed` announces each pause
//! and resume. Input (SPEC/1.0 extensions.md §input): `input/key` with the arrow keys or WASD walks the player one
//! block and publishes `player/move`. Env (SPEC/1.0 extensions.md §env): a herding task for reinforcement
//! learning. `env/reset {seed}` makes a world with a sand pen in the south-east corner (x and z 12..=15) and three
//! sheep placed by the seed; `env/step {action}` walks the player (`Discrete(5)`: stay, north, east, south, west),
//! then runs two ticks, in which a sheep within two blocks of the player flees it and a penned sheep stays
//! penned. Observations are `[player x, player z, sheep x, sheep z, ...]`; the reward is the sheep newly penned;
//! the episode terminates when all three are, and is truncated after 500 steps.
//!
//! Channels `player/move`, `world/block_change` and `tools/changed` (the tools change at run time: SPEC/1.0
//! extensions.md §tools-changed); resources `gabp://game/world` (JSON text) and
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
//!
//! Layering: a mod built like any game's, on `gabp-session` (the server), `gabp-transport` and
//! `gabp-attention`; the `gabp` command, `gabp-hub` and `gabp-mcp` tests use it as their game.
//!
//! ```
//! use gabp_demo::InProcessGame;
//! use gabp_session::bridge::Bridge;
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The game and its game thread, on a free loopback port.
//! let game = InProcessGame::start().await?;
//! let bridge = Bridge::connect(game.handle.endpoint(), game.token.clone()).await?;
//!
//! let at = json!({"x": 3, "y": 9, "z": 3});
//! assert_eq!(bridge.call_tool("world/get_block", at.clone()).await?["block"], json!(null));
//! let place = json!({"x": 3, "y": 9, "z": 3, "blockType": "glass"});
//! assert_eq!(bridge.call_tool("world/place_block", place).await?["success"], true);
//! assert_eq!(bridge.call_tool("world/get_block", at).await?["block"], "glass");
//! bridge.goodbye(None).await?;
//! game.handle.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod bonus;
mod env;
mod error;
mod in_process;
mod input;
mod pen;
mod render;
mod resources;
mod sheep;
mod state;
mod tools;
mod view;
mod world;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use gabp_attention::{AttentionManager, Entry};
use gabp_session::server::{CallError, GameClock, MainThread, ModServer, ModServerBuilder};
use gabp_types::methods::{ServerInfo, StateGetParams, StateSetParams};
use gabp_types::Severity;
use parking_lot::Mutex;
use serde_json::json;

use self::resources::mod_info_resource;

pub use env::{env_spec, ENV_ACTIONS, ENV_MAX_STEPS, ENV_TICKS_PER_STEP};
pub use error::DemoError;
pub use in_process::InProcessGame;
pub use pen::{in_pen, FLEE_DISTANCE, FLOCK_SIZE, PEN_MIN};
pub use render::{Picture, DEFAULT_SCALE, MAX_SCALE, PLAYER_COLOUR, SHEEP_COLOUR};
pub use sheep::Entity;
pub use world::{BlockType, Position, Slot, World, PLAYER_ID, WORLD_SIZE};

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
    /// A [`CallError`] sent to the bridge as the tool's error.
    fn raise(&self, message: &str, blocking: bool) -> Result<String, CallError>;
}

/// `demo/raise_error` records an `error` entry: it opens an item (or folds into the open one), blocking unless
/// the call says otherwise.
impl AttentionSink for AttentionManager {
    fn raise(&self, message: &str, blocking: bool) -> Result<String, CallError> {
        self.record_entry(
            Entry::new(Severity::Error, message)
                .blocking(blocking)
                .causal_method("demo/raise_error"),
        )
        .attention_id
        .ok_or_else(|| CallError::new("the attention policy opened no item"))
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
    herd: Arc<Mutex<env::Herd>>,
}

impl std::fmt::Debug for DemoGame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoGame")
            .field("tool_calls", &self.tool_calls())
            .field("attention", &self.attention.is_some())
            .finish_non_exhaustive()
    }
}

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
                    extra: serde_json::Map::new(),
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
        let tools = builder.tool_registry();
        builder
            .dynamic_tools(true)
            .time_control(true)
            .input({
                let game = self.clone();
                let events = events.clone();
                move |_: &mut (), input| game.take_input(input, &events)
            })
            .env(
                env_spec(),
                {
                    let game = self.clone();
                    move |_: &mut (), params| Ok(game.env_reset(&params))
                },
                {
                    let game = self.clone();
                    let events = events.clone();
                    move |_: &mut (), action| game.env_act(&action, &events)
                },
                {
                    let game = self.clone();
                    move |_: &mut ()| Ok(game.env_observe())
                },
            )
            .tool(self.get_block_tool())
            .tool(self.place_block_tool(events.clone()))
            .tool(self.inventory_tool())
            .tool(self.teleport_tool(events.clone()))
            .tool(self.echo_tool())
            .tool(self.sleep_tool())
            .tool(self.raise_error_tool())
            .tool(self.status_tool())
            .tool(self.set_bonus_tool(tools))
            .tool(self.entities_tool())
            .tool(self.render_tool())
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

    fn raise(&self, message: &str, blocking: bool) -> Result<String, CallError> {
        match &self.attention {
            Some(sink) => sink.raise(message, blocking),
            None => Err(CallError::new(format!(
                "{message} (not recorded: this mod does not serve attention yet)"
            ))
            .with_data(json!({ "message": message, "blocking": blocking, "attention": false }))
            .retryable(false)),
        }
    }

    /// Starts the game thread: it advances the game clock 20 times a second and, between ticks, waits for
    /// calls queued on `main_thread` (the world-changing tools) and runs them as soon as they arrive, until the
    /// returned [`GameLoop`] is dropped. While time is paused it runs no tick but those a `time/step` owes,
    /// which it runs at once.
    ///
    /// # Errors
    ///
    /// [`DemoError::GameThread`] when the thread cannot be started.
    pub fn run_loop(&self, main_thread: MainThread) -> Result<GameLoop, DemoError> {
        let stop = Arc::new(AtomicBool::new(false));
        let world = self.world.clone();
        let (stopping, queue) = (stop.clone(), main_thread.clone());
        let clock = main_thread.clock();
        let thread = std::thread::Builder::new()
            .name("gabp-demo-game".into())
            .spawn(move || {
                let mut next_tick = Instant::now() + TICK;
                while !stopping.load(Ordering::Acquire) {
                    let now = Instant::now();
                    let stepping = clock.as_ref().is_some_and(GameClock::is_stepping);
                    if now >= next_tick || stepping {
                        match &clock {
                            Some(clock) => clock.run_tick(|| world.lock().tick()),
                            None => {
                                world.lock().tick();
                                true
                            }
                        };
                        // Fixed steps: the next tick is due a step after this one was due. A loop more than a
                        // step behind, or stepped by the clock, starts again from now instead of catching up.
                        next_tick = if stepping || now >= next_tick + TICK {
                            now + TICK
                        } else {
                            next_tick + TICK
                        };
                        queue.pump(PUMP_BUDGET);
                        continue;
                    }
                    // Sleeps until the next tick unless a call arrives first: an idle game answers at once.
                    queue.wait(next_tick - now);
                    queue.pump(PUMP_BUDGET);
                }
            })
            .map_err(DemoError::GameThread)?;
        Ok(GameLoop {
            stop,
            main_thread,
            thread: Some(thread),
        })
    }
}

/// The running game thread of [`DemoGame::run_loop`]; dropping it stops the thread and waits for it.
#[derive(Debug)]
pub struct GameLoop {
    stop: Arc<AtomicBool>,
    main_thread: MainThread,
    thread: Option<JoinHandle<()>>,
}

impl Drop for GameLoop {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.main_thread.wake();
        if let Some(thread) = self.thread.take() {
            if thread.join().is_err() {
                tracing::error!("the game thread panicked");
            }
        }
    }
}

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(test)]
mod tests {
    use gabp_types::ErrorCode;

    use super::*;
    use gabp_transport::Token;

    pub(super) fn server(game: &DemoGame) -> ModServer {
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
        assert!(caps.has_event(gabp_types::methods::TOOLS_CHANGED_CHANNEL));
        let resources: Vec<&str> = caps
            .resources
            .as_ref()
            .unwrap()
            .iter()
            .map(|u| u.as_str())
            .collect();
        assert_eq!(resources, [WORLD_URI, MOD_INFO_URI]);
    }

    struct Recorder(Mutex<Vec<(String, bool)>>);

    impl AttentionSink for Recorder {
        fn raise(&self, message: &str, blocking: bool) -> Result<String, CallError> {
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
