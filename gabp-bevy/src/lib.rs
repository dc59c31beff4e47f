//! gabp-bevy: any Bevy game becomes a GABP mod with one plugin.
//!
//! ```no_run
//! use bevy_app::App;
//! use bevy_ecs::prelude::*;
//! use gabp_bevy::{GabpAppExt, GabpPlugin, GabpRunnerPlugin};
//! use gabp_bevy::schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Jump { height: f32 }
//! #[derive(Serialize, JsonSchema)]
//! struct Jumped { ok: bool }
//!
//! fn jump(In(args): In<Jump>) -> Jumped { Jumped { ok: args.height > 0.0 } }
//!
//! App::new()
//!     .add_plugins((bevy_time::TimePlugin, GabpRunnerPlugin::default()))
//!     .add_plugins(GabpPlugin::new("my-game", "1.0.0"))
//!     .add_gabp_tool("player/jump", jump)
//!     .run();
//! ```
//!
//! [`GabpPlugin`] serves GABP where the GABS environment or `bridge.json` says (else a free loopback port,
//! announced in `bridge.json`). Game tools are one-shot systems that take `In<Args>` and return their result
//! ([`GabpAppExt::add_gabp_tool`]); they run on the app's thread with the world, drained each frame up to a
//! budget. [`GabpRunnerPlugin`] is a headless runner that wakes at once when a call arrives, so an idle or
//! paused app answers without waiting for its next frame. Time control (SPEC/1.0 extensions.md §time-control)
//! drives `Time<Virtual>` and steps `FixedMain` exactly. ECS tools (`ecs/query`, `ecs/get`, `ecs/mutate`, ...)
//! read and change any reflected component or resource by its type path, with no game code.

mod ecs;
mod events;
mod input;
mod plugin;
mod runner;
mod server;
mod time;
mod tools;

pub use input::AgentCursor;
pub use plugin::GabpPlugin;
pub use runner::GabpRunnerPlugin;
pub use server::GabpServer;
pub use tools::GabpAppExt;

pub use gabp_session::schemars;
pub use gabp_session::server::CallError;
