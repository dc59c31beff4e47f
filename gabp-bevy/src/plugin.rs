//! [`GabpPlugin`]: builds the mod from what the app registered and serves it.

use std::time::Duration;

use bevy_app::{App, First, Plugin};
use bevy_ecs::prelude::*;
use bevy_time::{Time, Virtual};
use gabp_session::ModServer;
use gabp_transport::ModSettings;

use crate::server::{pump, GabpServer, Pending};
use crate::{ecs, input, time};

/// Serves the app as a GABP mod: its tools ([`GabpAppExt`](crate::GabpAppExt)), its events, the ECS tools, and
/// time control when `bevy_time`'s `TimePlugin` is there.
#[derive(Debug, Clone)]
pub struct GabpPlugin {
    name: String,
    version: String,
    settings: Option<ModSettings>,
    budget: Duration,
    time_control: bool,
    ecs_tools: bool,
    input: bool,
}

impl GabpPlugin {
    /// A mod named `name` at `version`, with settings from the GABS environment or `bridge.json`
    /// (`ModSettings::for_game`), main-thread calls drained up to 2 ms a frame, and time control on.
    #[must_use]
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        GabpPlugin {
            name: name.into(),
            version: version.into(),
            settings: None,
            budget: Duration::from_millis(2),
            time_control: true,
            ecs_tools: true,
            input: true,
        }
    }

    /// Serves with these settings (endpoint, token) instead of the GABS environment and `bridge.json`.
    #[must_use]
    pub fn settings(mut self, settings: ModSettings) -> Self {
        self.settings = Some(settings);
        self
    }

    /// How long the game's calls may run each frame (a call that has started always finishes).
    #[must_use]
    pub fn budget(mut self, budget: Duration) -> Self {
        self.budget = budget;
        self
    }

    /// Whether bridges may press keys, type text and click (the `input` extension, SPEC/1.0 extensions.md
    /// §input): on by default; needs bevy_input's `InputPlugin`. Inputs become Bevy's own input messages.
    #[must_use]
    pub fn input(mut self, on: bool) -> Self {
        self.input = on;
        self
    }

    /// Whether the ECS tools are served (`ecs/query`, `ecs/get`, `ecs/mutate`, ...: on by default): they read
    /// and change any reflected component or resource of the world.
    #[must_use]
    pub fn ecs_tools(mut self, on: bool) -> Self {
        self.ecs_tools = on;
        self
    }

    /// Whether bridges may pause, resume and step the game (on by default; needs `TimePlugin`).
    #[must_use]
    pub fn time_control(mut self, on: bool) -> Self {
        self.time_control = on;
        self
    }
}

impl Plugin for GabpPlugin {
    fn build(&self, app: &mut App) {
        Pending::init(app.world_mut());
        if self.ecs_tools {
            for tool in ecs::tools() {
                Pending::add_tool(app.world_mut(), tool);
            }
        }
        app.add_systems(First, pump.after(bevy_time::TimeSystems));
    }

    fn finish(&self, app: &mut App) {
        let time_control = self.time_control && app.world().contains_resource::<Time<Virtual>>();
        if self.time_control && !time_control {
            tracing::warn!(
                "gabp-bevy: time control is off: add bevy_time's TimePlugin before GabpPlugin"
            );
        }
        let input = self.input && input::available(app.world());
        if self.input && !input {
            tracing::warn!(
                "gabp-bevy: input is off: add bevy_input's InputPlugin before GabpPlugin"
            );
        }
        let mut builder = Pending::take(app.world_mut())
            .into_builder(ModServer::builder().app(self.name.clone(), self.version.clone()))
            .time_control(time_control);
        if input {
            builder = builder.input(input::apply);
        }
        let settings = match self.settings.clone() {
            Some(settings) => Ok(settings),
            None => ModSettings::for_game(self.name.clone()),
        };
        match settings
            .map_err(|e| e.to_string())
            .and_then(|settings| GabpServer::start(builder, &settings, self.budget))
        {
            Ok(server) => {
                tracing::info!("gabp-bevy: serving GABP on {}", server.endpoint());
                app.insert_resource(server);
                if time_control {
                    time::add_systems(app);
                }
                if input {
                    input::add_systems(app);
                }
            }
            // A game keeps running without its agents' way in; the reason is logged, never a panic.
            Err(e) => tracing::error!("gabp-bevy: not serving GABP: {e}"),
        }
    }
}
