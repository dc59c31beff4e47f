//! [`GabpAppExt`]: game tools as one-shot systems, channels and events.

use bevy_app::App;
use bevy_ecs::message::Message;
use bevy_ecs::prelude::*;
use gabp_session::schemars::JsonSchema;
use gabp_session::server::{CallError, Tool};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::events;
use crate::server::Pending;

/// Registers a game's tools and events with the app's [`GabpPlugin`](crate::GabpPlugin), before or after the
/// plugin is added, before the app runs.
pub trait GabpAppExt {
    /// Serves `system` as tool `name`: it takes `In<Args>` (its arguments, checked against `Args`'s JSON
    /// Schema) and any system parameters, and returns the tool's result. It runs as a one-shot system on the
    /// app's thread, with the world.
    fn add_gabp_tool<Args, Out, M>(
        &mut self,
        name: &str,
        system: impl IntoSystem<In<Args>, Out, M> + 'static,
    ) -> &mut Self
    where
        Args: DeserializeOwned + JsonSchema + Send + 'static,
        Out: Serialize + JsonSchema + 'static;

    /// As [`GabpAppExt::add_gabp_tool`], for a tool that only reads (tagged `read-only`, so it answers
    /// while an attention item blocks), with a description for agents.
    fn add_gabp_read_only_tool<Args, Out, M>(
        &mut self,
        name: &str,
        description: &str,
        system: impl IntoSystem<In<Args>, Out, M> + 'static,
    ) -> &mut Self
    where
        Args: DeserializeOwned + JsonSchema + Send + 'static,
        Out: Serialize + JsonSchema + 'static;

    /// Serves a tool built with gabp-session (a description, tags, a timeout). A tool on the main thread
    /// gets `&mut World` as its state.
    fn add_gabp_session_tool(&mut self, tool: Tool) -> &mut Self;

    /// Declares event channel `channel`, for [`GabpServer::publish`](crate::GabpServer::publish).
    fn add_gabp_channel(&mut self, channel: &str) -> &mut Self;

    /// Forwards each message `M` written in the app as a GABP event on `channel` (its payload is `M` as
    /// JSON), at the end of each frame. Adds the message type if the app has not.
    fn add_gabp_event<M: Message + Serialize>(&mut self, channel: &str) -> &mut Self;
}

/// The tool serving `system`.
fn system_tool<Args, Out, M>(
    app: &mut App,
    name: &str,
    system: impl IntoSystem<In<Args>, Out, M> + 'static,
) -> Tool
where
    Args: DeserializeOwned + JsonSchema + Send + 'static,
    Out: Serialize + JsonSchema + 'static,
{
    let id = app.world_mut().register_system(system);
    let tool = name.to_owned();
    Tool::on_main_thread(name, move |world: &mut World, args: Args| {
        world
            .run_system_with(id, args)
            .map_err(|e| CallError::new(format!("{tool}: the system did not run: {e}")))
    })
}

impl GabpAppExt for App {
    fn add_gabp_tool<Args, Out, M>(
        &mut self,
        name: &str,
        system: impl IntoSystem<In<Args>, Out, M> + 'static,
    ) -> &mut Self
    where
        Args: DeserializeOwned + JsonSchema + Send + 'static,
        Out: Serialize + JsonSchema + 'static,
    {
        let tool = system_tool(self, name, system);
        self.add_gabp_session_tool(tool)
    }

    fn add_gabp_read_only_tool<Args, Out, M>(
        &mut self,
        name: &str,
        description: &str,
        system: impl IntoSystem<In<Args>, Out, M> + 'static,
    ) -> &mut Self
    where
        Args: DeserializeOwned + JsonSchema + Send + 'static,
        Out: Serialize + JsonSchema + 'static,
    {
        let tool = system_tool(self, name, system)
            .description(description)
            .tags(["read-only"]);
        self.add_gabp_session_tool(tool)
    }

    fn add_gabp_session_tool(&mut self, tool: Tool) -> &mut Self {
        Pending::add_tool(self.world_mut(), tool);
        self
    }

    fn add_gabp_channel(&mut self, channel: &str) -> &mut Self {
        Pending::add_channel(self.world_mut(), channel.to_owned());
        self
    }

    fn add_gabp_event<M: Message + Serialize>(&mut self, channel: &str) -> &mut Self {
        self.add_gabp_channel(channel);
        events::forward::<M>(self, channel.to_owned());
        self
    }
}
